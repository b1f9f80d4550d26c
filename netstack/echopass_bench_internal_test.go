package netstack

import (
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// heldTransport keeps what is written, for the benchmark to hand to the
// sessions' client ends; it reads nothing (the server is not started).
type heldTransport struct {
	buf  []byte
	sent []heldDatagram
}

type heldDatagram struct {
	to         netip.AddrPort
	start, end int
}

func (h *heldTransport) ReadBatch([]transport.Message) (int, error) { return 0, net.ErrClosed }
func (h *heldTransport) WriteBatch(msgs []transport.Message) (int, error) {
	for _, m := range msgs {
		start := len(h.buf)
		h.buf = append(h.buf, m.Buf[:m.N]...)
		h.sent = append(h.sent, heldDatagram{to: m.Addr, start: start, end: len(h.buf)})
	}
	return len(msgs), nil
}
func (h *heldTransport) LocalAddr() netip.AddrPort       { return netip.MustParseAddrPort("127.0.0.1:1") }
func (h *heldTransport) MaxDatagram() int                { return transport.MaxUDPDatagram }
func (h *heldTransport) SetReadDeadline(time.Time) error { return nil }
func (h *heldTransport) Close() error                    { return nil }
func (h *heldTransport) reset()                          { h.buf, h.sent = h.buf[:0], h.sent[:0] }
func (h *heldTransport) datagram(d heldDatagram) []byte  { return h.buf[d.start:d.end] }
func (h *heldTransport) sentTo() []heldDatagram          { return h.sent }

// echoPassRig is an echo server that is not started, with n admitted v4
// sessions, and their client ends: the benchmark runs the receive passes.
type echoPassRig struct {
	srv     *Server
	tr      *heldTransport
	clients []*session
	addrs   []netip.AddrPort // each client's source address
	byAddr  map[netip.AddrPort]int
	owed    []int // echoes each client received since it last sent
	deliver []deliverFunc
	batch   datagramBatch
	echoes  int
	served  time.Duration // the server's part of the rounds: receive passes and their flushes
}

func newEchoPassRig(b *testing.B, n int) *echoPassRig {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tr := &heldTransport{}
	srv, err := NewServer(ServerConfig{Bind: "127.0.0.1", Identity: priv, Registry: gamemsg.NewRegistry(),
		Logger: slog.New(slog.DiscardHandler), Transport: tr, MaxClients: n})
	if err != nil {
		b.Fatal(err)
	}
	r := &echoPassRig{srv: srv, tr: tr, byAddr: make(map[netip.AddrPort]int), owed: make([]int, n)}
	now := time.Now()
	for i := range n {
		id := uint32(i + 1)
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 2, byte(i >> 8), byte(i)}), 40000)
		var k1, k2 [32]byte
		k1[0], k1[1], k1[2], k2[0], k2[1], k2[2] = 1, byte(i), byte(i>>8), 2, byte(i), byte(i>>8)
		p := &peer{session: srv.newPeerSession(addr, id, handshake.ProtocolVersion4, now, sessionKeys{send: k1, recv: k2}), state: slotConnected}
		p.mu.Lock()
		srv.due.add(p)
		p.mu.Unlock()
		srv.byID[id], srv.byAddr[addr] = p, p
		cli := newSession(tr, srv.Addr(), id, false, handshake.ProtocolVersion4, srv.origin, now, sessionKeys{send: k2, recv: k1}, &srv.chcfg)
		r.clients, r.addrs = append(r.clients, cli), append(r.addrs, addr)
		r.byAddr[addr] = i
		r.owed[i] = echoPassInFlight
		r.deliver = append(r.deliver, func(h *wire.Header, _ []byte) {
			if h.Type == gamemsg.TypeEntityRPC {
				r.owed[i]++
			}
		})
	}
	srv.Handle(gamemsg.TypeEntityRPC, func(id uint32, _ *wire.Header, payload []byte) {
		if srv.Send(id, gamemsg.TypeEntityRPC, wire.Reliable, payload) == nil {
			r.echoes++
		}
	})
	return r
}

// echoPassInFlight is each client's messages in flight, as in bench/many.
const echoPassInFlight = 10

// echoPassDatagrams is how many datagrams one receive pass takes.
const echoPassDatagrams = 2

// round has every client send a datagram of as many messages as echoes it
// was owed (the server's receive passes take them echoPassDatagrams at a
// time), then hands the echo datagrams to the clients, whose Acks leave
// with their next round.
func (r *echoPassRig) round(b *testing.B) {
	rpc := make([]byte, 32) // as bench/many's
	rpc[0], rpc[4] = 1, 3   // an EntityRPC: entity 1, method 3, arguments
	now := time.Now()
	for i, cli := range r.clients {
		for range r.owed[i] {
			if err := cli.sendLocked(gamemsg.TypeEntityRPC, wire.Reliable, rpc, now); err != nil {
				b.Fatal(err)
			}
		}
		r.owed[i] = 0
		r.batch.reset()
		cli.flushLocked(now, &r.batch)
		t0 := time.Now()
		for _, sp := range r.batch.spans {
			r.srv.handleDatagram(r.batch.buf[sp.start:sp.end], r.addrs[i], false, now)
		}
		if i%echoPassDatagrams == echoPassDatagrams-1 {
			r.srv.flushTouched(now)
		}
		r.served += time.Since(t0)
	}
	t0 := time.Now()
	r.srv.flushTouched(now)
	r.served += time.Since(t0)
	for _, d := range r.tr.sentTo() {
		i, ok := r.byAddr[d.to]
		if !ok {
			b.Fatalf("a datagram to %v", d.to)
		}
		cli := r.clients[i]
		cli.receiveLocked(r.srv.reg, r.tr.datagram(d), now, r.deliver[i], nil)
	}
	r.tr.reset()
}

// BenchmarkEchoPass1000 is the server's side of bench/many without the
// system calls: 1,000 sealed v4 sessions, each with 10 reliable 32-byte
// messages in flight to an echo handler (Server.Send), their datagrams
// taken two to a receive pass and the echoes packed at its end. An
// operation is one round: every client sends what it was owed and gets its
// echoes. server-ns/msg is the server's time per echo (its receive passes
// and their flushes, timed apart from the clients' part of the round:
// sealing their datagrams, opening the echoes); ns/msg is the whole
// round's per echo. The server's heldTransport copies each datagram it
// "writes".
func BenchmarkEchoPass1000(b *testing.B) {
	r := newEchoPassRig(b, 1000)
	for range 3 { // the rings and pools grow
		r.round(b)
	}
	r.echoes, r.served = 0, 0
	b.ReportAllocs()
	for b.Loop() {
		r.round(b)
	}
	if r.echoes == 0 {
		b.Fatal("nothing echoed")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(r.echoes), "ns/msg")
	b.ReportMetric(float64(r.served.Nanoseconds())/float64(r.echoes), "server-ns/msg")
	b.ReportMetric(float64(r.echoes)/float64(b.N), "msgs/op")
}
