package reliable

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestDuplicateAckedAtOnceNotDelivered(t *testing.T) {
	e := New(Config{RedundantAcks: -1}, t0) // AckDelay 10 ms, no repeats
	var d delivery
	if !e.Receive(reliableHdr(1), []byte("a"), t0, d.fn) {
		t.Fatal("first arrival not accepted")
	}
	if dl := e.NextDeadline(); !dl.Equal(at(10 * ms)) {
		t.Fatalf("ack deadline %v, want 10ms", dl.Sub(t0))
	}
	if got := poll(t, e, 10*ms-time.Nanosecond); len(got) != 0 {
		t.Fatalf("ack sent before AckDelay")
	}
	acks, _ := split(t, poll(t, e, 10*ms))
	if len(acks) != 1 || acks[0] != (Ack{Ack: 1, Bits: 0, DelayMS: 10}) {
		t.Fatalf("acks %+v, want [{1 0 10}]", acks)
	}
	// The duplicate: not delivered, and the ack is due immediately.
	if !e.Receive(reliableHdr(1), []byte("a"), at(500*ms), d.fn) {
		t.Fatal("duplicate not accepted (it must be acked)")
	}
	if dl := e.NextDeadline(); !dl.Equal(at(500 * ms)) {
		t.Fatalf("duplicate ack deadline %v, want 500ms (at once)", dl.Sub(t0))
	}
	acks, _ = split(t, poll(t, e, 500*ms))
	if len(acks) != 1 || acks[0].Ack != 1 || acks[0].DelayMS != 500 {
		t.Fatalf("duplicate ack %+v, want ack 1 delay 500", acks)
	}
	if len(d.got) != 1 {
		t.Errorf("delivered %d times, want 1", len(d.got))
	}
	if s := e.Stats(); s.DuplicatesReceived != 1 || s.AcksSent != 2 {
		t.Errorf("duplicates %d acks %d", s.DuplicatesReceived, s.AcksSent)
	}
}

// TestRedundantAck: the acknowledgement state is repeated once, AckDelay
// after the Ack, extra range Acks included, and then the endpoint is idle.
func TestRedundantAck(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	for s := uint32(1); s <= 40; s++ {
		if s != 2 {
			e.Receive(reliableHdr(s), nil, t0, d.fn)
		}
	}
	e.Receive(reliableHdr(2), nil, at(5*ms), d.fn)
	// 1..7 are out of reach of ack 40: ack 33 covers them.
	want := []Ack{{Ack: 40, Bits: 0xFFFFFFFF, DelayMS: 15}, {Ack: 33, Bits: 0xFFFFFFFF, DelayMS: 15}}
	acks, _ := split(t, poll(t, e, 15*ms))
	if len(acks) != 2 || acks[0] != want[0] || acks[1] != want[1] {
		t.Fatalf("acks %+v, want %+v", acks, want)
	}
	if dl := e.NextDeadline(); !dl.Equal(at(25 * ms)) {
		t.Fatalf("repeat due %v, want 25ms", dl.Sub(t0))
	}
	want[0].DelayMS, want[1].DelayMS = 25, 25
	acks, _ = split(t, poll(t, e, 25*ms))
	if len(acks) != 2 || acks[0] != want[0] || acks[1] != want[1] {
		t.Fatalf("repeated acks %+v, want %+v", acks, want)
	}
	if !e.NextDeadline().IsZero() {
		t.Fatalf("more than one repeat scheduled")
	}
}

// covered reports whether some Ack acknowledges s.
func covered(acks []Ack, s uint32) bool {
	for _, a := range acks {
		if a.Ack == s || a.Ack > s && a.Ack-s <= AckBits && a.Bits&(1<<(a.Ack-s-1)) != 0 {
			return true
		}
	}
	return false
}

// TestEveryArrivalAcknowledged: whatever the arrival order, every packet
// accepted since the last emission is covered by one of the Acks the next
// Poll emits, and no packet that was not received is.
func TestEveryArrivalAcknowledged(t *testing.T) {
	for _, cfg := range []Config{{RedundantAcks: -1}, {}, {RedundantAcks: 3}} {
		t.Run(fmt.Sprintf("RedundantAcks=%d", cfg.RedundantAcks), func(t *testing.T) {
			testEveryArrivalAcknowledged(t, cfg)
		})
	}
}

