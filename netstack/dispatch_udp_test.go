package netstack_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// dialEcho dials srv as name with the echo registry.
func dialEcho(t *testing.T, srv *netstack.Server, reg *wire.Registry, name string) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Registry: reg}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHandlerReplacedByHandler: a handler that replaces its type's handler
// sends the messages after its own — those of the same datagram, the same
// receive pass, too — to the new one.
func TestHandlerReplacedByHandler(t *testing.T) {
	reg := echoRegistry(t)
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Registry = reg })
	var mu sync.Mutex
	var got []string
	second := func(_ uint32, _ *wire.Header, p []byte) {
		mu.Lock()
		got = append(got, "second")
		mu.Unlock()
	}
	srv.Handle(typeEchoReliable, func(_ uint32, _ *wire.Header, p []byte) {
		mu.Lock()
		got = append(got, "first")
		mu.Unlock()
		srv.Handle(typeEchoReliable, second)
	})
	c := dialEcho(t, srv, reg, "replacer")
	for i := range 3 { // one Flush: one datagram
		var p [8]byte
		binary.LittleEndian.PutUint32(p[4:], uint32(i))
		if err := c.Send(typeEchoReliable, wire.Reliable, p[:]); err != nil {
			t.Fatal(err)
		}
	}
	c.Flush()
	eventually(t, "three messages handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if got[0] != "first" || got[1] != "second" || got[2] != "second" {
		t.Fatalf("handled by %v, want first, second, second", got)
	}
}

// TestHandlerSendsToAnotherClient: a handler's Send to a client other than
// the sender reaches that client, and its Send to the sender the sender.
func TestHandlerSendsToAnotherClient(t *testing.T) {
	reg := echoRegistry(t)
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Registry = reg })
	a, b := dialEcho(t, srv, reg, "sender"), dialEcho(t, srv, reg, "listener")
	relayTo := b.ID()
	srv.Handle(typeEchoReliable, func(id uint32, h *wire.Header, p []byte) {
		var out [8]byte
		binary.LittleEndian.PutUint32(out[:], id) // who sent it
		if err := srv.Send(relayTo, typeEchoReliable, wire.Reliable, out[:]); err != nil {
			t.Errorf("relay: %v", err)
		}
		binary.LittleEndian.PutUint32(out[:], relayTo)
		if err := srv.Send(id, typeEchoReliable, wire.Reliable, out[:]); err != nil {
			t.Errorf("echo: %v", err)
		}
	})
	if err := a.Send(typeEchoReliable, wire.Reliable, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	a.Flush()
	if from := binary.LittleEndian.Uint32(next(t, b, typeEchoReliable).Payload); from != a.ID() {
		t.Fatalf("the listener got a message saying %d, want the sender's id %d", from, a.ID())
	}
	if to := binary.LittleEndian.Uint32(next(t, a, typeEchoReliable).Payload); to != b.ID() {
		t.Fatalf("the sender got a message saying %d, want the listener's id %d", to, b.ID())
	}
}
