package netstack_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestUnknownReliableTypesNeverEndTheSession is the stock client's case in
// virtual time: a server that sends types of its own on Reliable and
// ReliableOrdered every tick, to a client whose registry knows none of them
// (and no announcement names them: the server's registry does not hold
// them either, as a module that forgot to declare them), for ten minutes over a lossy
// link; the client also sends the server malformed requests. Every refused
// message is acknowledged, counted and told, the ordered channel keeps
// delivering the messages it does know, and the session stays up.
func TestUnknownReliableTypesNeverEndTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memlink.Link{Loss: 0.05, Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}
		srv, cli := memPair(t, link, netstack.ServerConfig{}, netstack.ClientConfig{}) // both: game messages only

		const duration = 10 * time.Minute
		const tick = 50 * time.Millisecond
		ends := gamemsg.AppendMatchEnd(nil, &gamemsg.MatchEnd{Reason: gamemsg.MatchEndAdmin, Winner: 1, WinnerScore: 2})
		badChat := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "nul\x00inside"})
		var sent, known, bad int
		for at := time.Duration(0); at < duration; at += tick {
			id := cli.ID()
			for _, m := range []struct {
				typ wire.MessageType
				ch  wire.Channel
			}{{1300, wire.ReliableOrdered}, {1301, wire.Reliable}} {
				if err := srv.Send(id, m.typ, m.ch, []byte{1, 2, 3}); err != nil {
					t.Fatalf("at %v: %v", at, err)
				}
				sent++
			}
			if at%time.Second == 0 { // a message the client knows, behind the unknown ones
				if err := srv.Send(id, gamemsg.TypeMatchEnd, wire.ReliableOrdered, ends); err != nil {
					t.Fatal(err)
				}
				known++
			}
			if at%(10*time.Second) == 0 {
				_ = cli.Send(gamemsg.TypeChatMessage, wire.Reliable, badChat)
				_ = cli.Send(4321, wire.ReliableOrdered, []byte("no such type"))
				bad += 2
			}
			srv.Flush()
			time.Sleep(tick)
			for drained := false; !drained; {
				select {
				case <-cli.Done():
					reason, detail := cli.CloseReason()
					t.Fatalf("session ended after %v: %v (%s)", at, reason, detail)
				default:
				}
				m, ok := tryReceive(cli)
				if !ok {
					drained = true
				} else if m.Header.Type == gamemsg.TypeMatchEnd {
					known--
				}
			}
		}
		time.Sleep(netstack.DefaultHoldUnannounced + time.Second) // what the client still holds is refused
		for m, ok := tryReceive(cli); ok; m, ok = tryReceive(cli) {
			if m.Header.Type == gamemsg.TypeMatchEnd {
				known--
			}
		}
		if known != 0 {
			t.Errorf("%d MatchEnds not delivered: the ordered channel stalled behind refused messages", known)
		}
		cs, ss := cli.Stats(), srv.Stats()
		// Never announced: the client holds each a while for an
		// announcement that never comes, then refuses it NotLoaded (at
		// once when its hold queue is full).
		if got := cs.RefusedBy[wire.RefusedUnknownType] + cs.RefusedBy[wire.RefusedNotLoaded]; got != uint64(sent) {
			t.Errorf("client refused %d unknown messages (%v), the server sent %d", got, cs.RefusedBy, sent)
		}
		if ss.MessagesRefused != uint64(bad) {
			t.Errorf("server refused %d messages, the client sent %d bad ones (%v)", ss.MessagesRefused, bad, ss.RefusedBy)
		}
		// Notices are unreliable (5% loss here) and rate-limited: what one
		// does not report the next counts as suppressed.
		if cs.PeerRefusals > uint64(bad) || ss.PeerRefusals > uint64(sent) || cs.PeerRefusals < uint64(bad)*8/10 || ss.PeerRefusals < uint64(sent)*8/10 {
			t.Errorf("refusals told: client heard %d of %d, server %d of %d (notices %d sent, %d suppressed)",
				cs.PeerRefusals, bad, ss.PeerRefusals, sent, cs.NoticesSent, cs.NoticesSuppressed)
		}
		t.Logf("%v: %d refused by the client (%d notices, %d suppressed), %d by the server; %d retransmissions",
			duration, cs.MessagesRefused, cs.NoticesSent, cs.NoticesSuppressed, ss.MessagesRefused, ss.Retransmissions)
	})
}

