package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exitCode waits for a scripted client and returns its exit code.
func (c *scriptedClient) exitCode(t *testing.T, name string) int {
	t.Helper()
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		}
		t.Fatalf("%s: %v", name, err)
	case <-time.After(90 * time.Second):
		t.Fatalf("%s still running after 90 s; output:\n%s", name, c.output())
	}
	return -1
}

// runScript runs one scripted client to its end and checks its exit code
// and that its output contains every want.
func runScript(t *testing.T, bin, dir, pin, script string, code int, want ...string) string {
	t.Helper()
	c := startClient(t, bin, dir, pin, script)
	got := c.exitCode(t, script)
	out := c.output()
	if got != code {
		t.Fatalf("script %q exited %d, want %d; output:\n%s", script, got, code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("script %q: no %q in output:\n%s", script, w, out)
		}
	}
	return out
}

var atRE = regexp.MustCompile(`Alice ([0-9.]+),([0-9.]+)`)

// TestProcessesMMOTwoClients is the MMO's first scenario with real processes: a
// server running the built-in mmo module (a plugin subprocess of the
// sparkhost binary), scripted `sparkhost client` processes registering,
// logging in, creating and entering characters, moving, seeing each other,
// greeting; refusals for a wrong password, a foreign character and a
// greeting from too far; and everything still there after a restart.
func TestProcessesMMOTwoClients(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	dataDir := filepath.Join(tmp, "data")
	rs := startServer(t, bin, dataDir, "--module", "mmo")
	addr := rs.addr.String()
	dirA, dirB := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	conn := func(name string) string { return "connect " + addr + " " + name + "; " }

	runScript(t, bin, dirA, rs.pin, conn("alice")+"mmo_session_register alice pw-alice", 0, "registered alice")
	runScript(t, bin, dirB, rs.pin, conn("bob")+"mmo_session_register Bob pw-bob", 0, "registered bob")
	runScript(t, bin, dirA, rs.pin, conn("mallory")+"mmo_session_login alice not-her-password", 1, "AuthFailed")
	runScript(t, bin, dirA, rs.pin, conn("alice")+"mmo_session_login alice pw-alice; mmo_session_create Alice; mmo_session_characters", 0,
		"logged in as alice", "created Alice", "characters: Alice (500.0,500.0)")
	runScript(t, bin, dirB, rs.pin, conn("bob")+"mmo_session_login bob pw-bob; mmo_session_create Bobby; mmo_session_enter Alice", 1,
		"created Bobby", "NotYourCharacter")

	a := startClient(t, bin, dirA, rs.pin, conn("alice")+`mmo_session_login alice pw-alice; mmo_session_enter Alice; `+
		`wait "mmo Bobby appeared" 30s; mmo_session_greet Bobby; mmo_session_move 1 0; sleep 3s; mmo_session_stop; `+
		`mmo_session_where; wait "mmo Bobby disappeared" 60s`)
	b := startClient(t, bin, dirB, rs.pin, conn("bob")+`mmo_session_login bob pw-bob; mmo_session_enter Bobby; `+
		`wait "mmo greeting: Alice greets Bobby" 30s; wait "mmo Alice moving from 500.0,500.0" 30s; sleep 4s; `+
		`mmo_session_nearby; mmo_session_greet Alice`)
	if code := b.exitCode(t, "bob"); code != 1 || !strings.Contains(b.output(), "TooFar") {
		t.Fatalf("bob: exit %d, want 1 with TooFar; output:\n%s", code, b.output())
	}
	m := atRE.FindStringSubmatch(b.output())
	if m == nil {
		t.Fatalf("bob did not list Alice nearby:\n%s", b.output())
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	if x < 520 || x > 560 || m[2] != "500.0" {
		t.Fatalf("bob saw Alice at %s,%s; she walked east for about 3 s at 10 units/s from 500,500:\n%s", m[1], m[2], b.output())
	}
	if code := a.exitCode(t, "alice"); code != 0 {
		t.Fatalf("alice: exit %d; output:\n%s", code, a.output())
	}
	where := regexp.MustCompile(`at ([0-9.]+),500\.0 heading 0\.00,0\.00`).FindStringSubmatch(a.output())
	if where == nil {
		t.Fatalf("alice's where:\n%s", a.output())
	}
	if acc := adminRun(t, bin, dataDir, "mmo_accounts"); !strings.HasPrefix(acc, "accounts 2") {
		t.Fatalf("mmo_accounts: %q", acc)
	}

	// Restart the server: accounts, characters and positions persist.
	rs.cmd.Process.Signal(syscall.SIGTERM)
	if err := rs.cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	rs = startServer(t, bin, dataDir, "--module", "mmo")
	addr = rs.addr.String()
	conn = func(name string) string { return "connect " + addr + " " + name + "; " }
	runScript(t, bin, dirA, rs.pin, conn("alice")+"mmo_session_login alice pw-alice; mmo_session_characters; mmo_session_enter Alice; mmo_session_where", 0,
		"characters: Alice ("+where[1]+",500.0)", "at "+where[1]+",500.0")
	runScript(t, bin, dirB, rs.pin, conn("bob")+"mmo_session_login bob pw-bob; mmo_session_characters", 0, "characters: Bobby (500.0,500.0)")
}
