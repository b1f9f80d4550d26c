package host_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
)

// TestMemoryLimitWhileServing: server.memory_limit_mib is the process's Go
// memory limit while the server runs, and the one before it once Run
// returns; 0 leaves the runtime's alone.
func TestMemoryLimitWhileServing(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	for _, mib := range []int{0, 64} {
		stop := serveWithMemoryLimit(t, mib)
		want := before
		if mib > 0 {
			want = int64(mib) << 20
		}
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("memory_limit_mib = %d: the limit while serving is %d, want %d", mib, got, want)
		}
		stop()
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("memory_limit_mib = %d: the limit after Run is %d, want the one before (%d)", mib, got, before)
		}
	}
}

// TestMemoryLimitFollowsLiveHeap: with server.memory_limit_mib = -1 the
// limit while serving is what is live plus a headroom, and it rises with
// the live heap (players arriving) rather than holding the collector
// under what they use; once Run returns, the limit before is back.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	stop := serveWithMemoryLimit(t, config.MemoryLimitAuto)
	first := debug.SetMemoryLimit(-1)
	if first == before || first < 8<<20 || first > 1<<30 {
		t.Errorf("the automatic limit while serving is %d bytes (before: %d)", first, before)
	}
	// 96 MiB more live, as 16,000 players would make it.
	live := make([][]byte, 96)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	got := first
	for got < first+88<<20 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		got = debug.SetMemoryLimit(-1)
	}
	if got < first+88<<20 {
		t.Errorf("with 96 MiB more live the limit is %d MiB, was %d MiB", got>>20, first>>20)
	}
	runtime.KeepAlive(live)
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("the limit after Run is %d, want the one before (%d)", got, before)
	}
}

// serveWithMemoryLimit runs a server with server.memory_limit_mib = mib
// until it has ticked once (it is serving); stop ends Run and waits for it.
func serveWithMemoryLimit(t *testing.T, mib int) (stop func()) {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Server.MemoryLimitMiB = mib
	srv, err := host.New(host.Options{Config: cfg, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); srv.Stats().Ticks == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // serving: the loop ticks
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
