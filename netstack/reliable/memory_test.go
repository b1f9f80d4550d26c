package reliable

import (
	"runtime"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// idleEndpointBytes bounds what an Endpoint at rest costs: one that sent and
// received a few messages in order (a session's admission) and then only
// idles. Its rings grow with what is in flight or held, not with what the
// configuration allows.
const idleEndpointBytes = 4 << 10

// TestIdleEndpointIsSmall: an Endpoint that exchanged a handful of reliable
// messages in order, all acknowledged, holds no full-size window.
func TestIdleEndpointIsSmall(t *testing.T) {
	const n = 200
	eps := make([]*Endpoint, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range eps {
		eps[i] = admittedEndpoint(t)
	}
	runtime.ReadMemStats(&after)
	per := int(after.TotalAlloc-before.TotalAlloc) / n
	runtime.KeepAlive(eps)
	if per > idleEndpointBytes {
		t.Fatalf("an idle Endpoint allocated %d bytes, want at most %d", per, idleEndpointBytes)
	}
	t.Logf("an idle Endpoint allocated %d bytes", per)
}

// admittedEndpoint sends three ordered messages and receives three, each
// acknowledged, as a session's admission does.
func admittedEndpoint(t *testing.T) *Endpoint {
	e := New(Config{}, t0)
	var d delivery
	for i := uint32(1); i <= 3; i++ {
		mustSend(t, e, wire.ReliableOrdered, "welcome", 0)
		e.Receive(orderedHdr(i, i), []byte("hello"), t0, func(*wire.Header, []byte) {})
	}
	poll(t, e, 10*time.Millisecond)
	e.OnAck(Ack{Ack: 3, Bits: 3}, at(20*time.Millisecond))
	if e.Unsettled() != 0 || len(d.got) != 0 {
		t.Fatalf("unsettled %d after the ack", e.Unsettled())
	}
	return e
}

// TestRingsGrowKeepingOrder: messages held out of order while the hold ring
// grows, and a window filled while the send ring grows, keep their order.
func TestRingsGrowKeepingOrder(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	const n = MaxReorderAhead
	for os := uint32(n); os >= 2; os-- { // every one ahead of its turn, the farthest first
		if !e.Receive(orderedHdr(os, os), []byte{byte(os)}, t0, d.fn) {
			t.Fatalf("ordered %d refused", os)
		}
	}
	e.Receive(orderedHdr(1, 1), []byte{1}, t0, d.fn)
	if len(d.got) != n {
		t.Fatalf("delivered %d, want %d", len(d.got), n)
	}
	for i, p := range d.got {
		if p.h.OrderedSequence != uint32(i+1) || p.p[0] != byte(i+1) {
			t.Fatalf("delivery %d is ordered %d (%d), want %d", i, p.h.OrderedSequence, p.p[0], i+1)
		}
	}
	for i := range MaxInFlightLimit + 10 {
		mustSend(t, e, wire.Reliable, string(rune('a'+i%26)), 0)
	}
	var sent []packet
	for _, p := range poll(t, e, 0) {
		if p.h.Type != wire.TypeAck {
			sent = append(sent, p)
		}
	}
	if len(sent) != MaxInFlightLimit || e.Stats().Queued != 10 {
		t.Fatalf("sent %d, queued %d; want %d and 10", len(sent), e.Stats().Queued, MaxInFlightLimit)
	}
	for i, p := range sent {
		if p.h.Sequence != uint32(i+1) || p.p[0] != byte('a'+i%26) {
			t.Fatalf("packet %d: sequence %d payload %q", i, p.h.Sequence, p.p)
		}
	}
}

// TestSettledEndpointLetsGoOfItsSendRing: once everything a lightly used
// Endpoint sent is acknowledged, it keeps no send ring (an idle session
// pays for none), and the next Send grows one again and still works.
func TestSettledEndpointLetsGoOfItsSendRing(t *testing.T) {
	e := admittedEndpoint(t)
	poll(t, e, 500*time.Millisecond)
	if len(e.out) == 0 {
		t.Fatal("the send ring was let go 0.5 s after it emptied; a peer sending now and then would allocate a ring each time")
	}
	poll(t, e, 1100*time.Millisecond)
	if len(e.out) != 0 {
		t.Fatalf("a settled Endpoint keeps a send ring of %d slots, want none", len(e.out))
	}
	mustSend(t, e, wire.ReliableOrdered, "again", 0)
	var got []uint32
	if err := e.Poll(at(1200*time.Millisecond), func(h *wire.Header, _ []byte) {
		if h.Type != wire.TypeAck {
			got = append(got, h.Sequence)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 4 {
		t.Fatalf("after the ring was let go, sent sequences %v, want [4]", got)
	}
	e.OnAck(Ack{Ack: 4}, at(1210*time.Millisecond))
	poll(t, e, 2300*time.Millisecond)
	if !e.Settled() || len(e.out) != 0 {
		t.Fatalf("settled %v, ring %d slots after the second ack", e.Settled(), len(e.out))
	}
}
