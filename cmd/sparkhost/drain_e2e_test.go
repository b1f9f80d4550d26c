package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// drainConfig is a server under Agones (the stand-in sidecar on port)
// whose SIGTERM drains for at most 3 s, with a match that never ends by
// itself.
func drainConfig(t *testing.T, dir, port string) string {
	t.Helper()
	path := filepath.Join(dir, "agones.toml")
	text := fmt.Sprintf("[match]\nwarmup_seconds = 0\ntime_limit_minutes = 60\nscore_limit = 0\n[agones]\nenabled = true\nsdk_port = %s\nhealth_seconds = 0.5\ndrain_seconds = 3\n", port)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProcessesAgonesSIGTERMDrains: `sparkhost run` under Agones (a
// stand-in sidecar) gets SIGTERM with alice in a match: it does not stop
// at once — alice stays, a new player is refused ServerDraining, status
// says it drains, Agones gets the draining label — and at
// agones.drain_seconds lets alice go with ServerDraining, calls Shutdown
// and exits 0. A second run gets two SIGTERMs: the second stops it at once.
func TestProcessesAgonesSIGTERMDrains(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	sc := newSidecarStandIn(t)
	u, _ := url.Parse(sc.url)
	conf := drainConfig(t, tmp, u.Port())
	dataDir := filepath.Join(tmp, "data")
	rs := startServer(t, bin, dataDir, "--config", conf)
	addr := rs.addr.String()

	alice := startClient(t, bin, filepath.Join(tmp, "alice"), rs.pin, `connect `+addr+` alice; wait "disconnected: ServerDraining" 60s`)
	alice.waitLine(t, "connected to "+addr+" as alice")
	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st := adminRun(t, bin, dataDir, "status"); strings.Contains(st, "draining for") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("status does not say draining 10 s after SIGTERM")
		}
	}
	bob := startClient(t, bin, filepath.Join(tmp, "bob"), rs.pin, `connect `+addr+` bob`)
	if code := bob.exitCode(t, "bob"); code == 0 || !strings.Contains(bob.output(), "ServerDraining") {
		t.Errorf("bob while draining: exit %d\n%s", code, bob.output())
	}
	if strings.Contains(alice.output(), "disconnected") {
		t.Fatalf("alice was dropped at SIGTERM:\n%s", alice.output())
	}
	alice.waitExit(t, "alice")
	if took := time.Since(signalled); took < 2*time.Second {
		t.Errorf("alice let go %v after SIGTERM; the drain lasts 3 s and her match was in progress", took)
	}
	if !strings.Contains(alice.output(), "the server is restarting now") {
		t.Errorf("alice:\n%s", alice.output())
	}
	if err := rs.cmd.Wait(); err != nil {
		t.Fatalf("server exit after its drain: %v, want 0", err)
	}
	calls := sc.snapshot()
	for _, want := range []string{`PUT /metadata/label {"key":"draining","value":"true"}`, "POST /shutdown {}"} {
		if !slices.Contains(calls, want) {
			t.Errorf("no %s in the sidecar's calls %q", want, calls)
		}
	}

	rs = startServer(t, bin, dataDir, "--config", conf)
	addr = rs.addr.String()
	carol := startClient(t, bin, filepath.Join(tmp, "carol"), rs.pin, `connect `+addr+` carol; wait "disconnected: ServerShutdown" 60s`)
	carol.waitLine(t, "connected to "+addr+" as carol")
	rs.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	rs.cmd.Process.Signal(syscall.SIGTERM)
	stopped := make(chan error, 1)
	go func() { stopped <- rs.cmd.Wait() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("exit after two SIGTERMs: %v", err)
		}
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("a second SIGTERM did not stop the draining server at once")
	}
	carol.waitExit(t, "carol")
}
