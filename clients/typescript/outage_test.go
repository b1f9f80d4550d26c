package typescript_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/udprelay"
)

// outageDark is longer than ten retransmissions' waits at the 50 ms
// minimum RTO (3.55 s), after which the client used to give up, and
// shorter than both ends' 10 s liveness timeout.
const outageDark = 5 * time.Second

// TestTypeScriptClientOutlivesAnOutage: the client's path goes dark (a
// relay drops everything both ways) while its greeting is unacknowledged;
// the client keeps retrying through the outage and is answered once the
// path is back (docs/protocol.md §5.4, "Giving up").
func TestTypeScriptClientOutlivesAnOutage(t *testing.T) {
	dir := compiled(t)
	srv := startHello(t)
	link, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	port := strconv.Itoa(int(link.Addr().Port()))

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "build", "test", "outage.js"), "127.0.0.1", port, srv.Pin(), "ode")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		out strings.Builder
	)
	warm := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), "warm:") {
				close(warm)
			}
		}
	}()
	select {
	case <-warm:
	case <-readDone:
	case <-ctx.Done():
	}
	link.SetDark(true)
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatalf("tell the client to greet: %v", err)
	}
	time.Sleep(outageDark)
	link.SetDark(false)
	<-readDone
	err = cmd.Wait()
	mu.Lock()
	got := out.String()
	mu.Unlock()
	if err != nil {
		t.Fatalf("client: %v\n%s%s", err, got, stderr.String())
	}
	if !strings.Contains(got, "after the outage: Hello, ode! You are greeting number 2.") || !strings.Contains(got, "closed ClientQuit") {
		t.Fatalf("the greeting sent into a %v outage was not answered:\n%s%s", outageDark, got, stderr.String())
	}
	t.Log(strings.TrimSpace(got))
}
