package pgtest

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

// onEndingThread runs fn on a goroutine that ends locked to its OS thread,
// so that the runtime ends the thread with it, as a test that entered a
// network namespace does. The main thread is never ended (the runtime parks
// it instead), so fn runs on another.
func onEndingThread(t *testing.T, fn func()) {
	t.Helper()
	// Locked, the caller keeps its thread: the goroutine gets another.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 100 {
		ran := make(chan bool)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				runtime.UnlockOSThread()
				ran <- false
				return
			}
			fn()
			ran <- true
		}()
		if <-ran {
			return
		}
	}
	t.Fatal("no goroutine ran on a thread other than the main one")
}

// TestClusterOutlivesTheThreadThatStartedIt: the postmaster is started with
// Pdeathsig, which the kernel sends when the forking thread ends. A cluster
// started (or restarted) from a thread that then ends must keep running;
// before, CI lost its cluster in the middle of modules/mmo's tests and nine
// tests failed with "connection refused".
func TestClusterOutlivesTheThreadThatStartedIt(t *testing.T) {
	var c *Cluster
	var err error
	onEndingThread(t, func() { c, err = Start() })
	if errors.Is(err, ErrUnavailable) && os.Getenv(RequireEnv) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	connects := func(when string) {
		t.Helper()
		// The thread's end and the signal are asynchronous: give them time
		// to land before asking.
		time.Sleep(300 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			t.Fatalf("%s: the cluster is gone: %v", when, err)
		}
		conn.Close(ctx)
	}
	connects("after Start on an ending thread")
	c.Kill()
	onEndingThread(t, func() { err = c.Restart() })
	if err != nil {
		t.Fatal(err)
	}
	connects("after Restart on an ending thread")
}
