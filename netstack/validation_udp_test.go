package netstack_test

// Address validation and the DoS rules of docs/protocol.md §3.5–§3.6, on real
// UDP over 127.0.0.0/8: several 127.x source addresses are bound by the
// sockets; nothing is ever sent outside 127.0.0.0/8 (and ::1).

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// v4Hello returns a fresh v4 ClientHello (1176 bytes) echoing cookie.
func v4Hello(t *testing.T, cookie []byte) []byte {
	t.Helper()
	hs, err := handshake.NewClientHandshake4(nil)
	if err != nil {
		t.Fatal(err)
	}
	return hs.Hello4(cookie)
}

// floodSource is one attacking socket and what it sent and got back.
type floodSource struct {
	conn       *net.UDPConn
	sent, back int // bytes
	answers    []wire.MessageType
}

// send sends d to the server and counts it.
func (f *floodSource) send(t *testing.T, to netip.AddrPort, d []byte) {
	t.Helper()
	sendTo(t, f.conn, to, d)
	f.sent += len(d)
}

// collect reads every datagram already queued on the socket. The caller has
// made sure the server answered everything first (a later probe was answered).
func (f *floodSource) collect(t *testing.T) {
	t.Helper()
	for {
		d, _, ok := recvDatagram(t, f.conn, 2*time.Millisecond)
		if !ok {
			return
		}
		f.back += len(d)
		pkt := d
		if len(d) > 0 && d[0] == 0x01 {
			pkt = d[1:] // a plain frame; otherwise a bare answer to a v1 Connect
		}
		h, _, err := wire.ParsePacket(pkt)
		if err != nil {
			h.Type = 0
		}
		f.answers = append(f.answers, h.Type)
	}
}

// probe proves that the server has handled every datagram sent before it: the
// receive path is one goroutine reading in order, and its answer to the probe
// is written after every earlier answer.
func probe(t *testing.T, srv *netstack.Server) {
	t.Helper()
	c := udpSocketOrSkip(t, netip.MustParseAddr("127.0.99.99"))
	sendTo(t, c, srv.Addr(), connectFrame(v4Hello(t, nil)))
	if _, _, ok := recvDatagram(t, c, waitLong); !ok {
		t.Fatal("the probe got no answer")
	}
}

// floodSources binds n sockets on distinct 127.20.x.y addresses, 50 per /24.
func floodSources(t *testing.T, n int) []*floodSource {
	t.Helper()
	out := make([]*floodSource, n)
	for i := range out {
		a := netip.AddrFrom4([4]byte{127, 20, byte(i / 50), byte(i%50 + 1)})
		out[i] = &floodSource{conn: udpSocketOrSkip(t, a)}
	}
	return out
}

