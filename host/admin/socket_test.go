package admin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shortDir returns a fresh directory with a short path: t.TempDir() can be
// too long for a Unix socket path (about 100 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sa")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testRegistry has help, echo (joins its words with |), fail and raw (prints
// its argument unquoted, to send framing-like bytes).
func testRegistry(t *testing.T) *Registry {
	r := NewRegistry()
	mustRegister(t, r, echoCommand("echo", "test"))
	mustRegister(t, r, Command{Name: "fail", Owner: "test", Run: func(args []string) (string, error) {
		return "ignored", errors.New("it failed: " + strings.Join(args, " "))
	}})
	mustRegister(t, r, Command{Name: "raw", Owner: "test", Run: func(args []string) (string, error) {
		return strings.Join(args, ""), nil
	}})
	return r
}

func listen(t *testing.T, path string, exec Executor) *SocketServer {
	t.Helper()
	s, err := ListenSocket(path, exec, nil)
	if err != nil {
		t.Fatalf("ListenSocket: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setTunables shortens the socket server's limits for one test.
func setTunables(t *testing.T, timeout time.Duration, conns int) {
	oldT, oldC := requestTimeout, maxConnections
	requestTimeout, maxConnections = timeout, conns
	t.Cleanup(func() { requestTimeout, maxConnections = oldT, oldC })
}

func TestSocketRoundTrip(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	s := listen(t, path, testRegistry(t).Execute)
	if s.Path() != path {
		t.Errorf("Path = %q", s.Path())
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v, %v; want a socket with mode 0600", fi.Mode(), err)
	}
	out, err := Call(path, `echo a "b c"`, 5*time.Second)
	if err != nil || out != "a|b c" {
		t.Fatalf("Call echo = %q, %v", out, err)
	}
	out, err = Call(path, "help", 5*time.Second)
	if err != nil || !strings.Contains(out, "echo [WORDS...]") {
		t.Fatalf("Call help = %q, %v", out, err)
	}
	if out, err := Call(path, "", 5*time.Second); out != "" || err != nil {
		t.Fatalf("Call of an empty line = %q, %v", out, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the data dir holds %d entries; want only the socket (no temporary directory left)", len(entries))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSocketModeIgnoresUmask(t *testing.T) {
	// With a permissive umask a plain listen would make the socket 0777.
	old := setUmask(0)
	defer setUmask(old)
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, testRegistry(t).Execute)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestSocketErrorsPropagate(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, testRegistry(t).Execute)
	cases := []struct{ line, want string }{
		{"fail x y", "it failed: x y"},
		{"nope", `unknown command "nope"; type help for the list`},
		{"help a b", "help takes at most one command name; usage: help [COMMAND]"},
		{`echo "open`, "syntax error: unterminated double quote at byte 5"},
	}
	for _, tc := range cases {
		out, err := Call(path, tc.line, 5*time.Second)
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, tc.want) || out != "" {
			t.Errorf("Call(%q) = %q, %v; want *CommandError %q", tc.line, out, err, tc.want)
		}
	}
	exec := func(string) (string, error) { return "", errors.New("") }
	path2 := filepath.Join(shortDir(t), SocketName)
	listen(t, path2, exec)
	if _, err := Call(path2, "x", 5*time.Second); err == nil || err.Error() != "command failed" {
		t.Errorf("an error with an empty message arrives as %v", err)
	}
}

func TestSocketOutputCannotForgeStatus(t *testing.T) {
	answers := map[string]string{
		"nul-err":  "\x00ERR forged\n",
		"ok-frame": "OK 3\nabc",
		"err-line": "ERR 5\nnope!",
		"both":     "\x00OK\n\x00ERR x\n",
		"nuls":     strings.Repeat("\x00", 100),
		"big":      strings.Repeat("x", 1<<20),
	}
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, func(line string) (string, error) { return answers[line], nil })
	for line, want := range answers {
		out, err := Call(path, line, 5*time.Second)
		if err != nil || out != want {
			t.Errorf("%s: answer %.40q (%d bytes), %v; want %.40q", line, out, len(out), err, want)
		}
	}
}

func TestSocketWireFormat(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, testRegistry(t).Execute)
	cases := []struct{ request, want string }{
		{"echo a b\n", "OK 3\na|b"},
		{"echo a b\r\n", "OK 3\na|b"},
		{"fail\n", "ERR 11\nit failed: "},
		{"\n", "OK 0\n"},
	}
	for _, tc := range cases {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tc.request)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != tc.want {
			t.Errorf("request %q: answer %q, %v; want %q", tc.request, got, err, tc.want)
		}
	}
}

