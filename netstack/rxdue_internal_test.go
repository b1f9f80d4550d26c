package netstack

import (
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// rxDueRig is a server that is not started (the test runs its receive
// pass) with one admitted session, and that session's client end.
type rxDueRig struct {
	srv *Server
	p   *peer
	cli *session
}

func newRxDueRig(t *testing.T, echo bool) *rxDueRig {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Bind: "127.0.0.1", Identity: priv, Registry: gamemsg.NewRegistry(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.tr.Close() })
	now := time.Now()
	addr := netip.MustParseAddrPort("127.0.0.1:9") // the discard port: the echo goes nowhere
	var k1, k2 [32]byte
	k1[0], k2[0] = 1, 2
	p := &peer{session: srv.newPeerSession(addr, 7, handshake.ProtocolVersion4, now, sessionKeys{send: k1, recv: k2}), state: slotConnected}
	p.mu.Lock()
	srv.due.add(p)
	p.mu.Unlock()
	srv.mu.Lock()
	srv.byID[7], srv.byAddr[addr] = p, p
	srv.mu.Unlock()
	srv.Handle(gamemsg.TypeEntityRPC, func(id uint32, _ *wire.Header, payload []byte) {
		if echo {
			_ = srv.Send(id, gamemsg.TypeEntityRPC, wire.Reliable, payload)
		}
	})
	cli := newSession(srv.tr, srv.Addr(), 7, false, handshake.ProtocolVersion4, srv.origin, now, sessionKeys{send: k2, recv: k1}, &srv.chcfg)
	return &rxDueRig{srv: srv, p: p, cli: cli}
}

// pass sends n reliable messages from the client in one datagram and runs
// the server's receive pass on it; it returns the session's due time.
func (r *rxDueRig) pass(t *testing.T, n int, now time.Time) int64 {
	t.Helper()
	var b datagramBatch
	rpc := []byte{1, 0, 0, 0, 3, 0}
	for range n {
		if err := r.cli.sendLocked(gamemsg.TypeEntityRPC, wire.Reliable, rpc, now); err != nil {
			t.Fatal(err)
		}
	}
	r.cli.flushLocked(now, &b)
	if len(b.spans) != 1 {
		t.Fatalf("%d datagrams", len(b.spans))
	}
	sp := b.spans[0]
	r.srv.handleDatagram(b.buf[sp.start:sp.end], r.p.path.addr, false, now)
	r.srv.flushTouched(now)
	if got := r.p.ctr.MessagesReceived.Load(); got == 0 {
		t.Fatal("the server received nothing")
	}
	return r.p.svcAt.Load().Load()
}

// TestReceivePassLeavesSessionAsleep: a receive pass that answered what it
// received (or had nothing to answer) leaves the session due at its next
// timer — the delayed Ack, the answers' retransmission — not at the
// service loop's next pass, which would lock every session heard from
// every 10 ms for nothing.
func TestReceivePassLeavesSessionAsleep(t *testing.T) {
	for _, echo := range []bool{false, true} {
		r := newRxDueRig(t, echo)
		now := r.srv.origin.Add(500 * time.Millisecond)
		var b datagramBatch
		r.p.mu.Lock()
		r.p.serviceLocked(now, &b) // the first heartbeat leaves
		r.p.mu.Unlock()
		r.cli.life.finishing = false
		due := r.pass(t, 4, now)
		r.p.mu.Lock()
		want := r.p.nextServiceLocked()
		r.p.mu.Unlock()
		if due == 0 || due != want || due <= int64(now.Sub(r.srv.origin)) {
			t.Errorf("echo %v: after the receive pass the session is due at %v, want %v (its next timer; now %v)",
				echo, time.Duration(due), time.Duration(want), now.Sub(r.srv.origin))
		}
		if echo && r.p.ctr.MessagesSent.Load() == 0 {
			t.Error("nothing echoed")
		}
	}
}