// TestUDPHelloFloodFrom250Sources: 250 sources flood hellos that never echo
// a cookie (fresh v4 hellos, hellos with forged cookies, v4 hellos of the
// wrong size, future versions, garbage). No source gets back more bytes than
// it sent, nothing but CookieReply and ConnectRejected comes back, and no
// signature, key agreement or half-open entry is spent (the counters prove
// it). In internet mode v3 and v1 requests join the flood and are refused
// within the same 1× rule.
func TestUDPHelloFloodFrom250Sources(t *testing.T) {
	for _, tc := range []struct {
		name                string
		internet, unlimited bool
	}{{"private", false, false}, {"private, budgets lifted", false, true}, {"internet", true, false}} {
		internet := tc.internet
		t.Run(tc.name, func(t *testing.T) {
			srv := quietServer(t, func(c *netstack.ServerConfig) {
				c.Internet = internet
				if tc.unlimited {
					fullForce(c)
					c.UnvalidatedReplyBudget = ratelimit.BucketConfig{Burst: 1 << 20, RefillPerSecond: 1e6}
				}
			})
			sources := floodSources(t, 250)
			forged := make([]byte, 20)
			_, _ = rand.Read(forged)
			short := v4Hello(t, nil)[:100]
			future := append(helloBytes(9, 1, goodKey), make([]byte, 1200)...)
			for batch := 0; batch < len(sources); batch += 25 {
				for _, f := range sources[batch : batch+25] {
					f.send(t, srv.Addr(), connectFrame(v4Hello(t, nil)))
					f.send(t, srv.Addr(), connectFrame(v4Hello(t, nil)))
					f.send(t, srv.Addr(), connectFrame(v4Hello(t, forged)))
					f.send(t, srv.Addr(), connectFrame(short))
					f.send(t, srv.Addr(), connectFrame(future))
					f.send(t, srv.Addr(), []byte{0x01, 0xFF})
					if internet {
						f.send(t, srv.Addr(), connectFrame(helloBytes(3, 1, goodKey)))
						f.send(t, srv.Addr(), legacyPacket(wire.TypeConnect, make([]byte, 40)))
					}
				}
				// Pace the flood so that the server's socket buffer never
				// overflows: every datagram is read and judged.
				total := 0
				for _, f := range sources[:batch+25] {
					total += f.sent
				}
				eventually(t, "the batch read", func() bool { return srv.Stats().PlainBytesReceived >= uint64(total) })
			}
			probe(t, srv)
			var sentAll, backAll int
			for i, f := range sources {
				f.collect(t)
				if f.back > f.sent {
					t.Fatalf("source %d got %d bytes back for %d sent", i, f.back, f.sent)
				}
				for _, typ := range f.answers {
					if typ != wire.TypeCookieReply && typ != wire.TypeConnectRejected {
						t.Fatalf("source %d was answered %v", i, typ)
					}
				}
				sentAll += f.sent
				backAll += f.back
			}
			st := srv.Stats()
			if st.HandshakesSigned != 0 || srv.HalfOpenCount() != 0 || srv.SlotCount() != 0 {
				t.Fatalf("%d signatures, %d half-open, %d slots before any validation", st.HandshakesSigned, srv.HalfOpenCount(), srv.SlotCount())
			}
			if st.CookiesSent == 0 || st.CookiesVerified != 0 || st.CookiesFailed == 0 {
				t.Fatalf("cookies sent %d verified %d failed %d", st.CookiesSent, st.CookiesVerified, st.CookiesFailed)
			}
			if st.PlainBytesSent > st.PlainBytesReceived {
				t.Fatalf("server sent %d plain bytes for %d received", st.PlainBytesSent, st.PlainBytesReceived)
			}
			if internet && st.ProtocolV3Refused == 0 {
				t.Fatal("no v3 hello refused in internet mode")
			}
			t.Logf("flood: %d bytes sent, %d back; cookies %d, refused by prefix budget %d, malformed %d",
				sentAll, backAll, st.CookiesSent, st.PrefixRateLimited, st.MalformedDropped)
		})
	}
}

// cookieEchoer is an attacker that proves its address (it receives and
// echoes cookies) but never finishes a handshake: each of its hellos costs a
// signature and leaves a half-open entry.
func cookieEchoer(t *testing.T, conn *net.UDPConn, server netip.AddrPort, stop <-chan struct{}, accepted *atomic.Int64) {
	buf := make([]byte, 2048)
	tick := time.NewTicker(125 * time.Millisecond) // 8 hellos a second per socket
	defer tick.Stop()
	for range 400 { // bounded: at most 50 s of flood
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		hs, err := handshake.NewClientHandshake4(nil)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := conn.WriteToUDPAddrPort(connectFrame(hs.Hello4(nil)), server); err != nil {
			return
		}
		for range 2 {
			_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			n, _, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			h, payload, err := wire.ParsePacket(buf[1:n])
			if err != nil {
				continue
			}
			switch h.Type {
			case wire.TypeCookieReply:
				cr, err := handshake.ParseCookieReply(payload)
				if err == nil {
					_, _ = conn.WriteToUDPAddrPort(connectFrame(hs.Hello4(cr.Cookie)), server)
				}
			case wire.TypeConnectAccepted:
				accepted.Add(1)
			}
		}
	}
}

// startHalfOpenFlood runs the half-open flood from attackers (two
// addresses): 16 ports each, each at 8 hellos a second, echoing every cookie
// and never finishing.
func startHalfOpenFlood(t *testing.T, srv *netstack.Server, attackers ...string) (stop func(), accepted *atomic.Int64) {
	t.Helper()
	accepted = new(atomic.Int64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, a := range attackers {
		for range 16 {
			conn := udpSocketOrSkip(t, netip.MustParseAddr(a))
			wg.Add(1)
			go func() {
				defer wg.Done()
				cookieEchoer(t, conn, srv.Addr(), done, accepted)
			}()
		}
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop, accepted
}

// fullForce lifts the per-source budgets, so that the flood reaches the
// half-open table at full rate: the table and max_clients alone must hold.
func fullForce(c *netstack.ServerConfig) {
	c.ConnectBudget = ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1e6}
	c.PrefixBudget = ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1e6}
}

