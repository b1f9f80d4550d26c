package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal's master and slave.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// ptyClient is a `sparkhost client` process on a pseudo-terminal: what it
// prints is the screen; keys are written to the master.
type ptyClient struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	screen bytes.Buffer
}

func startPTYClient(t *testing.T, bin string, args ...string) *ptyClient {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	p := &ptyClient{master: master}
	p.cmd = exec.Command(bin, append([]string{"client"}, args...)...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

func (p *ptyClient) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen.String()
}

// waitN waits until want is on the screen n times.
func (p *ptyClient) waitN(t *testing.T, want string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Count(p.text(), want) >= n {
			return
		}
	}
	t.Fatalf("no %q (×%d) on the terminal:\n%q", want, n, p.text())
}

func (p *ptyClient) wait(t *testing.T, want string) { t.Helper(); p.waitN(t, want, 1) }

// waitPrompt waits until the terminal ends with prompt: the console is
// reading a line again, in raw mode (keys typed before that would be
// echoed and read by the terminal's cooked mode, not the line editor).
func (p *ptyClient) waitPrompt(t *testing.T, prompt string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.HasSuffix(p.text(), prompt) {
			return
		}
	}
	t.Fatalf("the terminal does not end with the prompt %q:\n%q", prompt, p.text())
}

// keys types raw keys (no newline added).
func (p *ptyClient) keys(s string) { p.master.WriteString(s) }

// exit waits for the process to end and returns its exit code.
func (p *ptyClient) exit(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("client did not end; screen:\n%q", p.text())
	}
	return -1
}