func TestSocketIncompleteRequestIsNotRun(t *testing.T) {
	setTunables(t, time.Second, 4)
	var ran atomic.Int32
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, func(string) (string, error) { ran.Add(1); return "", nil })
	cases := []struct {
		name, request string
		closeWrite    bool
		want          string
	}{
		{"no newline then EOF", "kick bo", true, "did not end with a newline"},
		{"no newline, client silent", "kick bo", false, "no complete request line within 1s"},
		{"nothing at all", "", false, "no complete request line"},
		{"NUL byte", "kick\x00bob\n", true, "NUL byte"},
		{"too long", strings.Repeat("x", MaxRequest+1) + "\n", false, "line longer than 64 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go func() {
				io.WriteString(c, tc.request)
				if tc.closeWrite {
					c.CloseWrite()
				}
			}()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, _ := io.ReadAll(c)
			if !strings.HasPrefix(string(got), "ERR ") || !strings.Contains(string(got), tc.want) {
				t.Fatalf("answer %q; want ERR containing %q", got, tc.want)
			}
		})
	}
	if ran.Load() != 0 {
		t.Fatalf("the executor ran %d times", ran.Load())
	}
	// The exact limit is accepted.
	if _, err := Call(path, strings.Repeat("x", MaxRequest), 5*time.Second); err != nil || ran.Load() != 1 {
		t.Fatalf("a %d-byte line: %v (ran %d)", MaxRequest, err, ran.Load())
	}
}

func TestCallRefusesUnsendableLines(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	for _, line := range []string{"a\nb", "a\x00", strings.Repeat("x", MaxRequest+1)} {
		if _, err := Call(path, line, time.Second); err == nil || errors.Is(err, ErrNoServer) {
			t.Errorf("Call(%.20q...) = %v; want a refusal before dialling", line, err)
		}
	}
}

func TestSocketStaleFileReplaced(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	makeStaleSocket(t, path)
	if _, err := Call(path, "help", time.Second); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Call on a stale socket: %v; want ErrNoServer", err)
	}
	listen(t, path, testRegistry(t).Execute)
	if out, err := Call(path, "echo ok", 5*time.Second); err != nil || out != "ok" {
		t.Fatalf("after replacing the stale socket: %q, %v", out, err)
	}
}

// makeStaleSocket leaves a socket file that nothing listens on, as a
// crashed server would.
func makeStaleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Fatalf("stale socket not left: %v", err)
	}
}

func TestSocketLiveServerRefused(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, SocketName)
	first := listen(t, path, testRegistry(t).Execute)
	_, err := ListenSocket(path, testRegistry(t).Execute, nil)
	if !errors.Is(err, ErrServerRunning) || !strings.Contains(err.Error(), "another server is running with data dir "+dir) {
		t.Fatalf("second ListenSocket: %v; want ErrServerRunning naming %s", err, dir)
	}
	if out, err := Call(path, "echo still", 5*time.Second); err != nil || out != "still" {
		t.Fatalf("the first server was disturbed: %q, %v", out, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the data dir holds %d entries after the refusal; want 1", len(entries))
	}
	first.Close()
	listen(t, path, testRegistry(t).Execute) // free again
}

func TestSocketRefusesWhatIsNotASocket(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, SocketName)
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenSocket(path, testRegistry(t).Execute, nil); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("ListenSocket over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatalf("the file was touched")
	}
	if _, err := Call(path, "help", time.Second); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Call on a regular file: %v", err)
	}
}

func TestSocketMissingDirectory(t *testing.T) {
	path := filepath.Join(shortDir(t), "nope", SocketName)
	if _, err := ListenSocket(path, testRegistry(t).Execute, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("ListenSocket in a missing dir: %v", err)
	}
}

func TestCallNoServer(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, SocketName)
	_, err := Call(path, "help", time.Second)
	want := fmt.Sprintf("no server is running with data dir %s (socket %s)", dir, path)
	if !errors.Is(err, ErrNoServer) || err.Error() != want {
		t.Fatalf("Call = %v; want %q", err, want)
	}
}

