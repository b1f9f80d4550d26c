package trust

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// keyN returns a distinct test key.
func keyN(n byte) [32]byte { return sha256.Sum256([]byte{n}) }

func TestKnownHostsTrustOnFirstUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client", "known_hosts") // dir missing too
	k, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatalf("missing file: %v", err)
	}
	const host = "game.example:27015"
	good, evil := keyN(1), keyN(2)

	if v, err := k.Check(host, good); v != Unknown || err != nil {
		t.Fatalf("first contact: %v, %v; want Unknown", v, err)
	}
	if err := k.Record(host, good); err != nil {
		t.Fatal(err)
	}
	want := host + " " + Pin(good[:]) + "\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("file = %q, want %q", got, want)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("known_hosts mode %v, %v; want 0600", fi.Mode(), err)
		}
	}
	if v, err := k.Check(host, good); v != Known || err != nil {
		t.Fatalf("same key: %v, %v; want Known", v, err)
	}
	if names, _ := os.ReadDir(filepath.Dir(path)); len(names) != 1 {
		t.Fatalf("directory holds %d entries, want only known_hosts (no temp file left)", len(names))
	}

	// A new process sees the same thing.
	k2, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := k2.Check(host, good); v != Known || err != nil {
		t.Fatalf("reopened, same key: %v, %v", v, err)
	}

	// A changed key is refused, and Record will not write it.
	v, err := k2.Check(host, evil)
	if v != Mismatch || !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("changed key: %v, %v; want Mismatch", v, err)
	}
	wantMsg := "trust: server identity mismatch for game.example:27015: " + path + ":1 records " + Pin(good[:]) +
		" but the server presented " + Pin(evil[:]) + ". Someone may be intercepting the connection, or the server's" +
		" identity was replaced; nothing was sent. If the server's operator confirms the new pin, delete line 1 of " +
		path + " and connect again."
	if err.Error() != wantMsg {
		t.Errorf("mismatch message\n got %s\nwant %s", err, wantMsg)
	}
	var me *MismatchError
	if !errors.As(err, &me) || me.Line != 1 || me.Path != path || me.Recorded != good || me.Presented != evil {
		t.Errorf("MismatchError fields: %+v", me)
	}
	if err := k2.Record(host, evil); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Record of a changed key: %v; want ErrIdentityMismatch", err)
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("file changed by a refused Record: %q", got)
	}
	// Recording a known key again changes nothing either.
	if err := k2.Record(host, good); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("file changed by a repeated Record: %q", got)
	}
}

func TestKnownHostsKeepsCommentsAndAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known_hosts")
	a, b := keyN(1), keyN(2)
	orig := "# sparkhost known hosts\r\n\n" +
		"Alpha.Example:27015 " + Pin(a[:]) + "  # the alpha server\r\n" +
		"   \t\n" +
		"[::1]:27015 " + Pin(b[:]) // no final newline
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		key  [32]byte
		want Verdict
	}{
		{"alpha.example:27015", a, Known}, // host names compare case-insensitively
		{"ALPHA.EXAMPLE:27015", a, Known},
		{"alpha.example:027015", a, Known}, // ports compare as numbers
		{"alpha.example:27016", a, Unknown},
		{"[::1]:27015", b, Known},
		{"[::1]:27015", a, Mismatch},
		{"beta.example:27015", b, Unknown},
	} {
		if v, _ := k.Check(tc.host, tc.key); v != tc.want {
			t.Errorf("Check(%s, key %x…) = %v, want %v", tc.host, tc.key[:2], v, tc.want)
		}
	}
	c := keyN(3)
	if err := k.Record("Beta.Example:27015", c); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := orig + "\nbeta.example:27015 " + Pin(c[:]) + "\n"; string(got) != want {
		t.Fatalf("after Record:\n%q\nwant\n%q", got, want)
	}
	k2, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := k2.Check("beta.example:27015", c); v != Known || err != nil {
		t.Fatalf("recorded host after reopen: %v, %v", v, err)
	}
	v, err := k2.Check("beta.example:27015", a)
	var me *MismatchError
	if v != Mismatch || !errors.As(err, &me) || me.Line != 6 {
		t.Fatalf("recorded host, other key: %v, %v; want Mismatch at line 6", v, err)
	}
}