func testEveryArrivalAcknowledged(t *testing.T, cfg Config) {
	rng := rand.New(rand.NewPCG(3, 4))
	e := New(cfg, t0)
	var d delivery
	now := time.Duration(0)
	for round := range 3000 {
		var arrived []uint32
		for range 1 + rng.IntN(60) {
			// Mostly near the top, sometimes far below (retransmissions).
			s := e.highest + 5 - uint32(rng.IntN(40))
			if rng.IntN(8) == 0 {
				s = e.highest - uint32(rng.IntN(400))
			}
			if s == 0 || s > e.highest+5 {
				continue
			}
			if e.Receive(reliableHdr(s), nil, at(now), d.fn) {
				arrived = append(arrived, s)
			}
		}
		now += 10 * ms
		acks, _ := split(t, poll(t, e, now))
		for _, s := range arrived {
			if !covered(acks, s) {
				t.Fatalf("round %d: arrival %d not acknowledged by %+v (highest %d)", round, s, acks, e.highest)
			}
		}
		for _, a := range acks {
			for i := uint32(0); i <= AckBits && i < a.Ack; i++ {
				if s := a.Ack - i; covered([]Ack{a}, s) && !e.recv.has(s) {
					t.Fatalf("round %d: %+v acknowledges %d, never received", round, a, s)
				}
			}
		}
	}
	if n := e.Stats().AckRangesDropped; n != 0 {
		t.Errorf("AckRangesDropped %d", n)
	}
	// Without arrivals, the repeats run out and every range is retired.
	for range e.cfg.RedundantAcks {
		now += 10 * ms
		poll(t, e, now)
	}
	if e.pending.n != 0 || !e.NextDeadline().IsZero() {
		t.Errorf("%d ranges pending, next deadline %v: not retired after the repeats", e.pending.n, e.NextDeadline())
	}
}

func TestAckCoversBurstWithDelay(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	e.Receive(reliableHdr(1), nil, t0, d.fn)
	e.Receive(reliableHdr(3), nil, at(3*ms), d.fn)
	acks, _ := split(t, poll(t, e, 10*ms))
	// 3 is highest, received 7 ms ago; bit 0 (2) clear, bit 1 (1) set.
	if len(acks) != 1 || acks[0] != (Ack{Ack: 3, Bits: 0b10, DelayMS: 7}) {
		t.Fatalf("acks %+v, want [{3 2 7}]", acks)
	}
	if u := e.NextUnreliableSequence(); u != 2 {
		t.Errorf("the Ack did not draw from the unreliable counter: next %d, want 2", u)
	}
}

// TestFarBelowAck: a packet more than 32 below the highest gets its own Ack.
func TestFarBelowAck(t *testing.T) {
	e := New(Config{RedundantAcks: -1}, t0)
	var d delivery
	for s := uint32(1); s <= 40; s++ {
		if s != 5 && s != 8 {
			e.Receive(reliableHdr(s), nil, t0, d.fn)
		}
	}
	// 1..7 are out of reach of ack 40: ack 33 covers them (5 and 8 missing).
	want := []Ack{{Ack: 40, Bits: 0x7FFFFFFF, DelayMS: 10}, {Ack: 33, Bits: 0xFFFFFFFF &^ (1<<24 | 1<<27), DelayMS: 10}}
	acks, _ := split(t, poll(t, e, 10*ms))
	if len(acks) != 2 || acks[0] != want[0] || acks[1] != want[1] {
		t.Fatalf("acks %+v, want %+v", acks, want)
	}
	// 8 is exactly 32 below 40: bit 31 of the regular Ack covers it.
	e.Receive(reliableHdr(8), nil, at(50*ms), d.fn)
	acks, _ = split(t, poll(t, e, 60*ms))
	if len(acks) != 1 || acks[0] != (Ack{Ack: 40, Bits: 0xFFFFFFFF, DelayMS: 60}) {
		t.Fatalf("acks %+v, want only [{40 0xFFFFFFFF 60}]", acks)
	}
	// 5 is 35 below: an extra Ack with ack = 5 (bits: 4, 3, 2, 1).
	e.Receive(reliableHdr(5), nil, at(100*ms), d.fn)
	acks, _ = split(t, poll(t, e, 110*ms))
	want = []Ack{{Ack: 40, Bits: 0xFFFFFFFF, DelayMS: 110}, {Ack: 5, Bits: 0xF, DelayMS: 10}}
	if len(acks) != 2 || acks[0] != want[0] || acks[1] != want[1] {
		t.Fatalf("acks %+v, want %+v", acks, want)
	}
	// A far duplicate is acked at once, with its own far Ack.
	e.Receive(reliableHdr(2), nil, at(200*ms), d.fn)
	acks, _ = split(t, poll(t, e, 200*ms))
	if len(acks) != 2 || acks[1].Ack != 2 || acks[1].Bits != 1 {
		t.Fatalf("far duplicate acks %+v", acks)
	}
}