// TestConsoleLineEditingAndHistory: at a terminal the console edits the
// line (arrow keys move the cursor, typing inserts there) and recalls
// earlier lines with arrow-up; Ctrl-C discards the line being typed and
// interrupts a running command, never the console; Ctrl-D at an empty
// prompt leaves.
func TestConsoleLineEditingAndHistory(t *testing.T) {
	bin := buildBinary(t)
	p := startPTYClient(t, bin, "--data-dir", filepath.Join(shortTempDir(t), "c"), "--pin", "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	p.waitPrompt(t, "> ")
	p.keys("status\r")
	p.waitN(t, "status: disconnected", 1)
	p.waitPrompt(t, "> ")
	p.keys("\x1b[A\r") // arrow-up: the last line again
	p.waitN(t, "status: disconnected", 2)
	p.waitPrompt(t, "> ")
	p.keys("sttus\x1b[D\x1b[D\x1b[Da\r") // three left, insert the missing a
	p.waitN(t, "status: disconnected", 3)
	p.waitPrompt(t, "> ")
	p.keys("bogus words\x03") // Ctrl-C: the line is discarded, not run
	p.wait(t, "line discarded")
	p.waitPrompt(t, "> ")
	p.keys("wait never 1m\r")
	time.Sleep(300 * time.Millisecond) // the wait is running (cooked mode)
	p.keys("\x03")
	p.wait(t, "error: wait: interrupted")
	p.waitPrompt(t, "> ")
	p.keys("status\r")
	p.waitN(t, "status: disconnected", 4)
	p.waitPrompt(t, "> ")
	p.keys("\x04") // Ctrl-D at an empty prompt
	p.exit(t)
	if strings.Contains(p.text(), "bogus") && strings.Contains(p.text(), `unknown command "bogus"`) {
		t.Errorf("the discarded line was run:\n%q", p.text())
	}
	if strings.Contains(p.text(), "^[[") || strings.Contains(p.text(), "unknown command") {
		t.Errorf("arrow keys reached the command line as text:\n%q", p.text())
	}
}

// TestPasswordPromptCtrlCCancelsTheCommand: Ctrl-C at a password prompt
// cancels that command (mmo_session_login), not the console, and nothing
// typed there is ever shown; the next command runs.
func TestPasswordPromptCtrlCCancelsTheCommand(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", "mmo")
	p := startPTYClient(t, bin, "--data-dir", filepath.Join(tmp, "c"), "--pin", rs.pin)
	p.keys("connect " + rs.addr.String() + " alice\r")
	p.wait(t, "connected to")
	p.waitPrompt(t, "> ")
	p.keys("mmo_session_login alice\r")
	p.waitPrompt(t, "password for alice: ")
	p.keys("hunter2-part\x03")
	p.wait(t, "error: mmo_session_login: cancelled")
	p.waitPrompt(t, "> ")
	p.keys("status\r")
	p.wait(t, "status: connected to")
	p.waitPrompt(t, "> ")
	p.keys("mmo_session_register alice\r")
	// Not a count of prompts: a notice that arrives while the login's
	// prompt is up redraws it, so it may be on the screen twice already.
	p.waitPrompt(t, "password for alice: ")
	p.keys("right-one\r")
	p.wait(t, "registered alice")
	p.keys("quit\r")
	p.exit(t)
	if strings.Contains(p.text(), "hunter2") || strings.Contains(p.text(), "right-one") {
		t.Errorf("a password was shown:\n%q", p.text())
	}
}

// TestPasswordPromptWithoutEcho: at an interactive terminal,
// `mmo_session_register alice` without a password asks for it with echo
// off; the password never appears on the terminal, and the account is made.
func TestPasswordPromptWithoutEcho(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", "mmo")
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(bin, "client", "--data-dir", filepath.Join(tmp, "c"), "--pin", rs.pin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitScreenN := func(want string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			ok := strings.Count(screen.String(), want) >= n
			mu.Unlock()
			if ok {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no %q (×%d) on the terminal:\n%s", want, n, screen.String())
	}
	waitScreen := func(want string) { t.Helper(); waitScreenN(want, 1) }
	type_ := func(line string) { master.WriteString(line + "\n") }

	type_("connect " + rs.addr.String() + " alice")
	waitScreen("connected to")
	type_("mmo_session_register alice")
	waitScreen("password for alice: ")
	type_("hunter2-secret")
	waitScreen("registered alice")
	type_("mmo_session_login alice")
	waitScreenN("password for alice: ", 2)
	type_("hunter2-secret")
	waitScreen("logged in as alice")
	type_("quit")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("client: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("client did not quit")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(screen.String(), "hunter2") {
		t.Fatalf("the password was echoed:\n%s", screen.String())
	}
}

// TestRoomPasswordPrompt: room_join on a room with a password, without
// the password, asks for it at the terminal without echo; Ctrl-C there
// cancels that room_join only; the right password joins. In a script the
// command says to give the password instead.
func TestRoomPasswordPrompt(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--rooms", "--mode", "deathmatch")
	addr := rs.addr.String()
	owner := startClient(t, bin, filepath.Join(tmp, "owner"), rs.pin,
		`connect `+addr+` ann; room_create secret deathmatch 4 s3cret-pw; wait 'room [0-9]+: bob\([0-9]+\) joined' 60s`)
	owner.waitLine(t, "room result: RoomCreate OK room ")
	id := regexp.MustCompile(`RoomCreate OK room ([0-9]+)`).FindStringSubmatch(owner.output())[1]

	script := startClient(t, bin, filepath.Join(tmp, "script"), rs.pin, `connect `+addr+` cy; rooms; room_join `+id)
	script.waitLine(t, "room_join: room "+id+" has a password; give it: room_join "+id+" PASSWORD")

	p := startPTYClient(t, bin, "--data-dir", filepath.Join(tmp, "bob"), "--pin", rs.pin)
	p.keys("connect " + addr + " bob\r")
	p.wait(t, "connected to")
	p.keys("rooms\r")
	p.wait(t, `"secret" mode deathmatch`)
	p.keys("room_join " + id + "\r")
	p.wait(t, "password for room "+id+": ")
	p.keys("s3cr\x03")
	p.wait(t, "error: room_join: cancelled")
	p.keys("room_join " + id + "\r")
	p.waitN(t, "password for room "+id+": ", 2)
	p.keys("s3cret-pw\r")
	p.wait(t, "room result: RoomJoin OK room "+id)
	p.keys("quit\r")
	p.exit(t)
	owner.waitExit(t, "owner")
	if strings.Contains(p.text(), "s3cr") {
		t.Errorf("the password was shown:\n%q", p.text())
	}
}

// TestServerConsoleLineEditing: `sparkhost run` with its stdin on a
// terminal reads admin commands with line editing and history (arrow-up
// runs the last command again) behind a prompt; Ctrl-C still stops the
// server cleanly.
func TestServerConsoleLineEditing(t *testing.T) {
	bin := buildBinary(t)
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(bin, "run", "--port", "0", "--bind", "127.0.0.1", "--data-dir", filepath.Join(shortTempDir(t), "data"))
	cmd.Env = append(os.Environ(), "SPARK_NETWORK_BIND_ADDRESS=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &ptyClient{cmd: cmd, master: master}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	p.wait(t, "server identity pin:")
	p.wait(t, "> ")
	p.keys("players\r")
	p.waitN(t, "no players", 1)
	p.keys("\x1b[A\r") // arrow-up: players again
	p.waitN(t, "no players", 2)
	p.keys("plyers\x1b[D\x1b[D\x1b[D\x1b[Da\r") // insert the missing a
	p.waitN(t, "no players", 3)
	p.keys("\x03")
	if code := p.exit(t); code != 0 {
		t.Errorf("server exit %d after Ctrl-C; screen:\n%q", code, p.text())
	}
	if strings.Contains(p.text(), "^[[") || strings.Contains(p.text(), "unknown command") {
		t.Errorf("arrow keys reached the admin console as text:\n%q", p.text())
	}
}