// TestMessageThatOvertookItsAnnouncementIsHeld: a module message that
// reaches a v4 client before the ModuleSchemas announcement of its type
// (both Reliable, which does not order: a lost datagram can do it; here the
// type is registered, and so announced, only after the message was sent) is
// held, then delivered after the announcement, not refused.
func TestMessageThatOvertookItsAnnouncementIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := gamemsg.NewRegistry()
		srv, cli := memPair(t, memlink.Link{Latency: 10 * time.Millisecond}, netstack.ServerConfig{Registry: reg}, netstack.ClientConfig{})
		if err := srv.Send(cli.ID(), 1302, wire.Reliable, []byte{7}); err != nil {
			t.Fatal(err)
		}
		srv.Flush()
		time.Sleep(500 * time.Millisecond) // received, acknowledged, held
		for m, ok := tryReceive(cli); ok; m, ok = tryReceive(cli) {
			if m.Header.Type == 1302 {
				t.Fatal("dm_news delivered before any announcement")
			}
		}
		if err := reg.Register("dm", wire.Schema{ID: 1302, Name: "dm_news", Direction: wire.ServerToClient,
			Channel: wire.Reliable, MinLen: 1, MaxLen: 8, StringFieldOffset: wire.NoStringFields}); err != nil {
			t.Fatal(err)
		}
		srv.AnnounceSchemas()
		srv.Flush()
		time.Sleep(500 * time.Millisecond)
		var got []wire.MessageType
		for m, ok := tryReceive(cli); ok; m, ok = tryReceive(cli) {
			if m.Header.Type != wire.TypeModuleProtocols {
				got = append(got, m.Header.Type)
			}
		}
		if len(got) != 2 || got[0] != wire.TypeModuleSchemas || got[1] != 1302 {
			t.Fatalf("received %v; want the announcement, then the held dm_news", got)
		}
		if st := cli.Stats(); st.MessagesRefused != 0 || st.HeldDelivered != 1 {
			t.Errorf("client refused %d, delivered %d held; want 0 and 1", st.MessagesRefused, st.HeldDelivered)
		}
	})
}

// tryReceive returns a message already delivered, without waiting.
func tryReceive(c *netstack.Client) (netstack.Message, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := c.Receive(ctx)
	return m, err == nil
}

// TestMessagesForAModuleNotLoadedAreHeld: while a module's types are
// unregistered (it crashed and restarts), a client's reliable messages of
// them are acknowledged and held; once the types and the handler are back
// they are delivered in order. Past the hold time they are refused
// NotLoaded, and an unreliable one is refused at once.
func TestMessagesForAModuleNotLoadedAreHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := gamemsg.NewRegistry()
		schema := wire.Schema{ID: 1400, Name: "Req", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered,
			MinLen: 1, MaxLen: 16, StringFieldOffset: wire.NoStringFields}
		noise := wire.Schema{ID: 1401, Name: "Noise", Direction: wire.ClientToServer, Channel: wire.Unreliable,
			MinLen: 1, MaxLen: 16, StringFieldOffset: wire.NoStringFields}
		creg := gamemsg.NewRegistry() // the client knows the module's types
		for _, s := range []wire.Schema{schema, noise} {
			if err := reg.Register("mod", s); err != nil {
				t.Fatal(err)
			}
			if err := creg.Register("mod", s); err != nil {
				t.Fatal(err)
			}
		}
		srv, cli := memPair(t, memlink.Link{Latency: 5 * time.Millisecond}, netstack.ServerConfig{Registry: reg, HoldNotLoaded: 2 * time.Second},
			netstack.ClientConfig{Registry: creg})
		got := make(chan byte, 16)
		handler := func(_ uint32, _ *wire.Header, p []byte) { got <- p[0] }
		srv.Handle(1400, handler)

		reg.UnregisterOwner("mod") // the module crashed
		srv.Handle(1400, nil)
		for i := byte(1); i <= 3; i++ {
			if err := cli.Send(1400, wire.ReliableOrdered, []byte{i}); err != nil {
				t.Fatal(err)
			}
		}
		_ = cli.Send(1401, wire.Unreliable, []byte{9})
		cli.Flush()
		time.Sleep(time.Second)
		if st := srv.Stats(); st.HeldNotLoaded != 3 || st.RefusedBy[wire.RefusedNotLoaded] != 1 {
			t.Fatalf("held %d, refused %v; want 3 held and the unreliable one refused", st.HeldNotLoaded, st.RefusedBy)
		}
		if st := cli.Stats(); st.Retransmissions > 2 {
			t.Fatalf("%d retransmissions: held messages are acknowledged", st.Retransmissions)
		}
		if err := reg.Register("mod", schema); err != nil { // back, types first
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if len(got) != 0 {
			t.Fatal("delivered before the handler was installed")
		}
		srv.Handle(1400, handler)
		for want := byte(1); want <= 3; want++ {
			select {
			case b := <-got:
				if b != want {
					t.Fatalf("delivered %d, want %d", b, want)
				}
			case <-time.After(time.Second):
				t.Fatalf("message %d not delivered after the module came back", want)
			}
		}

		reg.UnregisterOwner("mod") // crashed again, for good this time
		srv.Handle(1400, nil)
		if err := cli.Send(1400, wire.ReliableOrdered, []byte{4}); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		time.Sleep(3 * time.Second)
		st := srv.Stats()
		if st.RefusedBy[wire.RefusedNotLoaded] != 2 || st.HeldDelivered != 3 {
			t.Fatalf("after the hold time: refused %v, delivered %d", st.RefusedBy, st.HeldDelivered)
		}
		if cli.Stats().PeerRefusals != 2 {
			t.Fatalf("the client was told of %d refusals, want 2", cli.Stats().PeerRefusals)
		}
	})
}