// dialFrom dials srv from a socket bound to addr.
func dialFrom(t *testing.T, srv *netstack.Server, addr netip.Addr, name string) (*netstack.Client, error) {
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Conn: conn})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t.Cleanup(func() { c.Close(); conn.Close() })
	return c, nil
}

// TestUDPHalfOpenFloodDoesNotLockOut: the attack that locked every player out
// of a v3 server (half-open handshakes held max_clients slots) does not keep
// 3 real clients out of a 3-slot server. With the default budgets the
// attackers share the real clients' /24 and are slowed by the per-address
// budget; at full force (budgets lifted) they keep a small half-open table
// full, and the real clients still get in: half-open handshakes never count
// toward max_clients, and a full table evicts from the most represented
// prefix.
func TestUDPHalfOpenFloodDoesNotLockOut(t *testing.T) {
	t.Run("default budgets", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) { c.MaxClients = 3 })
		stop, _ := startHalfOpenFlood(t, srv, "127.0.0.2", "127.0.0.3")
		eventually(t, "the flood under way", func() bool { return srv.Stats().CookiesSent >= 32 })
		for i := range 3 {
			dial(t, srv, fmt.Sprintf("real%d", i))
		}
		st := srv.Stats()
		stop()
		if n := len(srv.Clients()); n != 3 {
			t.Fatalf("%d clients admitted, want 3", n)
		}
		t.Logf("half-open %d, signatures %d, address budget refusals %d", st.HalfOpen, st.HandshakesSigned, st.ConnectRateLimited)
	})
	t.Run("full force", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) {
			fullForce(c)
			c.MaxClients = 3
			c.HalfOpen = netstack.HalfOpenConfig{Max: 8}
		})
		stop, accepted := startHalfOpenFlood(t, srv, "127.0.0.2", "127.0.0.3")
		eventually(t, "the attackers fill the half-open table", func() bool {
			return accepted.Load() >= 16 && srv.HalfOpenCount() == 8
		})
		for i := range 3 {
			if _, err := dialFrom(t, srv, netip.AddrFrom4([4]byte{127, 0, byte(10 + i), 1}), fmt.Sprintf("real%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		st := srv.Stats()
		stop()
		if n := len(srv.Clients()); n != 3 {
			t.Fatalf("%d clients admitted, want 3", n)
		}
		if st.HalfOpenEvicted == 0 {
			t.Fatal("the table never filled")
		}
		t.Logf("attackers got %d ConnectAccepted; evicted %d, signatures %d", accepted.Load(), st.HalfOpenEvicted, st.HandshakesSigned)
	})
}

