package main

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/bench/internal/echosrv"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestUnreliableLossesAreReplaced: against an echo server that answers
// only three unreliable messages in four, a client's messages in flight
// would die out within a few dozen round trips; the loop counts the
// unanswered ones lost and replaces them, so echoes keep coming.
func TestUnreliableLossesAreReplaced(t *testing.T) {
	srv, err := echosrv.New(echoSchema(wire.Unreliable), netstack.ServerConfig{MaxClients: 4})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	srv.Handle(echoType, func(id uint32, h *wire.Header, p []byte) {
		if seen++; seen%4 != 0 { // the handlers run on the server's one goroutine
			_ = srv.Send(id, echoType, h.Channel, p)
		}
	})
	srv.Start()
	defer srv.Close()
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema(wire.Unreliable)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "loss", Pin: srv.Pin(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := clientOpts{inflight: 10, size: 32, channel: wire.Unreliable, lossAfter: 20 * time.Millisecond}
	var m meter
	m.measuring.Store(true)
	l := newLoop(c, o, &m)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.run(runCtx, ticker(runCtx, o.lossAfter/5)) }()
	// Echoes still arrive long after the first ten messages' lifetime.
	wait := func(want uint64) {
		for end := time.Now().Add(20 * time.Second); m.count.Load() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				stop()
				<-done
				t.Fatalf("%d echoes (want %d), %d lost", m.count.Load(), want, l.lost)
			}
		}
	}
	wait(200)
	wait(m.count.Load() + 200)
	stop()
	<-done
	if l.lost == 0 {
		t.Fatalf("%d echoes and no message counted lost; a quarter were never answered", m.count.Load())
	}
}
