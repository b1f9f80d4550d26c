package reliable

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const ms = time.Millisecond

func TestRTOEstimator(t *testing.T) {
	type sample struct{ measured, delay time.Duration }
	tests := []struct {
		name                  string
		samples               []sample
		srtt, rttvar, wantRTO time.Duration
	}{
		{"initial", nil, 0, 0, 500 * ms},
		{"first sample", []sample{{200 * ms, 0}}, 200 * ms, 100 * ms, 600 * ms},
		{"second sample", []sample{{200 * ms, 0}, {100 * ms, 0}}, 187500 * time.Microsecond, 100 * ms, 587500 * time.Microsecond},
		{"ack delay subtracted", []sample{{230 * ms, 30 * ms}}, 200 * ms, 100 * ms, 600 * ms},
		{"delay not below measurement ignored", []sample{{20 * ms, 25 * ms}}, 20 * ms, 10 * ms, 60 * ms},
		{"clamped low", []sample{{10 * ms, 0}}, 10 * ms, 5 * ms, MinRTO},
		{"clamped high", []sample{{2 * time.Second, 0}}, 2 * time.Second, time.Second, MaxRTO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRTTEstimator()
			for _, s := range tc.samples {
				r.sample(s.measured, s.delay)
			}
			if r.srtt != tc.srtt || r.rttvar != tc.rttvar || r.rto != tc.wantRTO {
				t.Errorf("srtt/rttvar/rto = %v/%v/%v, want %v/%v/%v", r.srtt, r.rttvar, r.rto, tc.srtt, tc.rttvar, tc.wantRTO)
			}
		})
	}
}

func TestRTTSampleFromAck(t *testing.T) {
	t.Run("ack delay subtracted", func(t *testing.T) {
		e := New(Config{}, t0)
		mustSend(t, e, wire.Reliable, "x", 0)
		poll(t, e, 0)
		e.OnAck(Ack{Ack: 1, DelayMS: 30}, at(230*ms))
		if s := e.Stats(); s.SRTT != 200*ms || s.RTO != 600*ms || s.RTTSamples != 1 {
			t.Errorf("SRTT %v RTO %v samples %d, want 200ms 600ms 1", s.SRTT, s.RTO, s.RTTSamples)
		}
	})
	t.Run("Karn: no sample from a retransmitted packet", func(t *testing.T) {
		e := New(Config{}, t0)
		mustSend(t, e, wire.Reliable, "x", 0)
		poll(t, e, 0)
		if got := poll(t, e, 500*ms); len(got) != 1 {
			t.Fatalf("expected a retransmission at RTO, got %d packets", len(got))
		}
		e.OnAck(Ack{Ack: 1}, at(520*ms))
		if s := e.Stats(); s.RTTSamples != 0 || s.RTO != InitialRTO || s.InFlight != 0 {
			t.Errorf("samples %d RTO %v inflight %d, want 0 500ms 0", s.RTTSamples, s.RTO, s.InFlight)
		}
	})
	t.Run("no sample from bits or repeated acks", func(t *testing.T) {
		e := New(Config{}, t0)
		mustSend(t, e, wire.Reliable, "a", 0)
		mustSend(t, e, wire.Reliable, "b", 0)
		poll(t, e, 0)
		e.OnAck(Ack{Ack: 2, Bits: 1}, at(100*ms)) // 2 sampled, 1 via bits
		e.OnAck(Ack{Ack: 2, Bits: 1}, at(400*ms)) // repeat: nothing new
		if s := e.Stats(); s.RTTSamples != 1 || s.SRTT != 100*ms {
			t.Errorf("samples %d SRTT %v, want 1 100ms", s.RTTSamples, s.SRTT)
		}
	})
}

