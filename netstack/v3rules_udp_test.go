package netstack_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestUDPV3SessionIsSentOnlyV3Types: a v3 client is never sent a type its
// protocol does not define. Send refuses one (ErrNotInProtocol, counted),
// Broadcast skips the v3 client and reaches the v4 one, and what the v3
// client does receive are v3 types only.
func TestUDPV3SessionIsSentOnlyV3Types(t *testing.T) {
	srv := quietServer(t, nil)
	p := newRawPeer(t, srv.Addr())
	old := p.admit(srv.Pin(), "old")
	c4 := dial(t, srv, "new")

	for _, m := range []struct {
		typ wire.MessageType
		ch  wire.Channel
	}{{gamemsg.TypeRoomState, wire.ReliableOrdered}, {wire.TypeModuleSchemas, wire.Reliable}, {wire.TypeMessageRefused, wire.Unreliable}} {
		if err := srv.Send(old, m.typ, m.ch, make([]byte, 12)); !errors.Is(err, netstack.ErrNotInProtocol) {
			t.Errorf("Send(%s) to a v3 client: %v, want ErrNotInProtocol", m.typ, err)
		}
	}
	if n := srv.Stats().NotInProtocol; n != 3 {
		t.Errorf("NotInProtocol = %d, want 3", n)
	}
	for _, ci := range srv.Clients() {
		if v3 := ci.Protocol == 3; ci.Speaks(gamemsg.TypeRoomEvent) == v3 || !ci.Speaks(gamemsg.TypeChatMessage) || !ci.Speaks(1200) {
			t.Errorf("%s (v%d): Speaks RoomEvent %v, ChatMessage %v, module type %v", ci.Name, ci.Protocol,
				ci.Speaks(gamemsg.TypeRoomEvent), ci.Speaks(gamemsg.TypeChatMessage), ci.Speaks(1200))
		}
	}

	event := gamemsg.AppendRoomEvent(nil, &gamemsg.RoomEvent{Kind: gamemsg.RoomJoined, Room: 1, Client: old, Name: "old"})
	if err := srv.Broadcast(gamemsg.TypeRoomEvent, wire.ReliableOrdered, event); err != nil {
		t.Fatalf("Broadcast of a v4 type: %v", err)
	}
	chat := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: "server", Text: "after"})
	if err := srv.Broadcast(gamemsg.TypeChatMessage, wire.Reliable, chat); err != nil {
		t.Fatal(err)
	}
	srv.Flush()
	next(t, c4, gamemsg.TypeRoomEvent)
	for {
		h, _, ok := p.recvSealed(waitLong)
		if !ok {
			t.Fatal("the chat never reached the v3 client")
		}
		if !wire.InProtocol(3, h.Type) {
			t.Fatalf("the v3 client was sent %s (type %d)", h.Type, h.Type)
		}
		if h.Type == gamemsg.TypeChatMessage {
			break
		}
	}
	if n := srv.Stats().NotInProtocol; n != 3 {
		t.Errorf("NotInProtocol = %d after the broadcast, want 3 (a broadcast skips, it does not fail)", n)
	}
}

