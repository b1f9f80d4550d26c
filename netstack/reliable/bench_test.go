package reliable

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func discard(*wire.Header, []byte) {}

// sendCycle is one steady-state sending step: Send, Poll (transmit), OnAck.
func sendCycle(e *Endpoint, payload []byte, i int, now time.Time) {
	e.Send(gamemsg.TypeEntityRPC, wire.ReliableOrdered, payload, now)
	e.Poll(now, discard)
	e.OnAck(Ack{Ack: uint32(i), Bits: ^uint32(0), DelayMS: 1}, now)
}

// receiveCycle is one steady-state receiving step on the ordered channel with
// every pair swapped, so half the messages are held and drained, followed by
// the receive pass's Poll (which emits an Ack every AckDelay). Callers space
// packets 1 ms apart, a busy peer.
func receiveCycle(e *Endpoint, h *wire.Header, payload []byte, i int, now time.Time) {
	s := uint32(i^1) + 1 // 2,1,4,3,… for i = 0,1,2,3,…
	h.Sequence, h.OrderedSequence = s, s
	e.Receive(h, payload, now, discard)
	e.Poll(now, discard)
}

func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	payload := make([]byte, 300)
	snd := New(Config{}, t0)
	i := 1
	warm := func() { sendCycle(snd, payload, i, at(time.Duration(i)*ms)); i++ }
	for range 100 {
		warm()
	}
	if n := testing.AllocsPerRun(1000, warm); n != 0 {
		t.Errorf("Send/Poll/OnAck: %v allocations per cycle, want 0", n)
	}

	rcv := New(Config{}, t0)
	h := &wire.Header{Type: gamemsg.TypeEntitySpawn, Channel: wire.ReliableOrdered}
	j := 0
	step := func() { receiveCycle(rcv, h, payload, j, at(time.Duration(j)*ms)); j++ }
	for range 100 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("Receive (reordered)/Poll: %v allocations per packet, want 0", n)
	}
	if s := rcv.Stats(); s.Delivered+uint64(s.Held) != uint64(j) || s.Held > 1 || s.AckRangesDropped != 0 ||
		s.AcksSent < uint64(j/10) || snd.Stats().InFlight != 0 {
		t.Errorf("cycles did not do the real work: delivered %d of %d, held %d, acks %d, ranges dropped %d, inflight %d",
			s.Delivered, j, s.Held, s.AcksSent, s.AckRangesDropped, snd.Stats().InFlight)
	}
}

func BenchmarkSendPollAck(b *testing.B) {
	e := New(Config{}, t0)
	payload := make([]byte, 300)
	i := 1
	for b.Loop() {
		sendCycle(e, payload, i, at(time.Duration(i)*time.Microsecond))
		i++
	}
}

func BenchmarkReceiveOrderedReordered(b *testing.B) {
	e := New(Config{}, t0)
	payload := make([]byte, 300)
	h := &wire.Header{Type: gamemsg.TypeEntitySpawn, Channel: wire.ReliableOrdered}
	i := 0
	for b.Loop() {
		receiveCycle(e, h, payload, i, at(time.Duration(i)*ms))
		i++
	}
	if st := e.Stats(); st.Delivered < uint64(i-1) || st.AckRangesDropped != 0 {
		b.Fatalf("delivered %d of %d, ack ranges dropped %d", st.Delivered, i, st.AckRangesDropped)
	}
}

func BenchmarkReceiveReliable(b *testing.B) {
	e := New(Config{}, t0)
	payload := make([]byte, 300)
	h := &wire.Header{Type: gamemsg.TypeEntityRPC, Channel: wire.Reliable}
	i := 1
	for b.Loop() {
		h.Sequence = uint32(i)
		e.Receive(h, payload, at(time.Duration(i)*ms), discard)
		e.Poll(at(time.Duration(i)*ms), discard)
		i++
	}
	if st := e.Stats(); st.Delivered != uint64(i-1) || st.AckRangesDropped != 0 {
		b.Fatalf("delivered %d of %d, ack ranges dropped %d", st.Delivered, i-1, st.AckRangesDropped)
	}
}

// BenchmarkRetransmitFullWindow measures a Poll that retransmits a full
// window of 256 packets (the worst case of the timer scan).
func BenchmarkRetransmitFullWindow(b *testing.B) {
	e := New(Config{ConnectionTimeout: 1 << 62, MaxRetransmissions: 1 << 30}, t0)
	payload := make([]byte, 300)
	for range MaxInFlightLimit {
		e.Send(gamemsg.TypeEntityRPC, wire.Reliable, payload, t0)
	}
	e.Poll(t0, discard)
	now := t0
	for b.Loop() {
		now = now.Add(8 * MaxRTO)
		if err := e.Poll(now, discard); err != nil {
			b.Fatal(err)
		}
	}
}
