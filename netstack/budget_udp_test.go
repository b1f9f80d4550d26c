package netstack_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestUDPConnectBudget floods one source with Connects at the default budget
// (burst 16, 4/s): at most burst + refill·elapsed are answered, the rest are
// counted in ConnectRateLimited.
func TestUDPConnectBudget(t *testing.T) {
	const sent = 40
	srv := quietServer(t, nil)
	c := udpSocket(t, loopback)
	frame := connectFrame(freshHello(t)) // the first opens a Securing slot, repeats get the cached answer

	start := time.Now()
	for range sent {
		sendTo(t, c, srv.Addr(), frame)
	}
	var first []byte
	answered := 0
	for _, d := range drain(t, c, time.Second) {
		h, _ := parsePlain(t, d)
		if h.Type != wire.TypeConnectAccepted {
			t.Fatalf("answer %d is %v, want ConnectAccepted", answered, h.Type)
		}
		if first == nil {
			first = d
		} else if string(d) != string(first) {
			t.Fatalf("answer %d differs from the cached ConnectAccepted", answered)
		}
		answered++
	}
	// Every datagram was handled: answered or rate limited. The drain ended
	// after a quiet second, so the server has read all 40 by now; poll anyway.
	eventually(t, "every Connect accounted for", func() bool {
		return answered+int(srv.Stats().ConnectRateLimited) >= sent
	})
	elapsed := time.Since(start)
	limit := ratelimit.DefaultBurst + int(ratelimit.DefaultRefillPerSecond*elapsed.Seconds()) + 1
	if answered < ratelimit.DefaultBurst || answered > limit {
		t.Fatalf("answered %d of %d Connects in %v; want %d..%d", answered, sent, elapsed, ratelimit.DefaultBurst, limit)
	}
	if rl := srv.Stats().ConnectRateLimited; int(rl) != sent-answered {
		t.Fatalf("ConnectRateLimited = %d, want %d", rl, sent-answered)
	}
	t.Logf("answered %d of %d in %v", answered, sent, elapsed)

	// Another source IPv4 has its own, full budget.
	other := udpSocketOrSkip(t, netip.MustParseAddr("127.0.0.2"))
	sendTo(t, other, srv.Addr(), connectFrame(freshHello(t)))
	d, _, ok := recvDatagram(t, other, waitLong)
	if !ok {
		t.Fatal("127.0.0.2 got no answer: its budget is not its own")
	}
	if h, _ := parsePlain(t, d); h.Type != wire.TypeConnectAccepted {
		t.Fatalf("127.0.0.2 got %v", h.Type)
	}
}

// TestUDPConnectBudgetPerIP uses a budget that does not refill during the test
// (one token per 1000 s), so every count is exact: the budget is keyed by the
// IPv4 address alone (a second port of 127.0.0.1 shares it), every plain and
// legacy datagram costs a token, and 127.0.0.2 has its own bucket.
func TestUDPConnectBudgetPerIP(t *testing.T) {
	const burst = 4
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.ConnectBudget = ratelimit.Config{Burst: burst, RefillPerSecond: 0.001}
	})
	a := udpSocket(t, loopback)
	b := udpSocket(t, loopback)
	// Three rejected hellos and one legacy Connect use up the bucket of 127.0.0.1.
	for range burst - 1 {
		sendTo(t, a, srv.Addr(), connectFrame(nil))
		expectRejected(t, a, wire.RejectProtocolMissing)
	}
	sendTo(t, b, srv.Addr(), legacyPacket(wire.TypeConnect, nil))
	if _, _, ok := recvDatagram(t, b, waitLong); !ok {
		t.Fatal("legacy Connect within the budget got no answer")
	}
	before := srv.Stats().ConnectRateLimited
	sendTo(t, a, srv.Addr(), connectFrame(nil))
	sendTo(t, b, srv.Addr(), connectFrame(freshHello(t)))
	sendTo(t, b, srv.Addr(), legacyPacket(wire.TypeConnect, nil))
	sendTo(t, a, srv.Addr(), plainFrame(gamemsg.TypeEntitySpawn, wire.Unreliable, nil))

	// 127.0.0.2 is answered; by then the server has read the four above.
	other := udpSocketOrSkip(t, netip.MustParseAddr("127.0.0.2"))
	sendTo(t, other, srv.Addr(), connectFrame(nil))
	expectRejected(t, other, wire.RejectProtocolMissing)

	if got := srv.Stats().ConnectRateLimited - before; got != 4 {
		t.Fatalf("ConnectRateLimited grew by %d, want 4", got)
	}
	for _, c := range []*net.UDPConn{a, b} {
		if d, _, ok := recvDatagram(t, c, quietWait); ok {
			t.Fatalf("%s got an answer beyond its budget: % x", localAddr(c), head(d))
		}
	}
	if pf := srv.Stats().PlaintextFramesDropped; pf != 0 {
		t.Fatalf("a rate-limited datagram was parsed (PlaintextFramesDropped %d)", pf)
	}
}

// udpSocketOrSkip opens a socket on another loopback address, skipping the
// test where the system does not route all of 127.0.0.0/8 to lo.
func udpSocketOrSkip(t *testing.T, addr netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		t.Skipf("cannot bind %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
