package netstack_test

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// chatSink is a ChatMessage handler that hands the texts to the test.
func chatSink(srv *netstack.Server) <-chan string {
	got := make(chan string, 64)
	srv.Handle(gamemsg.TypeChatMessage, func(_ uint32, _ *wire.Header, payload []byte) {
		m, err := gamemsg.ParseChatMessageFromClient(payload)
		if err == nil {
			got <- m.Text
		}
	})
	return got
}

// expectChat waits for the chat text want; because the server reads one
// socket in order, everything sent before it has been handled by then.
func expectChat(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case text := <-got:
		if text != want {
			t.Fatalf("delivered chat %q, want %q", text, want)
		}
	case <-time.After(waitLong):
		t.Fatalf("chat %q not delivered", want)
	}
}

func TestUDPSealedFrameDrops(t *testing.T) {
	srv := quietServer(t, nil)
	got := chatSink(srv)
	a := newRawPeer(t, srv.Addr())
	id := a.admit(srv.Pin(), "alice")
	b := newRawPeer(t, srv.Addr())
	b.connect(srv.Pin()) // only its keys are needed

	a.sendChat("first")
	expectChat(t, got, "first")

	// chat returns a fresh sealed chat frame of a (not sent, not counted).
	chat := func(text string) []byte {
		a.rel++
		return a.frame(a.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel},
			gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: text})))
	}
	flip := func(f []byte, i int) []byte { f[i] ^= 0x01; return f }
	epoch2 := handshake.Ratchet(handshake.Ratchet(a.res.C2S))

	security := []struct {
		name  string
		frame func() []byte
	}{
		{"secure version", func() []byte { return flip(chat("x"), 1) }},
		{"epoch byte (current+1, wrong key)", func() []byte { return flip(chat("x"), 2) }},
		{"frame sequence low byte", func() []byte { return flip(chat("x"), 3) }},
		{"frame sequence high byte", func() []byte { return flip(chat("x"), 10) }},
		{"first ciphertext byte", func() []byte { return flip(chat("x"), 11) }},
		{"packet header inside the ciphertext", func() []byte { return flip(chat("x"), 11+8) }},
		{"last ciphertext byte", func() []byte { f := chat("x"); return flip(f, len(f)-17) }},
		{"first tag byte", func() []byte { f := chat("x"); return flip(f, len(f)-16) }},
		{"last tag byte", func() []byte { f := chat("x"); return flip(f, len(f)-1) }},
		{"replayed ClientFinished frame", func() []byte { return a.sent[0] }},
		{"replayed chat frame", func() []byte { return a.sent[len(a.sent)-1] }},
		{"truncated by one byte", func() []byte { f := chat("x"); return f[:len(f)-1] }},
		{"truncated to header and tag", func() []byte { f := chat("x"); return f[:11+16] }},
		{"truncated to the secure header", func() []byte { return chat("x")[:11] }},
		{"epoch +2 under the genuine K[2]", func() []byte {
			a.rel++
			pkt := a.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel},
				gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "x"}))
			f := sealWith(epoch2, 2, a.s, pkt)
			a.s++
			return f
		}},
		{"sealed with another session's key", func() []byte {
			a.rel++
			pkt := a.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel},
				gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "x"}))
			f := sealWith(b.res.C2S, 0, a.s, pkt)
			a.s++
			return f
		}},
	}
	for _, tc := range security {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Stats()
			a.write(tc.frame())
			a.sendChat("after " + tc.name)
			expectChat(t, got, "after "+tc.name)
			after := srv.Stats()
			if d := after.SecurityDrops - before.SecurityDrops; d != 1 {
				t.Errorf("SecurityDrops grew by %d, want 1", d)
			}
			if d := after.MalformedDropped - before.MalformedDropped; d != 0 {
				t.Errorf("MalformedDropped grew by %d, want 0", d)
			}
		})
	}

	t.Run("wrong SenderID", func(t *testing.T) {
		before := srv.Stats()
		a.rel++
		a.sendSealed(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel, SenderID: id + 1},
			gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "forged sender"}))
		a.sendChat("after SenderID")
		expectChat(t, got, "after SenderID")
		after := srv.Stats()
		if d := after.MalformedDropped - before.MalformedDropped; d != 1 {
			t.Errorf("MalformedDropped grew by %d, want 1", d)
		}
		if d := after.SecurityDrops - before.SecurityDrops; d != 0 {
			t.Errorf("SecurityDrops grew by %d, want 0", d)
		}
	})
	t.Run("plain frame of type 7", func(t *testing.T) {
		before := srv.Stats()
		a.write(plainFrame(gamemsg.TypeEntitySpawn, wire.ReliableOrdered, make([]byte, 19)))
		a.sendChat("after plain")
		expectChat(t, got, "after plain")
		after := srv.Stats()
		if d := after.PlaintextFramesDropped - before.PlaintextFramesDropped; d != 1 {
			t.Errorf("PlaintextFramesDropped grew by %d, want 1", d)
		}
		if d := after.MalformedDropped - before.MalformedDropped; d != 0 {
			t.Errorf("MalformedDropped grew by %d, want 0", d)
		}
	})
	t.Run("datagram starting 0x7F", func(t *testing.T) {
		before := srv.Stats()
		a.write(append([]byte{0x7F}, a.sent[len(a.sent)-1][1:]...))
		a.sendChat("after 0x7F")
		expectChat(t, got, "after 0x7F")
		after := srv.Stats()
		if d := after.MalformedDropped - before.MalformedDropped; d != 1 {
			t.Errorf("MalformedDropped grew by %d, want 1", d)
		}
		if d := after.SecurityDrops - before.SecurityDrops; d != 0 {
			t.Errorf("SecurityDrops grew by %d, want 0", d)
		}
	})

	// Control for the epoch cases: a frame of epoch current+1 under the
	// genuine K[1] is accepted, so the K[2] frame above failed on its epoch.
	t.Run("epoch +1 under the genuine K[1] is accepted", func(t *testing.T) {
		before := srv.Stats()
		a.rel++
		pkt := a.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel},
			gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "epoch 1"}))
		a.write(sealWith(handshake.Ratchet(a.res.C2S), 1, a.s, pkt))
		a.s++
		expectChat(t, got, "epoch 1")
		if d := srv.Stats().SecurityDrops - before.SecurityDrops; d != 0 {
			t.Errorf("SecurityDrops grew by %d, want 0", d)
		}
	})

	// The connection stayed up throughout.
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != id {
		t.Fatalf("Clients() = %+v, want alice (%d) still connected", cl, id)
	}
	if st, ok := srv.ClientStats(id); !ok || st.SecurityDrops != uint64(len(security)) {
		t.Fatalf("alice's SecurityDrops = %d (%v), want %d", st.SecurityDrops, ok, len(security))
	}
}

// TestUDPSealedFromUnknownEndpoint: a sealed frame from an endpoint without a
// channel is a security drop.
func TestUDPSealedFromUnknownEndpoint(t *testing.T) {
	srv := quietServer(t, nil)
	a := newRawPeer(t, srv.Addr())
	a.admit(srv.Pin(), "alice")
	before := srv.Stats().SecurityDrops
	// alice's own valid frame, from another port.
	stranger := udpSocket(t, loopback)
	a.rel++
	f := a.frame(a.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: a.rel},
		gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "moved"})))
	sendTo(t, stranger, srv.Addr(), f)
	eventually(t, "security drop", func() bool { return srv.Stats().SecurityDrops == before+1 })
	if d := drain(t, stranger, quietWait); len(d) != 0 {
		t.Fatalf("the stranger got %d answers", len(d))
	}
}
