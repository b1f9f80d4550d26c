//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// waitFile waits (up to 20 s) for path to exist and returns its bytes.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if raw, err := os.ReadFile(path); err == nil {
			return raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after SIGUSR1", filepath.Base(path))
		}
	}
}

// TestHeapProfileOnSignal: with SPARKHOST_HEAPPROFILE set, each SIGUSR1
// makes a running server write a heap profile (gzipped protobuf) there and
// its goroutines' stacks beside it, and the server keeps serving.
func TestHeapProfileOnSignal(t *testing.T) {
	bin := buildBinary(t)
	path := filepath.Join(t.TempDir(), "heap.pprof")
	t.Setenv("SPARKHOST_HEAPPROFILE", path)
	srv := startServer(t, bin, t.TempDir())
	for range 2 {
		_ = os.Remove(path)
		_ = os.Remove(path + ".goroutines")
		if err := srv.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if raw := waitFile(t, path); !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
			t.Fatalf("the heap profile is not gzipped protobuf: % x", raw[:min(len(raw), 8)])
		}
		if g := waitFile(t, path+".goroutines"); !bytes.Contains(g, []byte("goroutine profile: total")) {
			t.Fatalf("the goroutines file is not a goroutine profile: %.80q", g)
		}
	}
	if err := srv.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the server is gone after SIGUSR1: %v", err)
	}
}
