package netstack

import (
	"crypto/ed25519"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// sinkConn is a PacketConn that counts what the server writes and reads
// nothing: the receive path is driven by calling handleDatagram.
type sinkConn struct {
	net.PacketConn // nil: only the methods below are used
	sent, bytes    atomic.Uint64
	last           []byte
}

func (c *sinkConn) ReadFromUDPAddrPort([]byte) (int, netip.AddrPort, error) {
	return 0, netip.AddrPort{}, net.ErrClosed
}

func (c *sinkConn) WriteToUDPAddrPort(b []byte, _ netip.AddrPort) (int, error) {
	c.sent.Add(1)
	c.bytes.Add(uint64(len(b)))
	c.last = append(c.last[:0], b...)
	return len(b), nil
}

func (c *sinkConn) Close() error { return nil }

func sinkServer(t testing.TB, mod func(*ServerConfig)) (*Server, *sinkConn) {
	t.Helper()
	conn := &sinkConn{last: make([]byte, 0, 2048)}
	cfg := ServerConfig{
		Conn: conn, Identity: ed25519.NewKeyFromSeed(make([]byte, 32)), Logger: slog.New(slog.DiscardHandler),
		ConnectBudget:          ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1e9},
		PrefixBudget:           ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1e9},
		UnvalidatedReplyBudget: ratelimit.BucketConfig{Burst: 1 << 20, RefillPerSecond: 1e9},
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, conn
}

func v4Connect(t testing.TB, cookie []byte) ([]byte, *handshake.ClientHandshake) {
	t.Helper()
	hs, err := handshake.NewClientHandshake4(nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := wire.Header{Type: wire.TypeConnect}
	return wire.AppendPacket([]byte{classPlain}, &hdr, hs.Hello4(cookie)), hs
}

// Answering an unvalidated hello is the path a flood exercises: it must not
// allocate, keep state, or cost a signature.
func TestUnvalidatedAnswersDoNotAllocate(t *testing.T) {
	s, conn := sinkServer(t, nil)
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	hello, _ := v4Connect(t, nil)
	bad := append([]byte(nil), hello...)
	bad[len(bad)-1] = 1 // nonzero padding: MalformedHandshake
	forged := append([]byte(nil), hello...)
	forged[1+wire.HeaderSize+handshake.HelloCoreSize] = 20 // a cookie of zeros: fails
	now := time.Now()
	for name, d := range map[string][]byte{"cookie reply": hello, "refusal": bad, "forged cookie": forged} {
		if n := testing.AllocsPerRun(500, func() { s.handleDatagram(d, from, false, now) }); n != 0 {
			t.Errorf("%s: %v allocations per datagram", name, n)
		}
	}
	st := s.Stats()
	if st.HandshakesSigned != 0 || s.HalfOpenCount() != 0 {
		t.Fatalf("signatures %d, half-open %d before any validation", st.HandshakesSigned, s.HalfOpenCount())
	}
	if st.PlainBytesSent > st.PlainBytesReceived || conn.sent.Load() == 0 {
		t.Fatalf("sent %d bytes for %d received (%d datagrams)", st.PlainBytesSent, st.PlainBytesReceived, conn.sent.Load())
	}
}

func BenchmarkAnswerUnvalidatedHello(b *testing.B) {
	s, _ := sinkServer(b, nil)
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	hello, _ := v4Connect(b, nil)
	now := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(hello)))
	for b.Loop() {
		now = now.Add(time.Microsecond) // virtual time: the budgets refill
		s.handleDatagram(hello, from, false, now)
	}
	if st := s.Stats(); st.CookiesSent != uint64(b.N) {
		b.Fatalf("%d cookies for %d hellos", st.CookiesSent, b.N)
	}
}