// TestReorderAheadBound: 256 ahead is held, 257 ahead is dropped unacked and
// accepted later when retransmitted.
func TestReorderAheadBound(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	// Reliability sequences 2..258 carry OrderedSequences 2..258; 1 is missing.
	for os := uint32(2); os <= 257; os++ {
		if !e.Receive(orderedHdr(os, os), []byte{byte(os)}, t0, d.fn) {
			t.Fatalf("os %d (%d ahead) refused", os, os-1)
		}
	}
	if e.Receive(orderedHdr(258, 258), []byte{1}, t0, d.fn) {
		t.Fatal("os 258 (257 ahead) accepted")
	}
	if s := e.Stats(); s.ReorderDropped != 1 || s.Held != 256 || len(d.got) != 0 {
		t.Fatalf("reorderDropped %d held %d delivered %d", s.ReorderDropped, s.Held, len(d.got))
	}
	acks, _ := split(t, poll(t, e, 10*ms))
	if acks[0].Ack != 257 || covered(acks, 258) {
		t.Fatalf("acks %+v: the dropped 258 must not be acked", acks)
	}
	for s := uint32(2); s <= 257; s++ {
		if !covered(acks, s) {
			t.Fatalf("held %d not acknowledged", s)
		}
	}
	e.Receive(orderedHdr(1, 1), []byte{1}, at(20*ms), d.fn)
	if len(d.got) != 257 {
		t.Fatalf("delivered %d after the hole filled, want 257", len(d.got))
	}
	for i, p := range d.got {
		if p.h.OrderedSequence != uint32(i+1) || p.p[0] != byte(i+1) {
			t.Fatalf("delivery %d: os %d payload %d", i, p.h.OrderedSequence, p.p[0])
		}
	}
	if !e.Receive(orderedHdr(258, 258), []byte{2}, at(30*ms), d.fn) || len(d.got) != 258 {
		t.Fatalf("retransmitted 258 not delivered")
	}
	if e.Stats().Held != 0 {
		t.Errorf("held slots not released")
	}
}

// TestReliableNeverGapsOrdered: Reliable packets interleaved in the shared
// Sequence space, even lost ones, never hold back ReliableOrdered delivery.
func TestReliableNeverGapsOrdered(t *testing.T) {
	snd := New(Config{}, t0)
	rcv := New(Config{}, t0)
	for i, ch := range []wire.Channel{wire.ReliableOrdered, wire.Reliable, wire.Reliable, wire.ReliableOrdered, wire.Reliable, wire.ReliableOrdered} {
		mustSend(t, snd, ch, string(rune('a'+i)), 0)
	}
	var d delivery
	for _, p := range poll(t, snd, 0) {
		if p.h.Channel == wire.Reliable {
			continue // every Reliable packet is lost
		}
		rcv.Receive(&p.h, p.p, t0, d.fn)
	}
	var got string
	for _, p := range d.got {
		got += string(p.p)
	}
	if got != "adf" {
		t.Errorf("ordered delivery %q, want \"adf\" with no wait for the lost Reliable packets", got)
	}
}

func TestStaleOrderedAckedAndDropped(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	e.Receive(orderedHdr(1, 1), nil, t0, d.fn)
	// A different reliability sequence repeating an old OrderedSequence.
	if !e.Receive(orderedHdr(2, 1), nil, t0, d.fn) {
		t.Fatal("stale ordered packet not accepted (it must be acked)")
	}
	acks, _ := split(t, poll(t, e, 10*ms))
	if len(d.got) != 1 || e.Stats().StaleOrdered != 1 || len(acks) != 1 || acks[0].Ack != 2 || acks[0].Bits != 1 {
		t.Errorf("delivered %d stale %d acks %+v", len(d.got), e.Stats().StaleOrdered, acks)
	}
}

