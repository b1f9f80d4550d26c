package netstack_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// acceptedID returns the client id of a ConnectAccepted datagram.
func acceptedID(t *testing.T, d []byte) uint32 {
	t.Helper()
	h, p := parsePlain(t, d)
	if h.Type != wire.TypeConnectAccepted || len(p) != 155 {
		t.Fatalf("want a 155-byte ConnectAccepted, got %v with %d bytes", h.Type, len(p))
	}
	return binary.LittleEndian.Uint32(p)
}

func TestUDPRepeatedHelloGetsCachedAnswer(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, ev.hook)
	p := newRawPeer(t, srv.Addr())
	id := p.connect(srv.Pin())
	for range 3 {
		p.write(connectFrame(p.hello))
		again := p.nextPlain()
		if !bytes.Equal(again, p.accept) {
			t.Fatalf("repeated ClientHello: answer differs from the first ConnectAccepted\nfirst % x\nagain % x", p.accept, again)
		}
	}
	if acceptedID(t, p.accept) != id || srv.SlotCount() != 1 {
		t.Fatalf("slots %d, want 1 with id %d", srv.SlotCount(), id)
	}
	// The cached answer still leads to admission.
	p.sendFinished("rita", 1)
	p.await(gamemsg.TypeGameStateSync)
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != id || cl[0].Name != "rita" {
		t.Fatalf("Clients() = %+v", cl)
	}
}

func TestUDPDifferentHelloReplacesSecuringSlot(t *testing.T) {
	ev := newEvents()
	// One slot: the old one must be freed before capacity is judged.
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.MaxClients = 1; ev.hook(c) })
	old := newRawPeer(t, srv.Addr())
	oldID := old.connect(srv.Pin())

	// A second handshake from the very same socket.
	p := newRawPeer(t, srv.Addr())
	p.conn = old.conn
	newID := p.connect(srv.Pin())
	if newID == oldID {
		t.Fatalf("a different ClientHello kept id %d", oldID)
	}
	if srv.SlotCount() != 1 {
		t.Fatalf("slots = %d, want 1", srv.SlotCount())
	}
	// An invalid hello from that endpoint is refused and leaves the slot.
	p.write(connectFrame(helloBytes(3, 2, goodKey)))
	expectRejected(t, p.conn, wire.RejectUnsupportedSuite)
	p.write(connectFrame(p.hello))
	if !bytes.Equal(p.nextPlain(), p.accept) {
		t.Fatal("after a refused hello the Securing slot changed")
	}

	// The replaced slot's keys are gone: its ClientFinished does not authenticate.
	before := srv.Stats().SecurityDrops
	old.sendFinished("old", 1)
	eventually(t, "the old session's ClientFinished dropped", func() bool {
		return srv.Stats().SecurityDrops == before+1
	})
	if len(srv.Clients()) != 0 {
		t.Fatal("the replaced slot was admitted")
	}
	p.sendFinished("new", 1)
	p.await(gamemsg.TypeGameStateSync)
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != newID {
		t.Fatalf("Clients() = %+v, want id %d", cl, newID)
	}
	eventually(t, "OnAdmitted", func() bool { a, _ := ev.counts(); return a == 1 })
	if a, d := ev.counts(); a != 1 || d != 0 {
		t.Fatalf("events: %d admitted, %d disconnected; want 1, 0", a, d)
	}
}

func TestUDPSecuringSlotTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	t.Run("freed after the timeout, invisible meanwhile", func(t *testing.T) {
		ev := newEvents()
		var handled atomic.Int32
		srv := quietServer(t, func(c *netstack.ServerConfig) { c.SecuringTimeout = timeout; ev.hook(c) })
		srv.Handle(gamemsg.TypeChatMessage, func(uint32, *wire.Header, []byte) { handled.Add(1) })
		p := newRawPeer(t, srv.Addr())
		start := time.Now()
		p.connect(srv.Pin())
		if srv.SlotCount() != 1 || len(srv.Clients()) != 0 {
			t.Fatalf("slots %d, clients %d; want 1 Securing slot and no client", srv.SlotCount(), len(srv.Clients()))
		}
		// A Securing slot accepts only ClientFinished.
		before := srv.Stats().MalformedDropped
		p.sendChat("not yet")
		eventually(t, "chat from a Securing slot dropped", func() bool {
			return srv.Stats().MalformedDropped == before+1
		})
		eventually(t, "the Securing slot freed", func() bool { return srv.SlotCount() == 0 })
		if el := time.Since(start); el < timeout {
			t.Fatalf("Securing slot freed after %v, before its %v timeout", el, timeout)
		}
		// Its ClientFinished now finds no channel.
		before = srv.Stats().SecurityDrops
		p.sendFinished("late", 1)
		eventually(t, "late ClientFinished dropped", func() bool { return srv.Stats().SecurityDrops == before+1 })
		if a, d := ev.counts(); a != 0 || d != 0 || handled.Load() != 0 {
			t.Fatalf("module-visible events for a Securing slot: %d admitted, %d disconnected, %d handled", a, d, handled.Load())
		}
	})
	t.Run("repeated Connect does not extend it", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) {
			c.SecuringTimeout = timeout
			c.ConnectBudget = plentyBudget
		})
		p := newRawPeer(t, srv.Addr())
		start := time.Now()
		firstID := p.connect(srv.Pin())
		// Keep repeating the same hello. Were the timer extended by repeats,
		// the slot (and the cached answer) would live forever.
		end := time.Now().Add(waitLong)
		for {
			if time.Now().After(end) {
				t.Fatal("the Securing slot outlived its timeout while the hello was repeated")
			}
			time.Sleep(20 * time.Millisecond)
			sent := time.Now()
			p.write(connectFrame(p.hello))
			if id := acceptedID(t, p.nextPlain()); id != firstID {
				// The slot was freed and the repeat opened a new one.
				if el := sent.Sub(start); el < timeout {
					t.Fatalf("slot replaced after %v, before its %v timeout", el, timeout)
				}
				return
			}
		}
	})
}