// TestV3SessionsSendOneMessagePerDatagram: a v3 client gets the v3 data
// plane, one §2 packet per sealed frame, in both directions, and never the
// v4 transport's own types.
func TestV3SessionsSendOneMessagePerDatagram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := packedRegistry(t)
		srv, cli := memPair(t, memlink.Link{Latency: time.Millisecond}, netstack.ServerConfig{Registry: reg},
			netstack.ClientConfig{Registry: reg, Protocol: 3})
		if cli.Protocol() != 3 || srv.ClientProtocol(cli.ID()) != 3 {
			t.Fatalf("protocol: client v%d, server sees v%d", cli.Protocol(), srv.ClientProtocol(cli.ID()))
		}
		var got atomic.Int32 // the server's receive goroutine counts
		srv.Handle(soakReliable, func(uint32, *wire.Header, []byte) { got.Add(1) })
		for i := range 20 {
			if err := srv.Send(cli.ID(), soakOrdered, wire.ReliableOrdered, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			if err := cli.Send(soakReliable, wire.Reliable, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		srv.Flush()
		cli.Flush()
		time.Sleep(time.Second)
		for i := range 20 {
			m := next(t, cli, soakOrdered)
			if m.Payload[0] != byte(i) {
				t.Fatalf("message %d carried %d", i, m.Payload[0])
			}
		}
		if n := got.Load(); n != 20 {
			t.Fatalf("server got %d of 20", n)
		}
		peer, _ := srv.ClientStats(cli.ID()) // the session's own counters, without the handshake's plain datagrams
		for name, st := range map[string]netstack.Stats{"client": cli.Stats(), "server": peer} {
			if st.MessagesSent != st.PacketsSent {
				t.Errorf("%s: %d messages in %d datagrams; v3 sends one per datagram", name, st.MessagesSent, st.PacketsSent)
			}
		}
	})
}

// TestBuiltinTypeNobodyTakesIsRefused: a client's EntityRPC is a valid
// message that no handler takes on this server; it is refused NotLoaded
// (acknowledged, counted, told), never accepted and silently lost.
func TestBuiltinTypeNobodyTakesIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := memPair(t, memlink.Link{Latency: 5 * time.Millisecond}, netstack.ServerConfig{}, netstack.ClientConfig{})
		rpc := []byte{1, 0, 0, 0, 7, 0, 'x'} // entity 1, rpc 7, args "x"
		if err := cli.Send(gamemsg.TypeEntityRPC, wire.Reliable, rpc); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		time.Sleep(time.Second)
		if got := srv.Stats().RefusedBy[wire.RefusedNotLoaded]; got != 1 {
			t.Fatalf("server refused %d EntityRPCs NotLoaded (%v), want 1", got, srv.Stats().RefusedBy)
		}
		if got := cli.Stats().PeerRefusals; got != 1 {
			t.Fatalf("client was told of %d refusals, want 1", got)
		}
	})
}

// TestModuleMessageNeverPrecedesItsAnnouncement: a module type registered
// after a client's admission (a room's module that just started) and sent
// at once, on ReliableOrdered: the server queues the table that announces
// it first, so the client, on a link without loss, never has to hold it.
func TestModuleMessageNeverPrecedesItsAnnouncement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := gamemsg.NewRegistry()
		srv, cli := memPair(t, memlink.Link{Latency: 10 * time.Millisecond}, netstack.ServerConfig{Registry: reg}, netstack.ClientConfig{})
		time.Sleep(100 * time.Millisecond) // the admission's table (no module types) is in
		if err := reg.Register("tag", wire.Schema{ID: 1401, Name: "tag_state", Direction: wire.ServerToClient,
			Channel: wire.ReliableOrdered, MinLen: 1, MaxLen: 8, StringFieldOffset: wire.NoStringFields}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := srv.Send(cli.ID(), 1401, wire.ReliableOrdered, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		srv.AnnounceSchemas() // the end of the tick: nothing left to announce
		srv.Flush()
		time.Sleep(500 * time.Millisecond)
		var got []wire.MessageType
		for m, ok := tryReceive(cli); ok; m, ok = tryReceive(cli) {
			got = append(got, m.Header.Type)
		}
		want := []wire.MessageType{gamemsg.TypeGameStateSync, wire.TypeModuleSchemas, wire.TypeModuleProtocols,
			wire.TypeModuleSchemas, wire.TypeModuleProtocols, 1401, 1401, 1401}
		if !slices.Equal(got, want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		if st := cli.Stats(); st.HeldNotLoaded != 0 || st.MessagesRefused != 0 {
			t.Fatalf("the client held %d and refused %d module messages: one overtook its announcement", st.HeldNotLoaded, st.MessagesRefused)
		}
	})
}