// TestUDP32ClientsDuringFlood: a default (32-slot) server admits 32 real
// clients, each from its own address, while the half-open flood runs at full
// force (per-source budgets lifted: the attackers hold as many half-open
// handshakes as the per-address caps let them).
func TestUDP32ClientsDuringFlood(t *testing.T) {
	srv := quietServer(t, fullForce)
	stop, accepted := startHalfOpenFlood(t, srv, "127.0.0.2", "127.0.0.3")
	eventually(t, "the attackers hold half-open handshakes", func() bool {
		return accepted.Load() >= 32 && srv.HalfOpenCount() >= 16
	})
	var wg sync.WaitGroup
	errs := make(chan error, netstack.DefaultMaxClients)
	for i := range netstack.DefaultMaxClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := dialFrom(t, srv, netip.AddrFrom4([4]byte{127, 40, byte(i), 1}), fmt.Sprintf("p%d", i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := srv.Stats()
	stop()
	if n := len(srv.Clients()); n != netstack.DefaultMaxClients {
		t.Fatalf("%d clients admitted, want %d", n, netstack.DefaultMaxClients)
	}
	t.Logf("attackers got %d ConnectAccepted; half-open %d, half-open cap refusals %d", accepted.Load(), st.HalfOpen, st.HalfOpenCapRefused)
}

// TestUDPCookieBinding: a cookie proves one source and one hello. Echoed
// from another port, or with another hello, it fails and only a fresh
// CookieReply comes back; nothing is signed.
func TestUDPCookieBinding(t *testing.T) {
	srv := quietServer(t, nil)
	a := newRawPeer4(t, srv.Addr(), nil)
	cookie := a.fetchCookie()
	b := udpSocket(t, loopback)
	for name, d := range map[string][]byte{
		"other port":  connectFrame(a.hs.Hello4(cookie)),
		"other hello": connectFrame(v4Hello(t, cookie)),
	} {
		conn := b
		if name == "other hello" {
			conn = a.conn
		}
		sendTo(t, conn, srv.Addr(), d)
		got, _, ok := recvDatagram(t, conn, waitLong)
		if !ok {
			t.Fatalf("%s: no answer", name)
		}
		if h, _ := parsePlain(t, got); h.Type != wire.TypeCookieReply || len(got) > len(d) {
			t.Fatalf("%s: answered %v (%d bytes for %d)", name, h.Type, len(got), len(d))
		}
	}
	st := srv.Stats()
	if st.CookiesFailed != 2 || st.HandshakesSigned != 0 || srv.HalfOpenCount() != 0 {
		t.Fatalf("cookies failed %d, signatures %d, half-open %d", st.CookiesFailed, st.HandshakesSigned, srv.HalfOpenCount())
	}
	// The right source with the right hello is answered.
	id := a.connect(srv.Pin())
	if st := srv.Stats(); st.CookiesVerified != 1 || st.HandshakesSigned != 1 || srv.HalfOpenCount() != 1 || id == 0 {
		t.Fatalf("after a valid echo: verified %d, signatures %d, half-open %d", st.CookiesVerified, st.HandshakesSigned, srv.HalfOpenCount())
	}
}

// TestUDPRepeatedV4HelloGetsCachedAnswer: a v4 hello repeated with its cookie
// (the client resends until answered) is answered with the cached
// ConnectAccepted, without a new signature.
func TestUDPRepeatedV4HelloGetsCachedAnswer(t *testing.T) {
	srv := quietServer(t, nil)
	p := newRawPeer4(t, srv.Addr(), nil)
	p.connect(srv.Pin())
	for range 3 {
		p.write(connectFrame(p.hello))
		if again := p.nextPlain(); !bytes.Equal(again, p.accept) {
			t.Fatal("a repeated hello got a different answer")
		}
	}
	if st := srv.Stats(); st.HandshakesSigned != 1 {
		t.Fatalf("%d signatures for one handshake", st.HandshakesSigned)
	}
	p.sendFinished("v4", 1)
	p.await(gamemsg.TypeGameStateSync)
	if cl := srv.Clients(); len(cl) != 1 || cl[0].Name != "v4" {
		t.Fatalf("Clients() = %+v", cl)
	}
}

func TestUDPBudgets(t *testing.T) {
	slow := 0.001 // one token per 1000 s: every count is exact
	t.Run("per prefix", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) {
			c.PrefixBudget = ratelimit.Config{Burst: 4, RefillPerSecond: slow}
		})
		a := udpSocketOrSkip(t, netip.MustParseAddr("127.60.1.1"))
		b := udpSocketOrSkip(t, netip.MustParseAddr("127.60.1.2"))
		other := udpSocketOrSkip(t, netip.MustParseAddr("127.60.2.1"))
		for range 2 {
			sendTo(t, a, srv.Addr(), connectFrame(v4Hello(t, nil)))
			sendTo(t, b, srv.Addr(), connectFrame(v4Hello(t, nil)))
		}
		sendTo(t, b, srv.Addr(), connectFrame(v4Hello(t, nil))) // the /24 is spent
		sendTo(t, other, srv.Addr(), connectFrame(v4Hello(t, nil)))
		if _, _, ok := recvDatagram(t, other, waitLong); !ok {
			t.Fatal("another /24 was refused")
		}
		// A cookie is counted once its write returns: after the answer may
		// have arrived.
		eventually(t, "1 prefix refusal and 5 cookies counted", func() bool {
			st := srv.Stats()
			return st.PrefixRateLimited == 1 && st.CookiesSent == 5
		})
		time.Sleep(quietWait) // and no more
		if st := srv.Stats(); st.PrefixRateLimited != 1 || st.CookiesSent != 5 {
			t.Fatalf("prefix refusals %d, cookies %d; want 1 and 5", st.PrefixRateLimited, st.CookiesSent)
		}
	})
	t.Run("signatures", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) {
			c.HandshakeBudget = ratelimit.BucketConfig{Burst: 2, RefillPerSecond: slow}
		})
		for range 2 {
			newRawPeer4(t, srv.Addr(), nil).connect(srv.Pin())
		}
		p := newRawPeer4(t, srv.Addr(), nil)
		p.hello = p.hs.Hello4(p.fetchCookie())
		p.write(connectFrame(p.hello))
		probe(t, srv)
		if d := drain(t, p.conn, quietWait); len(d) != 0 {
			t.Fatalf("a handshake beyond the signature budget was answered: % x", head(d[0]))
		}
		if st := srv.Stats(); st.HandshakeBudgetRefused != 1 || st.HandshakesSigned != 2 {
			t.Fatalf("budget refusals %d, signatures %d; want 1 and 2", st.HandshakeBudgetRefused, st.HandshakesSigned)
		}
	})
	t.Run("replies to unvalidated sources", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) {
			c.UnvalidatedReplyBudget = ratelimit.BucketConfig{Burst: 3, RefillPerSecond: slow}
		})
		c := udpSocket(t, loopback)
		for range 5 {
			sendTo(t, c, srv.Addr(), connectFrame(v4Hello(t, nil)))
		}
		if d := drain(t, c, quietWait); len(d) != 3 {
			t.Fatalf("%d answers, want 3", len(d))
		}
		if st := srv.Stats(); st.UnvalidatedReplyRefused != 2 || st.CookiesSent != 3 {
			t.Fatalf("refusals %d, cookies %d; want 2 and 3", st.UnvalidatedReplyRefused, st.CookiesSent)
		}
	})
}

