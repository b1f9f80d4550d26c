package doctables_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/hkdf"
)

// exampleLine is a "name = hex" line of a code block in protocol.md's
// worked example, with an optional remark after the value.
var exampleLine = regexp.MustCompile(`^([a-z0-9_]+)\s*=\s*([0-9a-f]+)(\s.*)?$`)

// TestWorkedExampleMatchesTheVectors holds every value of protocol.md's
// Appendix A to the test vectors (or, for the values the vector files do
// not list, to the derivation the appendix states), so the example a client
// author works through cannot drift from what the server computes.
func TestWorkedExampleMatchesTheVectors(t *testing.T) {
	want := vectorValues(t)
	lines := appendixLines(t)
	checked := 0
	for name, v := range lines {
		w, ok := want[name]
		if !ok {
			t.Errorf("Appendix A: %s is neither a vector nor derived by this test", name)
			continue
		}
		if v != w {
			t.Errorf("Appendix A: %s =\n %s\nthe vectors say\n %s", name, v, w)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("Appendix A: only %d values checked; is the appendix there?", checked)
	}
}

// vectorValues returns the hex values of both v4 vector files (and their
// inputs) by name, plus the public keys and the epoch-1 key the appendix
// derives from them.
func vectorValues(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"vectors-v4.json", "vectors-v4-datagram.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "netstack", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		inputs, _ := m["inputs"].(map[string]any)
		for _, src := range []map[string]any{m, inputs} {
			for k, v := range src {
				switch v := v.(type) {
				case string:
					out[k] = v
				case float64:
					out[k] = strconv.FormatFloat(v, 'f', -1, 64)
				}
			}
		}
	}
	out["cookie_mac"] = strings.TrimPrefix(out["cookie"], "07000000")
	out["client_x25519_public"] = x25519Public(t, out["client_x25519_secret"])
	out["server_x25519_public"] = x25519Public(t, out["server_x25519_secret"])
	seed := mustHex(t, out["server_ed25519_seed"])
	out["server_identity_public"] = hex.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	k1 := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.Expand(sha256.New, mustHex(t, out["k_c2s_0"]), []byte("spark-net-100 ratchet")), k1); err != nil {
		t.Fatal(err)
	}
	out["k_c2s_1"] = hex.EncodeToString(k1)
	return out
}

func x25519Public(t *testing.T, secretHex string) string {
	t.Helper()
	pub, err := curve25519.X25519(mustHex(t, secretHex), curve25519.Basepoint)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(pub)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendixLines returns the "name = hex" lines of Appendix A's code blocks.
func appendixLines(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	in, code := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Appendix A.")
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "```") {
			code = !code
			continue
		}
		if m := exampleLine.FindStringSubmatch(line); code && m != nil {
			out[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