func TestUDPConnectFromConnectedEndpointDropped(t *testing.T) {
	srv := quietServer(t, nil)
	p := newRawPeer(t, srv.Addr())
	id := p.admit(srv.Pin(), "conn")
	before := srv.Stats()
	p.write(connectFrame(freshHello(t)))
	p.write(connectFrame(p.hello))
	p.write(connectFrame(nil))
	// A probe from another socket: once it is answered, the three Connects
	// above were handled.
	probe := udpSocket(t, loopback)
	sendTo(t, probe, srv.Addr(), connectFrame(nil))
	expectRejected(t, probe, wire.RejectProtocolMissing)
	for _, d := range drain(t, p.conn, quietWait) {
		if d[0] != 0x02 {
			t.Fatalf("a Connect from a Connected endpoint was answered: % x", head(d))
		}
	}
	after := srv.Stats()
	if got := after.PacketsDropped - before.PacketsDropped; got != 3 {
		t.Errorf("PacketsDropped grew by %d, want 3", got)
	}
	// §5.5 names no counter for this drop: malformedDropped, by the spec's
	// definition of "drop".
	if got := after.MalformedDropped - before.MalformedDropped; got != 3 {
		t.Errorf("MalformedDropped grew by %d, want 3", got)
	}
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != id || srv.SlotCount() != 1 {
		t.Fatalf("the Connected slot changed: %+v", cl)
	}
}

// TestUDPNothingButHandshakeToSecuring: relays from a handler (as the host
// relays chat), broadcasts, heartbeats, Send and Kick never reach a
// Securing slot.
func TestUDPNothingButHandshakeToSecuring(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.HeartbeatInterval = 20 * time.Millisecond })
	srv.Handle(gamemsg.TypeChatMessage, func(from uint32, _ *wire.Header, p []byte) {
		m, _ := gamemsg.ParseChatMessageFromClient(p)
		m.Sender = "relay"
		_ = srv.BroadcastExcept(from, gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &m))
	})
	a := dial(t, srv, "alice")
	b := dial(t, srv, "bob")
	p := newRawPeer(t, srv.Addr())
	id := p.connect(srv.Pin())

	if err := a.Send(gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "hi"})); err != nil {
		t.Fatal(err)
	}
	next(t, b, gamemsg.TypeChatMessage)
	chat := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: "server", Text: "to all"})
	if err := srv.Broadcast(gamemsg.TypeChatMessage, wire.Reliable, chat); err != nil {
		t.Fatal(err)
	}
	next(t, a, gamemsg.TypeChatMessage)
	next(t, b, gamemsg.TypeChatMessage)
	if err := srv.Send(id, gamemsg.TypeChatMessage, wire.Reliable, chat); !errors.Is(err, netstack.ErrNoSuchClient) {
		t.Fatalf("Send to a Securing slot: %v, want ErrNoSuchClient", err)
	}
	if err := srv.Kick(id, wire.DisconnectKicked, "no"); !errors.Is(err, netstack.ErrNoSuchClient) {
		t.Fatalf("Kick of a Securing slot: %v, want ErrNoSuchClient", err)
	}
	if _, ok := srv.ClientStats(id); ok {
		t.Fatal("ClientStats reports a Securing slot")
	}
	// Heartbeats go out every 20 ms to the admitted clients; wait for several.
	if d := drain(t, p.conn, quietWait); len(d) != 0 {
		t.Fatalf("a Securing slot received %d datagrams, first % x", len(d), head(d[0]))
	}
	if srv.SlotCount() != 3 {
		t.Fatalf("slots = %d, want 3 (the Kick must not free a Securing slot)", srv.SlotCount())
	}
}