// TestBackoffSchedule drives Poll at each NextDeadline and checks the waits
// RTO, 2RTO, 4RTO, 8RTO, 8RTO, … and the failure after the 10th
// retransmission's wait.
func TestBackoffSchedule(t *testing.T) {
	e := New(Config{ConnectionTimeout: time.Hour}, t0)
	mustSend(t, e, wire.Reliable, "x", 0)
	if got := poll(t, e, 0); len(got) != 1 {
		t.Fatalf("first send: %d packets", len(got))
	}
	rto := InitialRTO
	want := []time.Duration{rto, 2 * rto, 4 * rto, 8 * rto, 8 * rto, 8 * rto, 8 * rto, 8 * rto, 8 * rto, 8 * rto}
	now := time.Duration(0)
	for k, wait := range want {
		now += wait
		if d := e.NextDeadline(); !d.Equal(at(now)) {
			t.Fatalf("retransmission %d: NextDeadline %v, want %v", k+1, d.Sub(t0), now)
		}
		if got := poll(t, e, now-time.Nanosecond); len(got) != 0 {
			t.Fatalf("retransmission %d sent early", k+1)
		}
		got := poll(t, e, now)
		if len(got) != 1 || got[0].h.Sequence != 1 {
			t.Fatalf("retransmission %d at %v: %v", k+1, now, seqs(got))
		}
	}
	if s := e.Stats(); s.Retransmissions != 10 {
		t.Errorf("Retransmissions = %d, want 10", s.Retransmissions)
	}
	now += 8 * rto // the 10th retransmission's wait
	if d := e.NextDeadline(); !d.Equal(at(now)) {
		t.Fatalf("failure deadline %v, want %v", d.Sub(t0), now)
	}
	if err := e.Poll(at(now-time.Nanosecond), (&recorder{}).emit); err != nil {
		t.Fatalf("failed early: %v", err)
	}
	if err := e.Poll(at(now), (&recorder{}).emit); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("Poll after the 10th retransmission's wait: %v, want ErrDeliveryFailed", err)
	}
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, nil, at(now)); !errors.Is(err, ErrDeliveryFailed) {
		t.Errorf("Send on a failed endpoint: %v", err)
	}
	if !e.NextDeadline().IsZero() {
		t.Errorf("failed endpoint still has a deadline")
	}
}

func TestFailureAfterConnectionTimeout(t *testing.T) {
	e := New(Config{}, t0) // 10 s
	mustSend(t, e, wire.Reliable, "x", 0)
	var r recorder
	for d := e.NextDeadline(); d.Before(at(10 * time.Second)); d = e.NextDeadline() {
		if err := e.Poll(d, r.emit); err != nil {
			t.Fatalf("Poll at %v: %v", d.Sub(t0), err)
		}
	}
	// Sends at 0, 0.5, 1.5, 3.5, 7.5 s; the next retransmission (11.5 s) is
	// beyond the timeout, so the timeout is the next deadline.
	if n := len(r.take()); n != 5 {
		t.Errorf("%d transmissions before the timeout, want 5", n)
	}
	if d := e.NextDeadline(); !d.Equal(at(10 * time.Second)) {
		t.Fatalf("NextDeadline %v, want 10s", d.Sub(t0))
	}
	if err := e.Poll(at(10*time.Second-time.Nanosecond), r.emit); err != nil {
		t.Fatalf("failed early: %v", err)
	}
	if err := e.Poll(at(10*time.Second), r.emit); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("Poll at the connection timeout: %v, want ErrDeliveryFailed", err)
	}
}

func TestInFlightThenQueueThenFull(t *testing.T) {
	e := New(Config{MaxInFlight: 4, MaxQueued: 3}, t0)
	for i := range 7 {
		mustSend(t, e, wire.Reliable, "m", 0)
		if s := e.Stats(); s.InFlight != min(i+1, 4) || s.Queued != max(i+1-4, 0) {
			t.Fatalf("after %d sends: inflight %d queued %d", i+1, s.InFlight, s.Queued)
		}
	}
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, []byte("m"), t0); !errors.Is(err, ErrSendQueueFull) {
		t.Fatalf("8th Send: %v, want ErrSendQueueFull", err)
	}
	if got := seqs(poll(t, e, 0)); !equalU32(got, []uint32{1, 2, 3, 4}) {
		t.Fatalf("first Poll sent %v, want 1..4", got)
	}
	// The window is a span: acking 2..4 leaves 1 outstanding, so nothing new.
	e.OnAck(Ack{Ack: 4, Bits: 0b11}, at(10*ms))
	if got := poll(t, e, 10*ms); len(got) != 0 {
		t.Fatalf("window slid past unacked 1: sent %v", seqs(got))
	}
	e.OnAck(Ack{Ack: 1}, at(20*ms))
	if got := seqs(poll(t, e, 20*ms)); !equalU32(got, []uint32{5, 6, 7}) {
		t.Fatalf("after ack of 1 sent %v, want 5 6 7", got)
	}
	if s := e.Stats(); s.InFlight != 3 || s.Queued != 0 {
		t.Errorf("inflight %d queued %d, want 3 0", s.InFlight, s.Queued)
	}
}