// FuzzUnvalidatedDatagram: whatever a source that has not proven its address
// sends (any class byte, any payload), an internet-mode server never panics,
// never answers with more bytes than it received, and never signs.
func FuzzUnvalidatedDatagram(f *testing.F) {
	hello, _ := v4Connect(f, nil)
	forged, _ := v4Connect(f, make([]byte, 20))
	hdr := wire.Header{Type: wire.TypeConnect}
	v3 := wire.AppendPacket([]byte{classPlain}, &hdr, (&handshake.ClientHello{Version: 3, Suite: 1, EphemeralPub: [32]byte{9}}).Append(nil))
	for _, seed := range [][]byte{hello, forged, v3, v3[1:], {classPlain}, {classSealed}, {classLegacy, 0x52, 0x50, 0x53}} {
		f.Add(seed)
	}
	s, conn := sinkServer(f, func(c *ServerConfig) { c.Internet = true })
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	now := time.Now() // virtual time: one millisecond per datagram
	f.Fuzz(func(t *testing.T, d []byte) {
		before := conn.bytes.Load()
		n := conn.sent.Load()
		now = now.Add(time.Millisecond)
		s.handleDatagram(d, from, false, now)
		if conn.sent.Load() > n+1 {
			t.Fatalf("%d answers to one datagram", conn.sent.Load()-n)
		}
		if got := conn.bytes.Load() - before; got > uint64(len(d)) {
			t.Fatalf("%d bytes answered to a %d-byte datagram %x", got, len(d), d)
		}
		if s.Stats().HandshakesSigned != 0 {
			t.Fatalf("a signature for an unvalidated datagram %x", d)
		}
	})
}

// benchHellos is a pool of distinct v4 hellos (fresh ephemeral keys), built
// once: client key generation is not the server's cost.
func benchHellos(b *testing.B, n int) [][]byte {
	b.Helper()
	out := make([][]byte, n)
	for i := range out {
		out[i], _ = v4Connect(b, nil)
	}
	return out
}

// benchServerHandshakes measures the server's side of one handshake: with
// address validation the hello answered with a cookie, then its echo verified,
// signed and entered in the half-open table; without it the hello signed at
// once. Every iteration comes from another source endpoint, so no answer is
// a cached repeat.
func benchServerHandshakes(b *testing.B, validate bool) {
	s, conn := sinkServer(b, func(c *ServerConfig) {
		c.SkipAddressValidation = !validate
		c.HandshakeBudget = ratelimit.BucketConfig{Burst: 1 << 20, RefillPerSecond: 1e9}
		c.HalfOpen = HalfOpenConfig{Max: 1 << 16, PerAddress: 1 << 16, PerPrefix: 1 << 16}
	})
	hellos := benchHellos(b, 256)
	echo := make([]byte, 0, handshake.HelloDatagramSize)
	now := time.Now()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		// 127.0.0.1, 127.0.0.2, ...: never 127.0.0.0, which the policy refuses.
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte((i + 1) >> 16), byte((i + 1) >> 8), byte(i + 1)}), uint16(1+i%60000))
		h := hellos[i%len(hellos)]
		now = now.Add(time.Microsecond)
		s.handleDatagram(h, from, false, now)
		if validate {
			_, payload, _ := wire.ParsePacket(conn.last[1:])
			cr, err := handshake.ParseCookieReply(payload)
			if err != nil {
				b.Fatal(err)
			}
			echo = append(echo[:0], h...)
			echo[1+wire.HeaderSize+handshake.HelloCoreSize] = byte(len(cr.Cookie))
			copy(echo[1+wire.HeaderSize+handshake.HelloCoreSize+1:], cr.Cookie)
			s.handleDatagram(echo, from, false, now)
		}
		if i++; i%4096 == 0 {
			b.StopTimer()
			s.halfOpen.clearAll()
			b.StartTimer()
		}
	}
	if st := s.Stats(); st.HandshakesSigned != uint64(i) {
		b.Fatalf("%d signatures for %d handshakes", st.HandshakesSigned, i)
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "handshakes/s")
}

func BenchmarkServerHandshakeValidated(b *testing.B)   { benchServerHandshakes(b, true) }
func BenchmarkServerHandshakeUnvalidated(b *testing.B) { benchServerHandshakes(b, false) }