// Record re-reads the file: a line another process added meanwhile is kept,
// and a conflicting one wins over this process's stale view.
func TestKnownHostsRecordSeesOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known_hosts")
	k, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := keyN(1), keyN(2)
	other := "x.example:1 " + Pin(a[:]) + "\n"
	if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.Record("x.example:1", b); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Record over another writer's key: %v", err)
	}
	if err := k.Record("y.example:2", b); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != other+"y.example:2 "+Pin(b[:])+"\n" {
		t.Fatalf("file %q", got)
	}
}

func TestKnownHostsDuplicateEntriesFailClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known_hosts")
	a, b := keyN(1), keyN(2)
	content := "h.example:5 " + Pin(a[:]) + "\nh.example:5 " + Pin(b[:]) + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := k.Check("h.example:5", a); v != Mismatch {
		t.Fatalf("key a against conflicting lines: %v", v)
	}
	if v, _ := k.Check("h.example:5", b); v != Mismatch {
		t.Fatalf("key b against conflicting lines: %v", v)
	}
}

func TestKnownHostsSyntaxErrors(t *testing.T) {
	a := keyN(1)
	pin := Pin(a[:])
	cases := []struct{ name, content, why string }{
		{"one field", "# c\nh.example:1\n", `2: 1 fields, want 2`},
		{"three fields", "h.example:1 " + pin + " extra\n", `1: 3 fields, want 2`},
		{"no port", "h.example " + pin + "\n", `1: bad host:port "h.example": want host:port, e.g. game.example:27015 or [::1]:27015`},
		{"port zero", "h.example:0 " + pin + "\n", `1: bad host:port "h.example:0": port must be 1..65535`},
		{"port too big", "h.example:65536 " + pin + "\n", `1: bad host:port "h.example:65536": port must be 1..65535`},
		{"bad pin", "\n\nh.example:1 ed25519:abc\n", `3: bad pin "ed25519:abc": key is 3 characters, want 43; a pin is "ed25519:" followed by 43 base64url characters`},
		{"ssh style", "h.example:1 ssh-ed25519 " + pin[8:] + "\n", `1: 3 fields, want 2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "known_hosts")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenKnownHosts(path)
			if !errors.Is(err, ErrKnownHostsSyntax) {
				t.Fatalf("%v; want ErrKnownHostsSyntax", err)
			}
			want := "trust: known_hosts syntax error: " + path + ":" + tc.why +
				`; each line must be "host:port ed25519:<key>"; fix or delete that line`
			if err.Error() != want {
				t.Errorf("message\n got %s\nwant %s", err, want)
			}
		})
	}
}

func TestKnownHostsBadHostPortArgument(t *testing.T) {
	k, err := OpenKnownHosts(filepath.Join(t.TempDir(), "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, hp := range []string{"", "game.example", ":27015", "::1:27015", "h.example:-1", "h.example:http", "a b:1"} {
		if v, err := k.Check(hp, keyN(1)); v != 0 || !errors.Is(err, ErrBadHostPort) {
			t.Errorf("Check(%q) = %v, %v; want ErrBadHostPort", hp, v, err)
		}
		if err := k.Record(hp, keyN(1)); !errors.Is(err, ErrBadHostPort) {
			t.Errorf("Record(%q) = %v; want ErrBadHostPort", hp, err)
		}
	}
	if _, err := os.Stat(k.Path()); !os.IsNotExist(err) {
		t.Error("a refused Record created the file")
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{Known: "Known", Unknown: "Unknown", Mismatch: "Mismatch", 0: "Verdict(?)"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q", v, v.String())
		}
	}
}