// TestAckBitfield: ack 100 with bits 0x80000005 acknowledges 100, 99, 97, 68.
func TestAckBitfield(t *testing.T) {
	e := New(Config{}, t0)
	for range 100 {
		mustSend(t, e, wire.Reliable, "m", 0)
	}
	poll(t, e, 0)
	e.OnAck(Ack{Ack: 100, Bits: 0x80000005}, at(10*ms))
	if n := e.Stats().InFlight; n != 96 {
		t.Fatalf("InFlight %d, want 96", n)
	}
	got := map[uint32]bool{}
	for _, p := range poll(t, e, InitialRTO) { // all were sent at 0 with the initial RTO
		got[p.h.Sequence] = true
	}
	for _, s := range []uint32{100, 99, 97, 68} {
		if got[s] {
			t.Errorf("acked sequence %d retransmitted", s)
		}
	}
	if len(got) != 96 {
		t.Errorf("%d retransmissions, want 96", len(got))
	}
}

func TestAckOfUnknownSequencesIgnored(t *testing.T) {
	e := New(Config{}, t0)
	mustSend(t, e, wire.Reliable, "m", 0)
	mustSend(t, e, wire.Reliable, "m", 0)
	e.OnAck(Ack{Ack: 2}, t0) // not yet transmitted
	poll(t, e, 0)
	for _, a := range []Ack{{Ack: 0, Bits: ^uint32(0)}, {Ack: 500}, {Ack: 1, Bits: ^uint32(0)}} {
		e.OnAck(a, at(ms))
	}
	if n := e.Stats().InFlight; n != 1 {
		t.Fatalf("InFlight %d, want 1 (only 1 acked)", n)
	}
}

// TestSequenceNumbering: Reliable and ReliableOrdered share Sequence; only
// ReliableOrdered draws OrderedSequence; the first Send (the client's
// ClientFinished) is Sequence 1 and the next is 2.
func TestSequenceNumbering(t *testing.T) {
	e := New(Config{}, t0)
	if err := e.Send(wire.TypeConnect, wire.Reliable, []byte("finished"), t0); err != nil {
		t.Fatal(err)
	}
	chans := []wire.Channel{wire.ReliableOrdered, wire.Reliable, wire.ReliableOrdered, wire.Reliable, wire.ReliableOrdered}
	for _, ch := range chans {
		mustSend(t, e, ch, "m", 0)
	}
	got := poll(t, e, 0)
	wantOrd := []uint32{0, 1, 0, 2, 0, 3}
	for i, p := range got {
		if p.h.Sequence != uint32(i+1) || p.h.OrderedSequence != wantOrd[i] {
			t.Errorf("packet %d: seq %d ord %d, want %d %d", i, p.h.Sequence, p.h.OrderedSequence, i+1, wantOrd[i])
		}
	}
	if got[0].h.Type != wire.TypeConnect || got[0].h.Sequence != 1 {
		t.Errorf("ClientFinished went out as %v seq %d", got[0].h.Type, got[0].h.Sequence)
	}
	if u := e.NextUnreliableSequence(); u != 1 {
		t.Errorf("first unreliable sequence %d, want 1", u)
	}
}

func TestSendErrorsAndCopy(t *testing.T) {
	e := New(Config{}, t0)
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Unreliable, nil, t0); !errors.Is(err, ErrNotReliableChannel) {
		t.Errorf("unreliable Send: %v", err)
	}
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, make([]byte, wire.MaxPayload+1), t0); !errors.Is(err, ErrPayloadTooLarge) {
		t.Errorf("oversized Send: %v", err)
	}
	buf := []byte("hello")
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, buf, t0); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	if got := poll(t, e, 0); string(got[0].p) != "hello" {
		t.Errorf("payload aliased the caller's buffer: %q", got[0].p)
	}
	if err := e.Send(gamemsg.TypeEntityRPC, wire.ReliableOrdered, make([]byte, wire.MaxPayload), t0); err != nil {
		t.Errorf("MAX_PAYLOAD Send: %v", err)
	}
	e.Close()
	if err := e.Poll(t0, (&recorder{}).emit); !errors.Is(err, ErrClosed) {
		t.Errorf("Poll after Close: %v", err)
	}
}