func TestReceiveWindow(t *testing.T) {
	e := New(Config{}, t0) // window 1024
	var d delivery
	for s := uint32(1); s <= 5000; s++ {
		e.Receive(reliableHdr(s), nil, t0, d.fn)
	}
	// Long gone below the window, still recognized as a duplicate.
	e.Receive(reliableHdr(3), nil, t0, d.fn)
	if len(d.got) != 5000 || e.Stats().DuplicatesReceived != 1 {
		t.Fatalf("delivered %d duplicates %d", len(d.got), e.Stats().DuplicatesReceived)
	}
	// With 5001 missing, 5001+1024 is the last sequence tracked.
	if !e.Receive(reliableHdr(5001+1023), nil, t0, d.fn) {
		t.Fatal("sequence at the top of the window refused")
	}
	if e.Receive(reliableHdr(5001+1024), nil, t0, d.fn) {
		t.Fatal("sequence beyond the window accepted")
	}
	if e.Stats().WindowDropped != 1 {
		t.Errorf("WindowDropped %d", e.Stats().WindowDropped)
	}
	e.Receive(reliableHdr(5001), nil, t0, d.fn)
	if !e.Receive(reliableHdr(5001+1024), nil, t0, d.fn) {
		t.Fatal("retransmission refused after the window slid")
	}
}

func TestInvalidAndUnreliable(t *testing.T) {
	e := New(Config{}, t0)
	var d delivery
	if e.Receive(reliableHdr(0), nil, t0, d.fn) || e.Receive(orderedHdr(1, 0), nil, t0, d.fn) {
		t.Error("Sequence 0 or OrderedSequence 0 accepted")
	}
	if !e.NextDeadline().IsZero() {
		t.Error("invalid packets scheduled an ack")
	}
	u := &wire.Header{Type: gamemsg.TypeClientInput, Channel: wire.Unreliable, Sequence: 7}
	if !e.Receive(u, []byte("in"), t0, d.fn) || !e.Receive(u, []byte("in"), t0, d.fn) || len(d.got) != 2 {
		t.Error("unreliable packets are passed through, repeats included")
	}
	if !e.NextDeadline().IsZero() {
		t.Error("unreliable packets scheduled an ack")
	}
}

// TestSeqWindowMatchesOracle checks has() against a set over random arrival
// orders that respect the window.
func TestSeqWindowMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := newSeqWindow(256)
	seen := map[uint32]bool{}
	for range 200000 {
		s := w.cum + 1 + uint32(rng.IntN(300))
		if w.has(s) != seen[s] {
			t.Fatalf("has(%d) = %v, oracle %v (cum %d)", s, w.has(s), seen[s], w.cum)
		}
		if !w.has(s) && w.fits(s) {
			w.add(s)
			seen[s] = true
		}
	}
	for s := uint32(1); s <= w.cum+300; s++ {
		if w.has(s) != seen[s] {
			t.Fatalf("final has(%d) = %v, oracle %v", s, w.has(s), seen[s])
		}
	}
}

// TestClientFinishedFlow: the client's first Send is Sequence 1; the server
// delivers it once, acks it, and treats a repeat as a duplicate.
func TestClientFinishedFlow(t *testing.T) {
	client := New(Config{}, t0)
	server := New(Config{}, t0)
	if err := client.Send(wire.TypeConnect, wire.Reliable, []byte("finished"), t0); err != nil {
		t.Fatal(err)
	}
	cf := poll(t, client, 0)[0]
	var d delivery
	server.Receive(&cf.h, cf.p, at(20*ms), d.fn)
	server.Receive(&cf.h, cf.p, at(30*ms), d.fn) // a repeat
	if len(d.got) != 1 {
		t.Fatalf("ClientFinished delivered %d times", len(d.got))
	}
	acks, _ := split(t, poll(t, server, 30*ms))
	client.OnAck(acks[0], at(40*ms))
	mustSend(t, client, wire.Reliable, "chat", 40*ms)
	if got := poll(t, client, 40*ms); got[0].h.Sequence != 2 || client.Stats().InFlight != 1 {
		t.Errorf("next reliable after ClientFinished: seq %d inflight %d", got[0].h.Sequence, client.Stats().InFlight)
	}
}
