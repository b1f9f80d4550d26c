package deathmatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
)

// TestGroupPlaysBots: bots played by one netbot.Group on a real server
// (the plugin, real UDP) spawn, send their inputs and have them
// acknowledged, with their inputs written on the group's goroutine
// (FlushInterval negative); a bot the server kicks ends with ErrDropped
// while the others play on; when the context ends every other bot leaves
// with ClientQuit and ends with nil.
func TestGroupPlaysBots(t *testing.T) {
	srv := startServer(t, "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := netbot.NewGroup(ctx)
	const n = 4
	var mu sync.Mutex
	ends := make(map[string]error)
	bots := make([]*netbot.Bot, n)
	for i := range bots {
		b, err := netbot.Dial(ctx, netbot.Config{Name: fmt.Sprintf("bot%d", i+1), Seed: uint64(i),
			Client: netstack.ClientConfig{Server: srv.Addr(), Pin: srv.Pin(), FlushInterval: -1}})
		if err != nil {
			t.Fatal(err)
		}
		bots[i] = b
		g.Add(b, func(err error) {
			mu.Lock()
			ends[b.Name()] = err
			mu.Unlock()
		})
	}
	playing := func(b *netbot.Bot) bool {
		st := b.Stats()
		return st.Respawns > 0 && st.Inputs >= 30 && st.Acks >= 15
	}
	waitFor(t, 20*time.Second, "every bot respawned, 30 inputs sent and 15 acked", func() bool {
		for _, b := range bots {
			if !playing(b) {
				return false
			}
		}
		return true
	})
	if out, err := srv.Exec(fmt.Sprintf("kick %d", bots[0].ID())); err != nil {
		t.Fatalf("kick: %v %s", err, out)
	}
	waitFor(t, 20*time.Second, "the kicked bot ended", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := ends["bot1"]
		return ok
	})
	if err := ends["bot1"]; !errors.Is(err, netbot.ErrDropped) {
		t.Fatalf("the kicked bot ended with %v, want ErrDropped", err)
	}
	before := bots[1].Stats().Inputs
	waitFor(t, 20*time.Second, "the others play on", func() bool { return bots[1].Stats().Inputs >= before+30 })
	cancel()
	done := make(chan struct{})
	go func() { g.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return 30 s after the context ended")
	}
	for _, b := range bots[1:] {
		if err := ends[b.Name()]; err != nil {
			t.Errorf("%s ended with %v, want nil", b.Name(), err)
		}
	}
	waitFor(t, 10*time.Second, "no players left", func() bool { return srv.Stats().Players == 0 })
}

// waitFor polls cond every 20 ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
	}
}
