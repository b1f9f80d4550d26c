package netstack

import (
	"runtime"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// idleSessionBytes bounds what the server's session of an idle client
// allocates: keys, reliability, queues and path, and what its heartbeats
// make it keep. A full datagram's scratch or a full reliability window per
// session would not fit. It was 4 KiB before congestion control's
// estimator and migration's and resumption's state joined the session
// (7.1 KiB with the estimator's markers holding two time.Time each); with
// the markers' times as offsets it was 5.8 KiB; with the estimator's
// marker rings grown on demand and migration's validation and client
// state apart from the session, 4.5 KiB (the session struct in the
// allocator's 2,688-byte class, not its 4,096).
const idleSessionBytes = 4864

// TestIdleSessionIsSmall: a server session that received a client's
// heartbeat and sent its own holds no buffer sized for traffic it never had.
func TestIdleSessionIsSmall(t *testing.T) {
	k := newSessionKit(t)
	now := time.Now()
	reg := gamemsg.NewRegistry()
	deliver := func(*wire.Header, []byte) {}

	// The client's heartbeat, a second after the session began.
	cli := k.client(handshake.ProtocolVersion4, now, nil)
	cli.life.finishing = false
	var hb datagramBatch
	cli.serviceLocked(now.Add(time.Second), &hb)
	if len(hb.spans) != 1 {
		t.Fatalf("the client's service sent %d datagrams, want its heartbeat", len(hb.spans))
	}
	datagram := hb.buf[hb.spans[0].start:hb.spans[0].end]

	const n = 100
	sessions := make([]*session, n)
	var b datagramBatch
	b.reserve(4096)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range sessions {
		s := k.server(handshake.ProtocolVersion4, now, nil)
		if !s.receiveLocked(reg, datagram, now.Add(time.Second), deliver, nil) {
			t.Fatal("the heartbeat was dropped")
		}
		s.serviceLocked(now.Add(time.Second), &b)
		b.reset()
		sessions[i] = s
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(sessions)
	per := int(after.TotalAlloc-before.TotalAlloc) / n
	if per > idleSessionBytes {
		t.Fatalf("an idle server session allocated %d bytes, want at most %d", per, idleSessionBytes)
	}
	t.Logf("an idle server session allocated %d bytes", per)
}