func TestSequenceExhaustion(t *testing.T) {
	e := New(Config{}, t0)
	e.nextSeq, e.oldest, e.firstUnsent = math.MaxUint32-1, math.MaxUint32-1, math.MaxUint32-1
	mustSend(t, e, wire.Reliable, "last", 0)
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, nil, t0); !errors.Is(err, ErrSequenceExhausted) {
		t.Errorf("Send past the last sequence: %v", err)
	}
	e = New(Config{}, t0)
	e.nextOrdered = math.MaxUint32
	if err := e.Send(gamemsg.TypeEntitySpawn, wire.ReliableOrdered, nil, t0); !errors.Is(err, ErrSequenceExhausted) {
		t.Errorf("ordered Send past the last sequence: %v", err)
	}
	mustSend(t, e, wire.Reliable, "still fine", 0)
}

// TestSilentPeerGetsProbesNotItsWindow: 50 packets to a peer that
// acknowledges nothing. Each timeout round resends only the MaxProbes
// oldest, the rounds back off, and the endpoint still fails on the oldest
// packet as it would without probing.
func TestSilentPeerGetsProbesNotItsWindow(t *testing.T) {
	e := New(Config{ConnectionTimeout: time.Hour}, t0)
	for range 50 {
		mustSend(t, e, wire.Reliable, "m", 0)
	}
	if got := poll(t, e, 0); len(got) != 50 {
		t.Fatalf("first Poll sent %d, want 50", len(got))
	}
	rto := InitialRTO
	now := time.Duration(0)
	for k, wait := range []time.Duration{rto, 2 * rto, 4 * rto, 8 * rto, 8 * rto} {
		now += wait
		if d := e.NextDeadline(); !d.Equal(at(now)) {
			t.Fatalf("round %d: NextDeadline %v, want %v", k+1, d.Sub(t0), now)
		}
		if got := seqs(poll(t, e, now)); !equalU32(got, []uint32{1, 2}) {
			t.Fatalf("round %d at %v resent %v, want the two oldest", k+1, now, got)
		}
	}
	if r := e.Stats().Retransmissions; r != 10 {
		t.Fatalf("%d retransmissions after 5 rounds, want 10", r)
	}
	for e.Stats().Retransmissions < 2*DefaultMaxRetransmissions {
		now += 8 * rto
		poll(t, e, now)
	}
	now += 8 * rto // the 10th retransmission's wait
	if err := e.Poll(at(now), (&recorder{}).emit); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("Poll after the oldest's 10th retransmission: %v, want ErrDeliveryFailed", err)
	}
}

// TestProbeAckShowsTheRestLost: once the peer acknowledges a probe, every
// expired packet sent before it is known lost and goes at once; a peer that
// was only slow and acknowledges everything gets nothing more.
func TestProbeAckShowsTheRestLost(t *testing.T) {
	e := New(Config{}, t0)
	for range 10 {
		mustSend(t, e, wire.Reliable, "m", 0)
	}
	poll(t, e, 0)
	rto := InitialRTO
	if got := seqs(poll(t, e, rto)); !equalU32(got, []uint32{1, 2}) {
		t.Fatalf("probes %v, want 1 2", got)
	}
	// The probes arrive; 3..10 were lost.
	e.OnAck(Ack{Ack: 2, Bits: 1}, at(rto+10*ms))
	if d := e.NextDeadline(); d.After(at(rto + 10*ms)) {
		t.Fatalf("NextDeadline %v after the probes' ack, want now", d.Sub(t0))
	}
	if got := seqs(poll(t, e, rto+10*ms)); !equalU32(got, []uint32{3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("after the probes' ack resent %v, want 3..10", got)
	}

	slow := New(Config{}, t0)
	for range 10 {
		mustSend(t, slow, wire.Reliable, "m", 0)
	}
	poll(t, slow, 0)
	poll(t, slow, rto) // two probes
	// The peer was slow, not lossy: it acknowledges all ten originals.
	slow.OnAck(Ack{Ack: 10, Bits: 0x1ff}, at(rto+10*ms))
	if got := poll(t, slow, 10*rto); len(got) != 0 {
		t.Fatalf("a peer that acknowledged everything got %v", seqs(got))
	}
	if r := slow.Stats().Retransmissions; r != 2 {
		t.Errorf("%d retransmissions to a slow peer, want the 2 probes", r)
	}
}
