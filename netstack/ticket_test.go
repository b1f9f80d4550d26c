package netstack_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestAdmissionTicketCarried: a client's ClientFinished ticket, made from
// the new session's channel binding, reaches OnAdmitted byte for byte, and
// the binding it was made from is the server's for that client
// (docs/protocol.md §3.13). Without a ticket OnAdmitted sees none.
func TestAdmissionTicketCarried(t *testing.T) {
	got := make(chan netstack.ClientInfo, 2)
	srv := newTestServer(t, func(c *netstack.ServerConfig) {
		c.OnAdmitted = func(ci netstack.ClientInfo) { got <- ci }
	})
	var seen [32]byte
	ticket := func(th [32]byte) []byte {
		seen = th
		return append([]byte("opaque ticket:"), th[:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "t", Pin: srv.Pin(), Ticket: ticket}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ci := <-got
	if want := append([]byte("opaque ticket:"), seen[:]...); !bytes.Equal(ci.Ticket, want) {
		t.Fatalf("OnAdmitted ticket %q, want %q", ci.Ticket, want)
	}
	if cb, _ := srv.ChannelBinding(ci.ID); cb != seen || cb != c.ChannelBinding() {
		t.Fatal("the ticket was made from another channel binding than the session's")
	}
	plain := dial(t, srv, "plain")
	if ci := <-got; ci.ID != plain.ID() || ci.Ticket != nil {
		t.Fatalf("a client without a ticket: %+v", ci)
	}

	long := func([32]byte) []byte { return make([]byte, wire.MaxTicketLen+1) }
	if _, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "long", Pin: srv.Pin(), Ticket: long})); err == nil {
		t.Fatal("a 257-byte ticket was sent")
	}
}
