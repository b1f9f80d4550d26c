package netstack

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

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
// allocator's 2,688-byte class, not its 4,096); with the counters an idle
// session never moves apart (peerCounters) and the path's, linger's and
// notices' times kept as durations since the session's origin, 4.0 KiB.
const idleSessionBytes = 4224

// sessionStructBytes bounds the session struct: the allocator's size
// classes near it are 2,048, 2,304 and 2,688 bytes, and each class is
// that much memory for every connected player. It was 2,640 bytes with a
// whole Counters (504 bytes) in every session and its times as time.Time
// (24 bytes each).
const sessionStructBytes = 2048

// TestSessionStructIsSmall: the session struct fits its size class.
func TestSessionStructIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > sessionStructBytes {
		t.Fatalf("the session struct is %d bytes, want at most %d (an allocator size class)", n, sessionStructBytes)
	}
}

// TestIdleSessionCountsInline: an idle session's heartbeats, and the
// connection id its client asks for once (every v4 client that can
// migrate does), move only its inline counters; the first rare event (a
// refused message) makes the rest, and it shows in the session's Stats
// and in the server's totals.
func TestIdleSessionCountsInline(t *testing.T) {
	srv, cli := sessionPair(t)
	var global Counters
	srv.global = &global
	srv.path.mig.id, srv.path.mig.hasID = [8]byte{1}, true // made at admission
	now := time.Now().Add(time.Second)
	var b datagramBatch
	cli.life.finishing = false
	cli.serviceLocked(now, &b)
	deliverBatch(srv, &b, gamemsg.NewRegistry(), now, func(*wire.Header, []byte) {})
	srv.onPathChallengeLocked(wire.PathChallenge{Token: [8]byte{2}}) // the client's request for an id
	srv.serviceLocked(now, &b)
	if srv.ctr.rare.Load() != nil {
		t.Fatal("a heartbeat exchange and a connection id made the session's rarely moved counters")
	}
	if st := srv.statsLocked(); st.PacketsReceived != 1 || st.MessagesReceived == 0 || st.PacketsSent == 0 || st.ConnectionIDsIssued != 1 {
		t.Fatalf("after a heartbeat each way and an id: %d datagrams in, %d messages in, %d out, %d ids", st.PacketsReceived, st.MessagesReceived, st.PacketsSent, st.ConnectionIDsIssued)
	}
	if g := global.ConnectionIDsIssued.Load(); g != 1 {
		t.Fatalf("server total of ids issued %d, want 1", g)
	}
	h := wire.Header{Type: wire.FirstUserDefined, Channel: wire.Reliable, Sequence: 1}
	srv.refuseLocked(&h, wire.RefusedNotLoaded)
	srv.countDrop(dropSecurity)
	st := srv.statsLocked()
	if st.RefusedBy[wire.RefusedNotLoaded] != 1 || st.MalformedDropped != 1 || st.SecurityDrops != 1 || st.PacketsDropped != 1 || st.PacketsReceived != 1 {
		t.Fatalf("session stats after a refusal and a drop: %+v", st)
	}
	if g := global.snapshot(); g.RefusedBy[wire.RefusedNotLoaded] != 1 || g.SecurityDrops != 1 || g.PacketsDropped != 1 || g.MessagesReceived != st.MessagesReceived {
		t.Fatalf("server totals after a refusal and a drop: %+v", g)
	}
}

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
