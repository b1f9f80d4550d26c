package host_test

import (
	"context"
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
		want := before
		if mib > 0 {
			want = int64(mib) << 20
		}
		deadline := time.Now().Add(10 * time.Second)
		for srv.Stats().Ticks == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // serving: the loop ticks
		}
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("memory_limit_mib = %d: the limit while serving is %d, want %d", mib, got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("memory_limit_mib = %d: the limit after Run is %d, want the one before (%d)", mib, got, before)
		}
	}
}
