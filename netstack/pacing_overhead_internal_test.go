package netstack

import (
	"net/netip"
	"testing"
	"time"
)

// TestPacingCountsHeaders: a bottleneck's rate counts IP packets, headers
// and all, so the pacer and the estimator count each datagram's IP and
// UDP headers too (28 bytes over IPv4, 48 over IPv6): small datagrams
// would otherwise pass for less than they take of the link.
func TestPacingCountsHeaders(t *testing.T) {
	for _, c := range []struct {
		addr string
		want float64
	}{{"198.18.0.2:5000", 1000 + 2*28}, {"[2001:db8::2]:5000", 1000 + 2*48}, {"[::ffff:198.18.0.2]:5000", 1000 + 2*28}} {
		s := &session{}
		s.path.addr = netip.MustParseAddrPort(c.addr)
		s.initCongestion()
		s.ccEndLocked(packResult{datagrams: 2, bytes: 1000}, time.Now())
		if got := -s.path.cc.pacer.Tokens(); got != c.want {
			t.Errorf("%s: two datagrams of 1000 bytes cost the pacer %v; want %v", c.addr, got, c.want)
		}
	}
}
