//go:build linux

package main

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/bench/internal/echosrv"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// engineRig is an echo server (answering all but one message in every
// skip, 0: all) and n Polled clients on one shared socket.
func engineRig(t *testing.T, ch wire.Channel, n, skip int) (*sharedSocket, []*netstack.Client, []*view) {
	t.Helper()
	srv, err := echosrv.New(echoSchema(ch), netstack.ServerConfig{MaxClients: n})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	srv.Handle(echoType, func(id uint32, h *wire.Header, p []byte) {
		if seen++; skip == 0 || seen%skip != 0 { // the handlers run on the server's one goroutine
			_ = srv.Send(id, echoType, h.Channel, p)
		}
	})
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	sock, err := newSharedSocket(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema(ch)); err != nil {
		t.Fatal(err)
	}
	conns, views := make([]*netstack.Client, n), make([]*view, n)
	for i := range n {
		if views[i], err = sock.view(netip.AddrFrom4([4]byte{127, 2, 9, byte(i + 1)})); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		conns[i], err = netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "engine", Pin: srv.Pin(),
			Registry: reg, Transport: views[i], Polled: true, ServiceInterval: 20 * time.Millisecond})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	return sock, conns, views
}

// runEngine runs an engine over the rig until want echoes were counted,
// stops it, closes the clients while it still reads their last Acks, and
// returns the loops.
func runEngine(t *testing.T, sock *sharedSocket, conns []*netstack.Client, views []*view, o clientOpts, want uint64) []*loop {
	t.Helper()
	var m meter
	m.measuring.Store(true)
	loops := make([]*loop, len(conns))
	for i, c := range conns {
		loops[i] = newLoop(c, o, &m)
	}
	e := newEngine(sock, conns, loops, views, o)
	sock.start(e)
	for end := time.Now().Add(20 * time.Second); m.count.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d echoes within 20 s, want %d", m.count.Load(), want)
		}
	}
	e.stop()
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	sock.Close()
	for i, err := range errs {
		if err != nil && o.channel != wire.Unreliable {
			t.Errorf("client %d: Close: %v (the engine reads the Acks that end its linger)", i, err)
		}
	}
	return loops
}

// TestEngineDrivesClients: three Polled clients on one shared socket,
// driven by the engine alone (no loop or receive goroutine): every one of
// them keeps its messages answered, and their Close completes while the
// engine reads their last Acks.
func TestEngineDrivesClients(t *testing.T) {
	sock, conns, views := engineRig(t, wire.Reliable, 3, 0)
	o := clientOpts{inflight: 10, size: 32, channel: wire.Reliable}
	loops := runEngine(t, sock, conns, views, o, 3000)
	for i, l := range loops {
		if l.echoes < 300 {
			t.Errorf("client %d took %d echoes; the three share the work", i, l.echoes)
		}
	}
}

// TestEngineReplacesLostMessages: against a server that answers three
// unreliable messages in four, the engine's passes count the unanswered
// lost and replace them, so echoes keep coming.
func TestEngineReplacesLostMessages(t *testing.T) {
	sock, conns, views := engineRig(t, wire.Unreliable, 2, 4)
	o := clientOpts{inflight: 10, size: 32, channel: wire.Unreliable, lossAfter: 20 * time.Millisecond}
	loops := runEngine(t, sock, conns, views, o, 400)
	if loops[0].lost+loops[1].lost == 0 {
		t.Fatal("no message counted lost; a quarter were never answered")
	}
}