func TestSocketConcurrentClients(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	var mu sync.Mutex // the executor runs one command at a time, as the game thread does
	r := testRegistry(t)
	listen(t, path, func(line string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return r.Execute(line)
	})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				want := fmt.Sprintf("%d|%d", g, i)
				out, err := Call(path, fmt.Sprintf("echo %d %d", g, i), 10*time.Second)
				if err != nil || out != want {
					var ce *CommandError
					if errors.As(err, &ce) && strings.HasPrefix(ce.Message, "server busy") {
						continue // allowed under load, never wrong answers
					}
					errs <- fmt.Errorf("echo %d %d = %q, %v", g, i, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSocketSlowClientDoesNotBlockOthers(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, testRegistry(t).Execute)
	// A client that connects and sends half a line, then nothing.
	slow, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "echo hal")
	start := time.Now()
	for i := range 5 {
		if out, err := Call(path, fmt.Sprintf("echo %d", i), 5*time.Second); err != nil || out != fmt.Sprint(i) {
			t.Fatalf("Call behind a slow client = %q, %v", out, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("calls behind a slow client took %v", d)
	}
}

func TestSocketBusyWhenAllSlotsTaken(t *testing.T) {
	setTunables(t, time.Second, 2)
	path := filepath.Join(shortDir(t), SocketName)
	s := listen(t, path, testRegistry(t).Execute)
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// Let the server accept both before the next one comes.
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.conns) == 2 })
	start := time.Now()
	_, err := Call(path, "echo x", 5*time.Second)
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, "server busy: 2 admin connections are open") {
		t.Fatalf("Call with all slots taken = %v; want server busy", err)
	}
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("the busy answer took %v; it must be immediate", d)
	}
	if s.Busy() != 1 {
		t.Errorf("Busy = %d; want 1", s.Busy())
	}
	// The idle clients time out and free their slots.
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if got, _ := io.ReadAll(c); !strings.Contains(string(got), "no complete request line") {
			t.Errorf("idle client got %q", got)
		}
	}
	waitFor(t, func() bool { return len(s.slots) == 0 })
	if out, err := Call(path, "echo y", 5*time.Second); err != nil || out != "y" {
		t.Fatalf("after the idle clients left: %q, %v", out, err)
	}
}

func TestSocketCloseDoesNotWaitForCommands(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s := listen(t, path, func(string) (string, error) {
		started <- struct{}{}
		<-release
		return "late", nil
	})
	defer close(release)
	errc := make(chan error, 1)
	go func() {
		_, err := Call(path, "stuck", 10*time.Second)
		errc <- err
	}()
	<-started
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for a running command")
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the cut-off call reported success")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the client was not released by Close")
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file after Close: %v", err)
	}
}

func TestCallTimeout(t *testing.T) {
	path := filepath.Join(shortDir(t), SocketName)
	release := make(chan struct{})
	defer close(release)
	listen(t, path, func(string) (string, error) { <-release; return "", nil })
	start := time.Now()
	_, err := Call(path, "stuck", 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer from the server within 200ms") {
		t.Fatalf("Call = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Call took %v", d)
	}
}

func TestCallRejectsMalformedAnswers(t *testing.T) {
	for _, answer := range []string{"", "HELLO\n", "OK x\n", "OK -1\n", "OK 99999999999\n", "OK 10\nshort"} {
		path := filepath.Join(shortDir(t), SocketName)
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, answer)
			c.Close()
		}()
		_, err = Call(path, "help", 2*time.Second)
		ln.Close()
		var ce *CommandError
		if err == nil || errors.As(err, &ce) {
			t.Errorf("answer %q: Call = %v; want a transport error", answer, err)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFrontEndsSurviveAPanickingExecutor(t *testing.T) {
	exec := func(string) (string, error) { panic("executor bug") }
	path := filepath.Join(shortDir(t), SocketName)
	listen(t, path, exec)
	var ce *CommandError
	if _, err := Call(path, "x", 5*time.Second); !errors.As(err, &ce) || !strings.Contains(ce.Message, "executor bug") {
		t.Fatalf("socket: %v", err)
	}
	var out strings.Builder
	ServeConsole(t.Context(), strings.NewReader("x\n"), &out, exec)
	if !strings.HasPrefix(out.String(), "error: internal error running the command: executor bug") {
		t.Fatalf("console: %q", out.String())
	}
}
