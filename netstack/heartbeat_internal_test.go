package netstack

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// heartbeatPair is a server session and its client's session, keyed to each
// other, run in virtual time: every step each side's timers run, and what
// one side sends reaches the other within the same step (a receive pass),
// as over a fast link.
type heartbeatPair struct {
	t        *testing.T
	srv, cli *session
	now      time.Time
	reg      validator
	// Datagrams sent by each side.
	srvSent, cliSent int
	trace            func(from *session, datagram []byte)
	cliStep          time.Duration
	cliAt            time.Time
}

func newHeartbeatPair(t *testing.T, version uint16, cliInterval time.Duration) *heartbeatPair {
	t.Helper()
	k := newSessionKit(t)
	now := time.Unix(1000, 0)
	p := &heartbeatPair{t: t, now: now, reg: gamemsg.NewRegistry(), cliStep: 70 * time.Millisecond}
	p.srv = k.server(version, now, nil)
	ccfg := k.cfg
	ccfg.heartbeat = cliInterval
	p.cli = k.client(version, now, &ccfg)
	p.cli.life.finishing = false
	return p
}

// run advances virtual time by d in steps of 10 ms (the server's service
// loop); the client's timers run every cliStep (a client's
// ServiceInterval), so its probes come a little more than an interval
// apart, as from a real client.
func (p *heartbeatPair) run(d time.Duration) {
	p.t.Helper()
	for end := p.now.Add(d); p.now.Before(end); p.now = p.now.Add(10 * time.Millisecond) {
		var b datagramBatch
		if p.now.Sub(p.cliAt) >= p.cliStep {
			p.cliAt = p.now
			p.cli.serviceLocked(p.now, &b)
			p.deliver(&b, p.cli, p.srv)
			b.reset()
		}
		p.srv.serviceLocked(p.now, &b)
		p.deliver(&b, p.srv, p.cli)
	}
}

// deliver hands from's datagrams in b to to, and flushes what to must
// answer at once (the end of a receive pass), delivered in turn.
func (p *heartbeatPair) deliver(b *datagramBatch, from, to *session) {
	p.t.Helper()
	for _, sp := range b.spans {
		d := b.buf[sp.start:sp.end]
		if from == p.srv {
			p.srvSent++
		} else {
			p.cliSent++
		}
		deliver := func(*wire.Header, []byte) {}
		if p.trace != nil {
			p.trace(from, d)
		}
		if !to.receiveLocked(p.reg, d, p.now, deliver, nil) {
			p.t.Fatalf("a datagram from the %s was dropped", side(from))
		}
		if to.out.urgent {
			var r datagramBatch
			to.flushLocked(p.now, &r)
			p.deliver(&r, to, from)
		}
	}
}

func side(s *session) string {
	if s.server {
		return "server"
	}
	return "client"
}

// TestServerAnswersAProbeWithItsOwn: while a v4 client's heartbeat
// probes arrive once a second, the server sends its idle session one
// datagram a second — its answer, which carries the server's own probe —
// not an answer and a probe of its own; and it still measures the round
// trip.
func TestServerAnswersAProbeWithItsOwn(t *testing.T) {
	p := newHeartbeatPair(t, handshake.ProtocolVersion4, time.Second)
	p.run(3 * time.Second)
	p.srvSent, p.cliSent = 0, 0
	p.srv.path.q.hasPing, p.cli.path.q.hasPing = false, false
	var k1 [32]byte
	k1[0] = 1
	opener := seal.NewOpener(k1) // the server's sending key
	var combined int
	p.trace = func(from *session, d []byte) {
		if from != p.srv {
			return
		}
		pkt, err := opener.Open(nil, d, p.now)
		if err != nil {
			t.Fatal(err)
		}
		var probe, answer bool
		r := wire.NewDatagramReader(pkt)
		for {
			var h wire.Header
			payload, ok := r.Next(&h)
			if !ok {
				break
			}
			if hb, err := wire.ParseHeartbeat(payload); h.Type == wire.TypeHeartbeat && err == nil {
				probe, answer = probe || hb.Token != 0, answer || hb.Echo != 0
			}
		}
		if probe && answer {
			combined++
		}
	}
	p.run(20 * time.Second)
	if combined < p.srvSent-1 {
		t.Errorf("%d of the server's %d datagrams carried an answer and a probe, want each", combined, p.srvSent)
	}
	if p.srvSent > 21 {
		t.Errorf("the server sent %d datagrams in 20 s to an idle client that probes once a second, want one a second", p.srvSent)
	}
	if p.cliSent > 42 {
		t.Errorf("the client sent %d datagrams in 20 s, want two a second (its probe, its answer)", p.cliSent)
	}
	if !p.srv.path.q.hasPing || !p.cli.path.q.hasPing {
		t.Errorf("round trips measured: server %v, client %v; want both", p.srv.path.q.hasPing, p.cli.path.q.hasPing)
	}
	if p.srv.life.closed || p.cli.life.closed {
		t.Fatal("a side closed")
	}
	t.Logf("20 s: the server sent %d datagrams, the client %d", p.srvSent, p.cliSent)
}

// TestServerProbesAQuietClient: a client that sends no probes of its own
// (a heartbeat interval longer than the run) still gets the server's once
// a second, whose answers keep both sides alive past the timeout.
func TestServerProbesAQuietClient(t *testing.T) {
	p := newHeartbeatPair(t, handshake.ProtocolVersion4, time.Hour)
	p.run(30 * time.Second)
	if p.srv.life.closed || p.cli.life.closed {
		t.Fatalf("closed: server %v, client %v; the server's probes should keep both alive", p.srv.life.closed, p.cli.life.closed)
	}
	if p.srvSent < 25 || p.srvSent > 31 {
		t.Errorf("the server sent %d datagrams in 30 s, want its probe once a second", p.srvSent)
	}
	if !p.srv.path.q.hasPing {
		t.Error("the server measured no round trip")
	}
}

// TestV3HeartbeatsUnchanged: a v3 session keeps the v3 contract — each
// side sends its own probe once a second and answers the other's with a
// plain echo: two datagrams a second from the server.
func TestV3HeartbeatsUnchanged(t *testing.T) {
	p := newHeartbeatPair(t, handshake.ProtocolVersion, time.Second)
	p.run(3 * time.Second)
	p.srvSent = 0
	p.run(20 * time.Second)
	if p.srvSent < 38 {
		t.Errorf("the server sent %d datagrams in 20 s to a v3 client, want its probe and its answer each second", p.srvSent)
	}
}
