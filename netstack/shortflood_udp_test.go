package netstack_test

// A flood of tiny requests must not starve real hellos of their answers
// (docs/protocol.md §3.5, "Answers to unvalidated sources"). Real UDP over
// 127.0.0.0/8; the flood's sources are sockets bound to several 127.x
// addresses.

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// shortRequest is the smallest request a server can answer within the 1×
// rule: a 30-byte Connect whose payload is the SPNH magic and version 4 and
// nothing else (a v4 hello is 1200 bytes). Its refusal, MalformedHandshake
// with an empty detail, is 29 bytes.
func shortRequest() []byte {
	return plainFrame(wire.TypeConnect, wire.Unreliable, []byte{0x53, 0x50, 0x4E, 0x48, 4, 0})
}

// shortFlood sends shortRequest to srv from sources round robin, as fast as
// one goroutine can, for d; sent counts the datagrams as they leave.
func shortFlood(srv *netstack.Server, sources []*floodSource, d time.Duration, sent *atomic.Int64) {
	req := shortRequest()
	for start := time.Now(); time.Since(start) < d; {
		for _, f := range sources {
			if _, err := f.conn.WriteToUDPAddrPort(req, srv.Addr()); err == nil {
				sent.Add(1)
			}
		}
	}
}

// TestUDPShortRequestFloodDoesNotStarveHellos: 8 sources flood 30-byte
// requests for 4 s at the highest rate one goroutine reaches, in internet
// mode with the default global budgets. The per-source budgets are lifted:
// they stand for a flood spread over as many spoofed sources as it takes
// (each fresh source starts with a full bucket). Once the flood has run long
// enough to empty the unvalidated-reply budget's burst, 3 real players
// connect one after the other, a second apart, while it runs: each must be
// admitted within 1 s (the client resends its hello every 500 ms and gives
// up after 5.5 s), and the reply budget must have refused nothing (the old
// rule let the flood's refusals take every token, so a player's CookieReply
// waited for luck).
func TestUDPShortRequestFloodDoesNotStarveHellos(t *testing.T) {
	const floodFor = 4 * time.Second
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.Internet = true
		fullForce(c)
	})
	sources := make([]*floodSource, 8)
	for i := range sources {
		sources[i] = &floodSource{conn: udpSocketOrSkip(t, netip.AddrFrom4([4]byte{127, 60, byte(i), 1}))}
	}
	var sent atomic.Int64
	var took time.Duration // written before done closes
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		shortFlood(srv, sources, floodFor, &sent)
		took = time.Since(start)
	}()
	t.Cleanup(func() { <-done })

	// 3 × the budget's burst: the old rule had spent it by then.
	const floodBytes = 3 * netstack.DefaultUnvalidatedRepliesPerSecond * 30
	eventually(t, "the flood under way", func() bool { return srv.Stats().PlainBytesReceived >= floodBytes })
	var waits []time.Duration
	for i := range 3 {
		at := time.Now()
		if _, err := dialFrom(t, srv, netip.AddrFrom4([4]byte{127, 61, byte(i), 1}), fmt.Sprintf("real%d", i)); err != nil {
			t.Errorf("real player %d: %v", i, err)
		}
		waits = append(waits, time.Since(at))
		select {
		case <-done:
			t.Errorf("real player %d connected after the flood ended", i)
		default:
		}
		time.Sleep(time.Until(at.Add(time.Second)))
	}
	<-done
	st := srv.Stats()
	t.Logf("flood: %d datagrams of 30 bytes in %v: %.0f/s sent, %.0f/s reached the server; players admitted after %v",
		sent.Load(), took.Round(time.Millisecond), float64(sent.Load())/took.Seconds(),
		float64(st.PlainBytesReceived)/30/took.Seconds(), waits)
	t.Logf("cookies sent %d; unvalidated replies refused %d, refusals refused %d", st.CookiesSent, st.UnvalidatedReplyRefused, st.UnvalidatedRefusalRefused)
	if st.UnvalidatedReplyRefused != 0 {
		t.Errorf("%d answers refused by the reply budget: the flood took the CookieReplies' tokens", st.UnvalidatedReplyRefused)
	}
	for i, w := range waits {
		if w > time.Second {
			t.Errorf("real player %d admitted after %v, want within 1 s", i, w)
		}
	}
}
