package netstack_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestUnknownReliableTypesNeverEndTheSession is the stock client's case in
// virtual time: a server whose module sends its own types on Reliable and
// ReliableOrdered every tick, to a client whose registry knows none of them
// (and which is sent no schema announcement), for ten minutes over a lossy
// link; the client also sends the server malformed requests. Every refused
// message is acknowledged, counted and told, the ordered channel keeps
// delivering the messages it does know, and the session stays up.
func TestUnknownReliableTypesNeverEndTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := gamemsg.NewRegistry()
		for id, ch := range map[wire.MessageType]wire.Channel{1300: wire.ReliableOrdered, 1301: wire.Reliable} {
			if err := reg.Register("dm", wire.Schema{ID: id, Name: "Module" + ch.String(), Direction: wire.ServerToClient,
				Channel: ch, MinLen: 1, MaxLen: 64, StringFieldOffset: wire.NoStringFields}); err != nil {
				t.Fatal(err)
			}
		}
		link := memlink.Link{Loss: 0.05, Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}
		srv, cli := memPair(t, link, netstack.ServerConfig{Registry: reg}, netstack.ClientConfig{}) // the client: game messages only

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
		time.Sleep(time.Second)
		for m, ok := tryReceive(cli); ok; m, ok = tryReceive(cli) {
			if m.Header.Type == gamemsg.TypeMatchEnd {
				known--
			}
		}
		if known != 0 {
			t.Errorf("%d MatchEnds not delivered: the ordered channel stalled behind refused messages", known)
		}
		cs, ss := cli.Stats(), srv.Stats()
		if got := cs.RefusedBy[wire.RefusedUnknownType]; got != uint64(sent) {
			t.Errorf("client refused %d unknown messages, the server sent %d", got, sent)
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

// tryReceive returns a message already delivered, without waiting.
func tryReceive(c *netstack.Client) (netstack.Message, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := c.Receive(ctx)
	return m, err == nil
}
