package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shortTempDir keeps the admin socket path under the Unix limit (~108 bytes).
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// scriptedClient is a `sparkhost client --exec` process whose output is
// collected line by line.
type scriptedClient struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	lines chan string
	done  chan error
}

func startClient(t *testing.T, bin, dataDir, pin, script string) *scriptedClient {
	t.Helper()
	c := &scriptedClient{lines: make(chan string, 256), done: make(chan error, 1)}
	c.cmd = exec.Command(bin, "client", "--data-dir", dataDir, "--pin", pin, "--exec", script)
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = c.cmd.Stdout
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
		c.done <- c.cmd.Wait()
	}()
	return c
}

func (c *scriptedClient) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitLine waits for an output line containing want.
func (c *scriptedClient) waitLine(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-c.lines:
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line %q within 30 s; output:\n%s", want, c.output())
		}
	}
}

// waitExit waits for the process and requires exit code 0.
func (c *scriptedClient) waitExit(t *testing.T, name string) {
	t.Helper()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("%s exited with %v; output:\n%s", name, err, c.output())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s still running after 60 s; output:\n%s", name, c.output())
	}
}

func adminRun(t *testing.T, bin, dataDir string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"admin", "--data-dir", dataDir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("sparkhost admin %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestProcessesChatAdminKickShutdown is the operator's view end to end: a
// real `sparkhost run`, two scripted `sparkhost client` processes that chat,
// `sparkhost admin players` and `kick`, and SIGTERM.
func TestProcessesChatAdminKickShutdown(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	dataDir := filepath.Join(tmp, "data")
	rs := startServer(t, bin, dataDir)
	addr := rs.addr.String()

	alice := startClient(t, bin, filepath.Join(tmp, "alice"), rs.pin,
		`connect `+addr+` alice; wait "chat bob: hello alice" 30s; say hi bob; wait "disconnected: ServerShutdown" 60s`)
	alice.waitLine(t, "connected to "+addr+" as alice")
	bob := startClient(t, bin, filepath.Join(tmp, "bob"), rs.pin,
		`connect `+addr+` bob; say hello alice; wait "chat alice: hi bob" 30s; wait "disconnected: Kicked \\(behave\\)" 60s`)
	bob.waitLine(t, "chat alice: hi bob")

	players := adminRun(t, bin, dataDir, "players")
	if !strings.Contains(players, "alice") || !strings.Contains(players, "bob") {
		t.Fatalf("admin players:\n%s", players)
	}
	adminRun(t, bin, dataDir, "kick", "bob", "behave")
	bob.waitExit(t, "bob")

	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	alice.waitExit(t, "alice")
	if err := rs.cmd.Wait(); err != nil {
		t.Errorf("server exit after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "admin.sock")); !os.IsNotExist(err) {
		t.Errorf("admin socket left behind after shutdown (%v)", err)
	}
}

// TestProcessesCloseDeliversFirst is the README's own pattern: a script
// that says something and quits at once delivers what it said, and the
// server's last words before a kick reach the kicked player
// (docs/protocol.md §6: closing delivers first).
func TestProcessesCloseDeliversFirst(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	dataDir := filepath.Join(tmp, "data")
	rs := startServer(t, bin, dataDir)
	addr := rs.addr.String()

	bob := startClient(t, bin, filepath.Join(tmp, "bob"), rs.pin,
		`connect `+addr+` bob; wait "chat alice: hi" 30s; wait "last words" 30s; wait "disconnected: Kicked" 30s`)
	bob.waitLine(t, "connected to "+addr+" as bob")
	alice := startClient(t, bin, filepath.Join(tmp, "alice"), rs.pin, `connect `+addr+` alice; say hi; quit`)
	alice.waitExit(t, "alice")
	bob.waitLine(t, "chat alice: hi")

	adminRun(t, bin, dataDir, "say", "last words")
	adminRun(t, bin, dataDir, "kick", "bob", "closing time")
	bob.waitExit(t, "bob")
	out := bob.output()
	if i, j := strings.Index(out, "last words"), strings.Index(out, "disconnected: Kicked"); i < 0 || j < i {
		t.Fatalf("bob's output does not show the last words before the kick:\n%s", out)
	}
}
