package netstack_test

// A flood of tiny requests must not starve real hellos of their answers
// (docs/protocol.md §3.5, "Answers to unvalidated sources"). Real UDP over
// 127.0.0.0/8; the flood's sources are sockets bound to several 127.x
// addresses.

import (
	"fmt"
	"net/netip"
	"sync"
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
// one goroutine can, until stop closes or for d at most; sent counts the
// datagrams as they leave.
func shortFlood(srv *netstack.Server, sources []*floodSource, d time.Duration, stop <-chan struct{}, sent *atomic.Int64) {
	req := shortRequest()
	for start := time.Now(); time.Since(start) < d; {
		select {
		case <-stop:
			return
		default:
		}
		for _, f := range sources {
			if _, err := f.conn.WriteToUDPAddrPort(req, srv.Addr()); err == nil {
				sent.Add(1)
			}
		}
	}
}

// TestUDPShortRequestFloodDoesNotStarveHellos: 8 sources flood 30-byte
// requests at the highest rate one goroutine reaches, in internet mode with
// the default global budgets, until 3 real players have connected (30 s at
// most). The per-source budgets are lifted: they stand for a flood spread
// over as many spoofed sources as it takes (each fresh source starts with a
// full bucket). Once the flood has run long enough to empty the
// unvalidated-reply budget's burst, the players connect one after the
// other while it runs: each must be admitted, and the reply budget must
// have refused nothing — the old rule let the flood's refusals take every
// token, so a player's CookieReply waited for luck. How long each took is
// logged, not judged: on a busy machine (-race, other tests) the server's
// socket queue behind tens of thousands of flood datagrams a second, not
// the budget, sets it, and a hello lost from a full queue waits for the
// client's resend (500 ms).
func TestUDPShortRequestFloodDoesNotStarveHellos(t *testing.T) {
	const floodFor = 30 * time.Second // at most; it stops when the players are in
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
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		shortFlood(srv, sources, floodFor, stop, &sent)
		took = time.Since(start)
	}()
	var stopOnce sync.Once
	stopFlood := func() { stopOnce.Do(func() { close(stop) }); <-done }
	t.Cleanup(stopFlood)

	// 3 × the budget's burst: the old rule had spent it by then.
	const floodBytes = 3 * netstack.DefaultUnvalidatedRepliesPerSecond * 30
	eventually(t, "the flood under way", func() bool { return srv.Stats().PlainBytesReceived >= floodBytes })
	atBytes, at0 := srv.Stats().PlainBytesReceived, time.Now()
	var waits []time.Duration
	for i := range 3 {
		at := time.Now()
		if _, err := dialFrom(t, srv, netip.AddrFrom4([4]byte{127, 61, byte(i), 1}), fmt.Sprintf("real%d", i)); err != nil {
			t.Errorf("real player %d: %v", i, err)
		}
		waits = append(waits, time.Since(at))
		select {
		case <-done:
			t.Fatalf("real player %d connected after the flood ended (%v)", i, floodFor)
		default:
		}
	}
	// The flood's rate at the server while the players connected: above
	// the reply budget's, or the old rule would have kept tokens too and
	// the test could not tell.
	st := srv.Stats()
	rate := float64(st.PlainBytesReceived-atBytes) / 30 / time.Since(at0).Seconds()
	stopFlood()
	t.Logf("flood: %d datagrams of 30 bytes in %v: %.0f/s sent, %.0f/s reached the server while the players connected; players admitted after %v",
		sent.Load(), took.Round(time.Millisecond), float64(sent.Load())/took.Seconds(), rate, waits)
	t.Logf("cookies sent %d; unvalidated replies refused %d, refusals refused %d", st.CookiesSent, st.UnvalidatedReplyRefused, st.UnvalidatedRefusalRefused)
	if st.UnvalidatedReplyRefused != 0 {
		t.Errorf("%d answers refused by the reply budget: the flood took the CookieReplies' tokens", st.UnvalidatedReplyRefused)
	}
	if rate < 2*netstack.DefaultUnvalidatedRepliesPerSecond {
		t.Skipf("the flood reached the server at %.0f/s only, under twice the reply budget's %d/s: this machine cannot tell the rules apart now",
			rate, netstack.DefaultUnvalidatedRepliesPerSecond)
	}
}