// TestUDPLegacyReplySize: the answer to a v1 Connect is at most 3× its size
// where v3 is allowed, at most 1× in internet mode; one that would be larger
// is not sent.
func TestUDPLegacyReplySize(t *testing.T) {
	for _, internet := range []bool{false, true} {
		srv := quietServer(t, func(c *netstack.ServerConfig) { c.Internet = internet })
		factor := 3
		if internet {
			factor = 1
		}
		c := udpSocket(t, loopback)
		for _, n := range []int{0, 5, 20, 100} {
			req := legacyPacket(wire.TypeConnect, make([]byte, n))
			sendTo(t, c, srv.Addr(), req)
			probe(t, srv)
			for _, d := range drain(t, c, quietWait) {
				if len(d) > factor*len(req) {
					t.Fatalf("internet=%v: %d-byte answer to a %d-byte v1 Connect", internet, len(d), len(req))
				}
			}
		}
		if internet && srv.Stats().AmplificationDropped == 0 {
			t.Fatal("internet mode answered a 23-byte v1 Connect")
		}
	}
}

// TestUDPWithoutAddressValidation: with validation off (private binds only)
// a v4 hello is answered at once.
func TestUDPWithoutAddressValidation(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.SkipAddressValidation = true })
	c := udpSocket(t, loopback)
	sendTo(t, c, srv.Addr(), connectFrame(v4Hello(t, nil)))
	d, _, ok := recvDatagram(t, c, waitLong)
	if !ok {
		t.Fatal("no answer")
	}
	if h, p := parsePlain(t, d); h.Type != wire.TypeConnectAccepted || len(p) != handshake.ConnectAcceptedSize {
		t.Fatalf("answered %v", h.Type)
	}
	dial(t, srv, "quick")
	if _, err := netstack.NewServer(netstack.ServerConfig{Internet: true, SkipAddressValidation: true}); err == nil {
		t.Fatal("internet mode without address validation was accepted")
	}
}

// TestUDPFallbackToV3Server: a v4 client meets a server that speaks only v3
// (it answers ProtocolTooNew with server_version 3) and falls back; with
// Protocol 4 it refuses to.
func TestUDPFallbackToV3Server(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.MaxProtocol = 3 })
	c := dial(t, srv, "old")
	if c.Protocol() != 3 {
		t.Fatalf("protocol %d, want 3", c.Protocol())
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	_, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "strict", Pin: srv.Pin(), Protocol: 4})
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || he.Code != netstack.HandshakeRejected || he.Reason != wire.RejectProtocolTooNew {
		t.Fatalf("strict v4 Dial: %v, want HandshakeRejected ProtocolTooNew", err)
	}
	// A v4 server speaks v4 to the same client, and v3 to a v3 one.
	srv4 := quietServer(t, nil)
	if c := dial(t, srv4, "new"); c.Protocol() != 4 {
		t.Fatalf("protocol %d against a v4 server", c.Protocol())
	}
	c3, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv4.Addr(), Name: "v3", Pin: srv4.Pin(), Protocol: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if c3.Protocol() != 3 {
		t.Fatalf("protocol %d, want 3", c3.Protocol())
	}
}

