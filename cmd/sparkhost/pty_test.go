package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
