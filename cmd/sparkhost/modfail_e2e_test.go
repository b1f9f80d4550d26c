package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/netstack/trust"
)

// opsServer is a `sparkhost run` process with its ops listener, and
// everything it printed before serving.
type opsServer struct {
	addr, pin, ops string
	printed        string
}

// startOpsServer runs `sparkhost run` with args and env added to the
// test's environment, and reads the game address, the pin and the ops
// listener's address from its output.
func startOpsServer(t *testing.T, bin string, env []string, args ...string) *opsServer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "SPARK_NETWORK_BIND_ADDRESS="), env...)
	var stderr syncbuf.Buffer // what it says when it does not start
	cmd.Stderr = &stderr
	if os.Getenv("SPARK_TEST_SERVER_LOG") != "" {
		cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &opsServer{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	for s.ops == "" || s.addr == "" || s.pin == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("sparkhost %v exited before serving; it printed:\n%s%s", args, s.printed, lastLines(stderr.String(), 5))
			}
			s.printed += l + "\n"
			if a, ok := strings.CutPrefix(l, "sparkhost listening on "); ok {
				s.addr = a
			}
			if p, ok := strings.CutPrefix(l, "server identity pin: "); ok {
				s.pin = p
			}
			if u, ok := strings.CutPrefix(l, "status page, metrics and probes on http://"); ok {
				s.ops = loopbackTo(strings.TrimSuffix(u, "/"))
			}
		case <-deadline:
			t.Fatalf("sparkhost %v did not print its addresses in 60 s; it printed:\n%s", args, s.printed)
		}
	}
	go func() {
		for l := range lines {
			_ = l
		}
	}()
	return s
}

