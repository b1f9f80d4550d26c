package netstack_test

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// FlushNow writes what Send queued before it returns: the datagram is
// counted sent at once, with no writer goroutine or timer involved (the
// flush timer is an hour away), and the server receives the message.
func TestClientFlushNowWritesBeforeReturning(t *testing.T) {
	reg := benchRegistry(t, wire.ReliableOrdered)
	got := make(chan []byte, 1)
	srv := newTestServerTB(t, func(c *netstack.ServerConfig) { c.Registry = reg })
	srv.Handle(benchType, func(_ uint32, _ *wire.Header, p []byte) { got <- append([]byte(nil), p...) })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{
		Server: srv.Addr(), Name: "flushnow", Pin: srv.Pin(), Registry: reg, FlushInterval: time.Hour,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 50 { // each round checks synchronously, so a deferred write fails one
		before := c.Stats().PacketsSent
		if err := c.Send(benchType, wire.ReliableOrdered, []byte("now")); err != nil {
			t.Fatal(err)
		}
		c.FlushNow()
		if after := c.Stats().PacketsSent; after <= before {
			t.Fatalf("datagrams sent %d after FlushNow, %d before: nothing was written on the caller's goroutine", after, before)
		}
		select {
		case p := <-got:
			if string(p) != "now" {
				t.Fatalf("server got %q", p)
			}
		case <-ctx.Done():
			t.Fatal("the server never received the flushed message")
		}
	}
}
