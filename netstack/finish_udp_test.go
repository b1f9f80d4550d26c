package netstack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestUDPClientFinishedInvalidName(t *testing.T) {
	names := []struct{ label, name string }{
		{"empty", ""},
		{"all spaces", "    "},
		{"all Unicode spaces", "\u00a0\u2003\u3000"},
		{"33 bytes", strings.Repeat("n", 33)},
		{"control char", "tab\there"},
		{"newline", "new\nline"},
		{"NUL", "nul\x00"},
		{"invalid UTF-8", "bad\xff\xfe"},
	}
	ev := newEvents()
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.ConnectBudget = plentyBudget; ev.hook(c) })
	for _, tc := range names {
		name := tc.name
		t.Run(tc.label, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin()}))
			if err == nil {
				c.Close()
				t.Fatalf("name %q admitted", name)
			}
			var he *netstack.HandshakeError
			if !errors.As(err, &he) || he.Code != netstack.HandshakeRefusedName || he.Disconnect != wire.DisconnectNameInvalid {
				t.Fatalf("Dial(%q) = %v (%#v), want HandshakeRefusedName with NameInvalid", name, err, he)
			}
			eventually(t, "the slot freed", func() bool { return srv.SlotCount() == 0 })
		})
	}
	// The boundary: exactly 32 bytes is a valid name.
	dial(t, srv, strings.Repeat("n", 32))
	// OnAdmitted runs right after the GameStateSync is sent; Dial may return first.
	eventually(t, "OnAdmitted", func() bool { a, _ := ev.counts(); return a == 1 })
	if a, d := ev.counts(); a != 1 || d != 0 {
		t.Fatalf("events: %d admitted, %d disconnected; want 1 and 0", a, d)
	}
}

// TestUDPNameInvalidIsSealed checks the refusal on the wire: one sealed
// Disconnect(NameInvalid) (in three copies), nothing else, and the slot freed.
func TestUDPNameInvalidIsSealed(t *testing.T) {
	srv := quietServer(t, nil)
	p := newRawPeer(t, srv.Addr())
	p.connect(srv.Pin())
	p.sendFinished(" ", 1)
	copies := 0
	for _, d := range drain(t, p.conn, quietWait) {
		pkt, err := openFrame(p.res.S2C, d)
		if err != nil {
			t.Fatalf("answer to a bad name is not sealed with the session key: % x", head(d))
		}
		h, payload, err := wire.ParsePacket(pkt)
		if err != nil || h.Type != wire.TypeDisconnect || h.Channel != wire.Unreliable {
			t.Fatalf("want only Disconnect, got %+v (%v)", h, err)
		}
		m, err := wire.ParseDisconnect(payload)
		if err != nil || wire.DisconnectReason(m.Reason) != wire.DisconnectNameInvalid {
			t.Fatalf("Disconnect %+v (%v), want NameInvalid", m, err)
		}
		copies++
	}
	if copies != 3 {
		t.Fatalf("got %d Disconnect copies, want 3", copies)
	}
	if srv.SlotCount() != 0 {
		t.Fatal("the slot of a refused name was not freed")
	}
}

func TestUDPClientFinishedSequence(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, ev.hook)
	got := make(chan string, 1)
	srv.Handle(gamemsg.TypeChatMessage, func(_ uint32, _ *wire.Header, payload []byte) {
		m, _ := gamemsg.ParseChatMessageFromClient(payload)
		got <- m.Text
	})
	p := newRawPeer(t, srv.Addr())
	id := p.connect(srv.Pin())

	// A sealed type-1 packet with Sequence ≠ 1 in Securing is dropped.
	before := srv.Stats()
	p.sendFinished("early", 2)
	p.sendFinished("early", 0)
	eventually(t, "ClientFinished with Sequence ≠ 1 dropped", func() bool {
		return srv.Stats().MalformedDropped-before.MalformedDropped == 2
	})
	if d := drain(t, p.conn, quietWait); len(d) != 0 || len(srv.Clients()) != 0 {
		t.Fatalf("a ClientFinished with Sequence ≠ 1 was answered (%d datagrams) or admitted", len(d))
	}

	p.sendFinished("ok", 1)
	p.await(gamemsg.TypeGameStateSync)
	// Wait for the Ack of Sequence 1 and the acknowledgements that follow it.
	awaitAck(t, p, 1)
	quietAcks(t, p)

	// The repeat (with another name) is acked and not processed again.
	p.sendFinished("mallory", 1)
	awaitAck(t, p, 1)
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != id || cl[0].Name != "ok" {
		t.Fatalf("Clients() = %+v after a repeated ClientFinished", cl)
	}
	// Any other type-1 packet after admission is dropped.
	before = srv.Stats()
	p.rel++
	p.sendSealed(wire.Header{Type: wire.TypeConnect, Channel: wire.Reliable, Sequence: p.rel},
		wire.AppendClientFinished(nil, &wire.ClientFinished{Name: "again"}))
	p.sendChat("still here")
	select {
	case <-got:
	case <-time.After(waitLong):
		t.Fatal("chat after a dropped type-1 packet not delivered")
	}
	if d := srv.Stats().MalformedDropped - before.MalformedDropped; d != 1 {
		t.Fatalf("MalformedDropped grew by %d, want 1 (the type-1 packet after admission)", d)
	}
	if a, _ := ev.counts(); a != 1 {
		t.Fatalf("OnAdmitted called %d times, want 1", a)
	}
}

// awaitAck waits for an Ack from the server that covers seq.
func awaitAck(t *testing.T, p *rawPeer, seq uint32) {
	t.Helper()
	end := time.Now().Add(waitLong)
	for time.Now().Before(end) {
		h, payload, ok := p.recvSealed(time.Until(end))
		if !ok {
			break
		}
		if h.Type != wire.TypeAck {
			continue
		}
		a, err := wire.ParseAck(payload)
		if err != nil {
			t.Fatal(err)
		}
		if a.Acknowledges(seq) {
			return
		}
	}
	t.Fatalf("no Ack for sequence %d", seq)
}

// quietAcks reads until no Ack has arrived for half a second, so that the
// redundant repeats of an acknowledgement are not mistaken for a new one.
func quietAcks(t *testing.T, p *rawPeer) {
	t.Helper()
	const quiet = 500 * time.Millisecond
	end := time.Now().Add(waitLong)
	last := time.Now()
	for time.Now().Before(end) {
		left := quiet - time.Since(last)
		if left <= 0 {
			return
		}
		h, _, ok := p.recvSealed(left)
		if !ok {
			return
		}
		if h.Type == wire.TypeAck {
			last = time.Now()
		}
	}
	t.Fatal("the server never stopped acknowledging")
}
