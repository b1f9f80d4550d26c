package netstack

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestServiceDueFollowsTheSession: an idle session is next due at its
// heartbeat, and a send, a received datagram or a close makes it due at
// the service loop's next pass.
func TestServiceDueFollowsTheSession(t *testing.T) {
	srv, cli := sessionPair(t)
	origin := srv.origin
	now := origin.Add(time.Second)
	var b datagramBatch
	srv.serviceLocked(now, &b) // the first heartbeat leaves
	b.reset()
	due := srv.nextServiceLocked()
	if want := int64(srv.path.nextHeartbeat); due != want {
		t.Fatalf("an idle session is due at %v, want its next heartbeat at %v", time.Duration(due), time.Duration(want))
	}
	srv.svcDue.Store(due)

	if err := srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, []byte{9, 0, 0, 0}, now); err != nil {
		t.Fatal(err)
	}
	if srv.svcDue.Load() != 0 {
		t.Fatal("a send left the session asleep")
	}
	if srv.nextServiceLocked() > int64(now.Sub(origin)) {
		t.Fatal("an unsent reliable message is not due now")
	}
	srv.flushLocked(now, &b)
	if d := srv.nextServiceLocked(); d <= int64(now.Sub(origin)) || d > int64(now.Add(time.Second).Sub(origin)) {
		t.Fatalf("after the flush the session is due at %v, want its retransmission timer", time.Duration(d))
	}

	srv.svcDue.Store(1 << 62)
	cli.life.finishing = false
	var cb datagramBatch
	cli.serviceLocked(now, &cb)
	for _, sp := range cb.spans {
		srv.receiveLocked(gamemsg.NewRegistry(), cb.buf[sp.start:sp.end], now, func(*wire.Header, []byte) {}, nil)
	}
	if len(cb.spans) == 0 || srv.svcDue.Load() != 0 {
		t.Fatalf("a received datagram (%d sent) left the session asleep", len(cb.spans))
	}

	srv.svcDue.Store(1 << 62)
	srv.beginCloseLocked(wire.DisconnectKicked, "bye", time.Second, now)
	if srv.svcDue.Load() != 0 || srv.nextServiceLocked() != 0 {
		t.Fatal("a close left the session asleep")
	}
}
