package netstack_test

// Draining (docs/protocol.md §3.14): a server that drains refuses new
// clients with a reason of their own, at the hello and at admission, and
// keeps the sessions it has. Real UDP over 127.0.0.1.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const drainDetail = "the server is restarting; connect to another server"

// TestUDPDrainingRefusesNewClients: an admitted client stays admitted when
// the drain begins; a v4 client is refused ServerDraining with the detail —
// at the hello (ConnectRejected) when the server holds no seats, at
// admission (Disconnect) when resumption is on, because its hello may be a
// resumption's —, a v3 hello ServerFull (v3 defines 1..7) with the same
// detail; a handshake that passed its hello before the drain is closed at
// admission with Disconnect(ServerDraining); the end of the drain admits
// again.
func TestUDPDrainingRefusesNewClients(t *testing.T) {
	t.Run("resumption off", func(t *testing.T) { testDrainingRefuses(t, -1) })
	t.Run("resumption on", func(t *testing.T) { testDrainingRefuses(t, 30*time.Second) })
}

func testDrainingRefuses(t *testing.T, hold time.Duration) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.ResumeHold = hold })
	before, err := dialFrom(t, srv, loopback, "before")
	if err != nil {
		t.Fatal(err)
	}
	halfOpen := newRawPeer4(t, srv.Addr(), nil)
	halfOpen.connect(srv.Pin())

	srv.SetDraining(drainDetail)
	if d, ok := srv.Draining(); !ok || d != drainDetail {
		t.Fatalf("Draining() = %q, %v", d, ok)
	}
	_, err = dialFrom(t, srv, loopback, "during")
	var he *netstack.HandshakeError
	switch {
	case !errors.As(err, &he) || he.Detail != drainDetail:
		t.Fatalf("v4 Dial while draining: %v, want refused ServerDraining %q", err, drainDetail)
	case hold < 0 && (he.Code != netstack.HandshakeRejected || he.Reason != wire.RejectServerDraining):
		t.Fatalf("v4 Dial while draining, no seats held: %v, want ConnectRejected ServerDraining", err)
	case hold > 0 && (he.Code != netstack.HandshakeRefusedName || he.Disconnect != wire.DisconnectServerDraining):
		t.Fatalf("v4 Dial while draining, resumption on: %v, want Disconnect(ServerDraining) at admission", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "old", Pin: srv.Pin(), Protocol: 3})
	if !errors.As(err, &he) || he.Reason != wire.RejectServerFull || he.Detail != drainDetail {
		t.Fatalf("v3 Dial while draining: %v, want ConnectRejected ServerFull (v3's code) %q", err, drainDetail)
	}
	halfOpen.sendFinished("late", 1)
	_, payload := halfOpen.await(wire.TypeDisconnect)
	if m, err := wire.ParseDisconnect(payload); err != nil || wire.DisconnectReason(m.Reason) != wire.DisconnectServerDraining || m.Detail != drainDetail {
		t.Fatalf("Disconnect %+v (%v), want ServerDraining", m, err)
	}
	if len(srv.Clients()) != 1 || before.Send(gamemsg.TypeChatMessage, wire.ReliableOrdered, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "still here"})) != nil {
		t.Fatalf("the client admitted before the drain: %d clients", len(srv.Clients()))
	}

	srv.SetDraining("")
	if _, err := dialFrom(t, srv, loopback, "after"); err != nil {
		t.Fatalf("after the drain ended: %v", err)
	}
}
