package reliable

import (
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestAckWithDataNotRepeated: an Ack that leaves in the same flush as a
// reliable packet of ours is not repeated AckDelay later (its loss is that
// packet's loss, which is retransmitted with the Ack state of the time); an
// Ack that leaves without one still is, also when data left in an earlier
// flush.
func TestAckWithDataNotRepeated(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	e.Receive(reliableHdr(1), nil, t0, d.fn)
	mustSend(t, e, wire.Reliable, "echo", ms)
	var r recorder
	if err := e.Poll(at(ms), r.emit); err != nil {
		t.Fatal(err)
	}
	e.FlushAcks(at(ms), r.emit)
	acks, data := split(t, r.take())
	if len(acks) != 1 || len(data) != 1 {
		t.Fatalf("flush emitted %d acks and %d packets, want 1 and 1", len(acks), len(data))
	}
	if e.AckPending() {
		t.Fatalf("an Ack that rode with data is repeated at %v", e.NextDeadline().Sub(t0))
	}

	// Data alone in one flush, then an arrival whose Ack leaves alone.
	mustSend(t, e, wire.Reliable, "more", 2*ms)
	if _, data := split(t, poll(t, e, 2*ms)); len(data) != 1 {
		t.Fatalf("%d packets sent, want 1", len(data))
	}
	e.Receive(reliableHdr(2), nil, at(3*ms), d.fn)
	if acks, data := split(t, poll(t, e, 13*ms)); len(acks) != 1 || len(data) != 0 {
		t.Fatalf("emitted %d acks and %d packets at 13ms, want 1 and 0", len(acks), len(data))
	}
	if !e.AckPending() {
		t.Fatal("an Ack sent alone is not repeated")
	}
	if acks, _ := split(t, poll(t, e, 23*ms)); len(acks) != 1 || acks[0].Ack != 2 {
		t.Fatalf("repeat %+v, want one Ack of 2", acks)
	}
}