// TestUDPDowngradeDetected: an on-path attacker answers the v4 hello with a
// forged ProtocolTooNew (server_version 3). The client falls back to v3, and
// the v4 server's signed v3 answer carries the downgrade sentinel: the client
// refuses the session and sends nothing sealed.
func TestUDPDowngradeDetected(t *testing.T) {
	srv := quietServer(t, nil)
	front := udpSocket(t, loopback) // what the client dials
	back := udpSocket(t, loopback)  // the attacker's socket toward the server
	var sealedSeen atomic.Bool
	go func() { // the on-path attacker: bounded by the sockets' lifetime
		buf := make([]byte, 65536)
		var client netip.AddrPort
		for {
			_ = front.SetReadDeadline(time.Now().Add(waitLong))
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			client = from
			d := buf[:n]
			if d[0] == 0x02 {
				sealedSeen.Store(true)
			}
			if h, p, err := wire.ParsePacket(d[1:]); err == nil && h.Type == wire.TypeConnect && len(p) == handshake.ClientHello4Size {
				pl := wire.AppendConnectRejected(nil, &wire.ConnectRejected{Reason: uint8(wire.RejectProtocolTooNew), ServerVersion: 3, Detail: "forged"})
				hdr := wire.Header{Type: wire.TypeConnectRejected}
				_, _ = front.WriteToUDPAddrPort(wire.AppendPacket([]byte{0x01}, &hdr, pl), client)
				continue
			}
			_, _ = back.WriteToUDPAddrPort(d, srv.Addr())
			_ = back.SetReadDeadline(time.Now().Add(waitLong))
			if n, _, err := back.ReadFromUDPAddrPort(buf); err == nil {
				_, _ = front.WriteToUDPAddrPort(buf[:n], client)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	_, err := netstack.Dial(ctx, netstack.ClientConfig{Server: localAddr(front), Name: "victim", Pin: srv.Pin()})
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || he.Code != netstack.HandshakeDowngrade {
		t.Fatalf("Dial through the downgrading attacker: %v, want HandshakeDowngrade", err)
	}
	if sealedSeen.Load() {
		t.Fatal("the client sent a sealed frame after detecting the downgrade")
	}
}

// TestUDPInternetModeWildcard: an internet-mode server bound to the dual-stack
// wildcard, reached on 127.0.0.1 and ::1 only, admits v4 clients from both
// families and refuses v3 with ProtocolTooOld in an answer no larger than the
// hello.
func TestUDPInternetModeWildcard(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Internet, c.Bind = true, "::" })
	port := srv.Addr().Port()
	v4addr := netip.AddrPortFrom(loopback, port)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: v4addr, Name: "ipv4", Pin: srv.Pin()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Protocol() != 4 {
		t.Fatalf("protocol %d", c.Protocol())
	}
	if six, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Logf("IPv6 loopback unavailable (%v): the ::1 part is skipped", err)
	} else {
		six.Close()
		c6, err := netstack.Dial(ctx, netstack.ClientConfig{Server: netip.AddrPortFrom(netip.IPv6Loopback(), port), Name: "ipv6", Pin: srv.Pin()})
		if err != nil {
			t.Fatal(err)
		}
		defer c6.Close()
	}
	// v3 is refused, in an answer no larger than the hello.
	raw := udpSocket(t, loopback)
	req := connectFrame(freshHello(t))
	sendTo(t, raw, v4addr, req)
	d := expectRejectedV(t, raw, wire.RejectProtocolTooOld, 4)
	if len(d) > len(req) {
		t.Fatalf("%d-byte refusal of a %d-byte v3 hello", len(d), len(req))
	}
	_, err = netstack.Dial(ctx, netstack.ClientConfig{Server: v4addr, Name: "old", Pin: srv.Pin(), Protocol: 3})
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || he.Reason != wire.RejectProtocolTooOld {
		t.Fatalf("v3 Dial: %v, want ProtocolTooOld", err)
	}
	if st := srv.Stats(); st.ProtocolV3Refused != 2 || st.CookiesVerified < 1 {
		t.Fatalf("v3 refused %d, cookies verified %d", st.ProtocolV3Refused, st.CookiesVerified)
	}
	if n := len(srv.Clients()); n < 1 {
		t.Fatalf("%d clients", n)
	}
}