// TestUDPMalformedReliableAckedByVersion: a reliable message that fails
// its schema — a type no version defines, a v4-only type, a chat with a
// sender — is acknowledged and refused in a v4 session (§5.4), but in a
// v3 session dropped unacknowledged, as v3 says, so that the sender resends
// it; v4-only types are unknown to a v3 session even when the registry
// knows them, and no v3 peer is sent a MessageRefused notice. Either way
// the valid message after them is delivered, and its duplicate acked.
func TestUDPMalformedReliableAckedByVersion(t *testing.T) {
	for _, version := range []uint16{3, 4} {
		t.Run(map[uint16]string{3: "v3", 4: "v4"}[version], func(t *testing.T) {
			var rooms, chats atomic.Int32
			srv := quietServer(t, nil)
			srv.Handle(gamemsg.TypeRoomListRequest, func(uint32, *wire.Header, []byte) { rooms.Add(1) })
			srv.Handle(gamemsg.TypeChatMessage, func(uint32, *wire.Header, []byte) { chats.Add(1) })
			p := newRawPeer(t, srv.Addr())
			if version == 4 {
				p = newRawPeer4(t, srv.Addr(), nil)
			}
			p.admit(srv.Pin(), "probe")

			p.sendReliable(999, []byte{1, 2, 3}) // 2: no version defines it
			p.rel++                              // 3: RoomListRequest, v4's
			p.sendSealed(wire.Header{Type: gamemsg.TypeRoomListRequest, Channel: wire.Reliable, Sequence: p.rel}, []byte{0, 0})
			p.sendReliable(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: "me", Text: "x"})) // 4
			p.sendChat("valid")                                                                                                    // 5
			acked := acksUntil(t, p, 5)
			for seq := uint32(2); seq <= 4; seq++ {
				if acked[seq] != (version == 4) {
					t.Errorf("malformed sequence %d acknowledged: %v, want %v", seq, acked[seq], version == 4)
				}
			}
			p.write(p.sent[len(p.sent)-1]) // a replayed frame: refused by the window
			p.sendSealed(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: 5},
				gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "valid"})) // a duplicate: acked, not delivered
			acksUntil(t, p, 5)
			eventually(t, "the valid chat delivered", func() bool { return chats.Load() == 1 })
			st := srv.Stats()
			if rooms.Load() != 0 || st.MessagesRefused < 3 {
				t.Errorf("RoomListRequest delivered %d times; refused %d", rooms.Load(), st.MessagesRefused)
			}
			if (st.NoticesSent > 0) != (version == 4) {
				t.Errorf("MessageRefused notices sent: %d in a v%d session", st.NoticesSent, version)
			}
			if chats.Load() != 1 {
				t.Errorf("%d chats delivered, want 1", chats.Load())
			}
		})
	}
}

// acksUntil reads the server's messages until an Ack covers sequence want,
// then for a short while more, and returns every sequence acknowledged.
func acksUntil(t *testing.T, p *rawPeer, want uint32) map[uint32]bool {
	t.Helper()
	acked := make(map[uint32]bool)
	end := time.Now().Add(waitLong)
	for time.Now().Before(end) {
		d := time.Until(end)
		if acked[want] {
			d = min(d, quietWait)
		}
		h, payload, ok := p.recvSealed(d)
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
		acked[a.Ack] = true
		for i := range uint32(32) {
			if a.Bits>>i&1 == 1 && a.Ack > i+1 {
				acked[a.Ack-1-i] = true
			}
		}
	}
	if !acked[want] {
		t.Fatalf("sequence %d never acknowledged", want)
	}
	return acked
}

// TestUDPRefuseV3Detail: a server that refuses v3 says why in the
// ProtocolTooOld's detail — the default one and the operator's — whole,
// within the answer's size limit (no larger than the hello); a detail that
// cannot fit is refused at start.
func TestUDPRefuseV3Detail(t *testing.T) {
	for _, want := range []string{"", "rooms need protocol v4; update the client"} {
		srv := quietServer(t, func(c *netstack.ServerConfig) { c.RefuseV3, c.RefuseV3Detail = true, want })
		if want == "" {
			want = "this server needs protocol v4; update the client"
		}
		c := udpSocket(t, loopback)
		hello := connectFrame(freshHello(t))
		sendTo(t, c, srv.Addr(), hello)
		d := expectRejectedV(t, c, wire.RejectProtocolTooOld, 4)
		_, p := parsePlain(t, d)
		if rej, _ := wire.ParseConnectRejected(p); rej.Detail != want || len(d) > len(hello) {
			t.Errorf("detail %q in %d bytes (hello %d), want %q", rej.Detail, len(d), len(hello), want)
		}
	}
	_, err := netstack.NewServer(netstack.ServerConfig{Bind: "127.0.0.1", RefuseV3: true,
		RefuseV3Detail: "this detail is far too long to fit an answer no larger than the hello"})
	if err == nil || !strings.Contains(err.Error(), "RefuseV3Detail") {
		t.Fatalf("a RefuseV3Detail of 67 bytes: %v", err)
	}
}