// loopbackTo is the address to reach a listener bound to addr from this
// host: 127.0.0.1 for a wildcard bind (0.0.0.0, ::), which is printed as
// bound; tests only ever send to loopback.
func loopbackTo(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// lastLines is the last n lines of a log.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// probe answers a GET on the ops listener: status code and body.
func probe(t *testing.T, ops, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + ops + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// waitProbe waits until path answers code with a body that contains want
// (after the first ticks and the modules' first publication), or fails
// with the last answer.
func waitProbe(t *testing.T, ops, path string, code int, want string) string {
	t.Helper()
	var got int
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, body = probe(t, ops, path); got == code && strings.Contains(body, want) {
			return body
		}
	}
	t.Errorf("%s answered %d %q, want %d and %q", path, got, body, code, want)
	return body
}

// writeModuleConfig writes the mmo module's config.toml in dataDir.
func writeModuleConfig(t *testing.T, dataDir, text string) string {
	t.Helper()
	dir := filepath.Join(dataDir, "modules", "mmo")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// assertModuleFailed checks every signal of a server whose mmo module did
// not start: `module list` and `module info` say failed with the cause,
// /readyz is 503 naming it, the metrics' state is failed, and a player's
// request is refused at once with a line that says why, instead of
// waiting for an answer that never comes.
func assertModuleFailed(t *testing.T, bin, dataDir string, s *opsServer, cause string) {
	t.Helper()
	if !strings.Contains(s.printed, "module mmo failed to load: ") || !strings.Contains(s.printed, cause) {
		t.Errorf("run did not say the module failed to start (%q); it printed:\n%s", cause, s.printed)
	}
	if body := waitProbe(t, s.ops, "/readyz", http.StatusServiceUnavailable, "module mmo is failed"); !strings.Contains(body, cause) {
		t.Errorf("/readyz: %q, want %q", body, cause)
	}
	if code, _ := probe(t, s.ops, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d: the server itself is alive", code)
	}
	if out := adminRun(t, bin, dataDir, "module", "list"); !strings.Contains(out, "mmo") || !strings.Contains(out, " failed ") {
		t.Errorf("module list: %q", out)
	}
	if out := adminRun(t, bin, dataDir, "module", "info", "mmo"); !strings.Contains(out, "state failed") || !strings.Contains(out, cause) {
		t.Errorf("module info mmo: %q", out)
	}
	m := scrapeValues(t, "http://"+s.ops+"/metrics")
	if m["sparkhost_module_state{module=mmo,state=failed}"] != 1 || m["sparkhost_module_state{module=mmo,state=running}"] != 0 {
		t.Errorf("sparkhost_module_state of mmo: failed %v running %v",
			m["sparkhost_module_state{module=mmo,state=failed}"], m["sparkhost_module_state{module=mmo,state=running}"])
	}
	// The session's own timeout is 10 s; a refusal is an answer, the
	// timeout's "no answer" line is not.
	out := runScript(t, bin, filepath.Join(dataDir, "..", "client"), s.pin, "connect "+s.addr+" alice; mmo_session_register alice pw-alice", 1)
	if !strings.Contains(out, "the server refused Register") || strings.Contains(out, "no answer") {
		t.Errorf("a player's request to the failed module: %s", out)
	}
}

// TestModuleThatDoesNotStartIsFailed: the built-in mmo module (a plugin
// process of the sparkhost binary, serving rooms) whose config file has an
// unknown key, or whose world key is not the world's, is failed in every
// signal, and `sparkhost check` names the file, the line and the key.
func TestModuleThatDoesNotStartIsFailed(t *testing.T) {
	bin := buildBinary(t)
	opsCfg := func(t *testing.T, dir string) string {
		path := filepath.Join(dir, "ops.toml")
		if err := os.WriteFile(path, []byte("[ops]\nlisten = \"127.0.0.1:0\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("unknown config key", func(t *testing.T) {
		tmp := shortTempDir(t)
		dataDir := filepath.Join(tmp, "data")
		path := writeModuleConfig(t, dataDir, "iterations = 4096\n\n# a typo\nspeeed = 5\n")
		code, out, errs := runBinary(t, bin, "check", "--data-dir", dataDir, "--module", "mmo")
		want := path + ":4: unknown key speeed"
		if code != 1 || !strings.Contains(errs, want) || strings.Contains(out, "check passed") {
			t.Fatalf("check: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errs, want)
		}
		s := startOpsServer(t, bin, nil, "run", "--config", opsCfg(t, tmp), "--port", "0", "--data-dir", dataDir, "--module", "mmo")
		assertModuleFailed(t, bin, dataDir, s, want)

		// Fixed, `module load mmo` starts it and everything says so.
		writeModuleConfig(t, dataDir, "iterations = 4096\nspeed = 5\n")
		if out := adminRun(t, bin, dataDir, "module", "load", "mmo"); !strings.Contains(out, "loaded mmo") {
			t.Fatalf("module load mmo: %q", out)
		}
		waitProbe(t, s.ops, "/readyz", http.StatusOK, "ready: ")
		if out := adminRun(t, bin, dataDir, "module", "list"); strings.Contains(out, "failed") || strings.Count(out, "\n") > 1 {
			t.Errorf("module list after module load: %q", out)
		}
	})
	t.Run("wrong world key", func(t *testing.T) {
		tmp := shortTempDir(t)
		dataDir := filepath.Join(tmp, "data")
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		world := func(key string) string {
			return fmt.Sprintf("iterations = 4096\n[world]\narea = \"west\"\nkey_file = %q\n[[world.areas]]\nname = \"west\"\nbounds = [0, 0, 1000, 1000]\naddress = \"127.0.0.1:27015\"\npin = %q\n",
				key, trust.Pin(pub))
		}
		writeModuleConfig(t, dataDir, world("world.key"))
		// The first start records the world key in the database.
		if code, out, errs := runBinary(t, bin, "check", "--data-dir", dataDir, "--module", "mmo"); code != 0 || !strings.Contains(out, "check passed") {
			t.Fatalf("check of the first area server: exit %d %q %q", code, out, errs)
		}
		other := filepath.Join(dataDir, "modules", "mmo", "other.key")
		if code, out, errs := runBinary(t, bin, "mmo", "world-key", other); code != 0 {
			t.Fatalf("mmo world-key: exit %d %q %q", code, out, errs)
		}
		writeModuleConfig(t, dataDir, world("other.key"))
		cause := "the world key " + other + " is not the key of the world"
		if code, out, errs := runBinary(t, bin, "check", "--data-dir", dataDir, "--module", "mmo"); code != 1 || !strings.Contains(errs, cause) {
			t.Fatalf("check with another world key: exit %d %q %q; want exit 1 and %q", code, out, errs, cause)
		}
		s := startOpsServer(t, bin, nil, "run", "--config", opsCfg(t, tmp), "--port", "0", "--data-dir", dataDir, "--module", "mmo")
		assertModuleFailed(t, bin, dataDir, s, cause)
	})
}
