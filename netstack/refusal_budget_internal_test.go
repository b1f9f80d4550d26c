package netstack

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestShortRequestsLeaveCookieBudget: in virtual time, 30-byte requests
// arrive at 50,000 a second for 2 s (the per-source budgets lifted, as for
// a flood from as many spoofed sources as it takes) and a real v4 hello
// every 10 ms. With the default global budgets every hello gets its
// CookieReply: refusals take their own budget's tokens first, and only those
// (docs/protocol.md §3.5). Everything not answered is counted.
func TestShortRequestsLeaveCookieBudget(t *testing.T) {
	s, conn := sinkServer(t, func(c *ServerConfig) {
		c.Internet = true
		c.UnvalidatedReplyBudget = ratelimit.BucketConfig{} // the defaults
	})
	short := wire.AppendPacket([]byte{classPlain}, &wire.Header{Type: wire.TypeConnect}, []byte{0x53, 0x50, 0x4E, 0x48, 4, 0})
	if len(short) != 30 {
		t.Fatalf("short request of %d bytes", len(short))
	}
	hello, _ := v4Connect(t, nil)
	flooder := netip.MustParseAddrPort("127.60.0.1:40000")
	player := netip.MustParseAddrPort("127.61.0.1:40000")
	now := time.Now()
	const requests, hellos = 100_000, 200 // 2 s: 20 µs apart, a hello every 500th
	for i := range requests {
		now = now.Add(20 * time.Microsecond)
		s.handleDatagram(short, flooder, false, now)
		if i%(requests/hellos) == 0 {
			s.handleDatagram(hello, player, false, now)
		}
	}
	st := s.Stats()
	if st.CookiesSent != hellos {
		t.Errorf("%d CookieReplies for %d hellos during the flood", st.CookiesSent, hellos)
	}
	// Burst 200, then 200 a second for 2 s.
	answered := conn.sent.Load() - st.CookiesSent
	if answered > DefaultUnvalidatedRefusalsPerSecond*3+1 {
		t.Errorf("%d refusals sent in 2 s, budget 200/s burst 200", answered)
	}
	if st.UnvalidatedRefusalRefused != requests-answered || st.UnvalidatedReplyRefused != 0 {
		t.Errorf("refusals refused %d (want %d), replies refused %d (want 0)",
			st.UnvalidatedRefusalRefused, requests-answered, st.UnvalidatedReplyRefused)
	}
}
