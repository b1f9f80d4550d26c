package reliable

import (
	"bytes"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// fragmenting is a sender that splits messages above 1149 bytes.
func fragmenting() Config { return Config{MaxFragmentPayload: 1149} }

func payloadOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// TestFragmentSendAndReassemble: a 5,000-byte ordered message leaves as 5
// fragments on consecutive sequences sharing its OrderedSequence; delivered
// to a receiver in any order, it comes out whole, once, in its turn.
func TestFragmentSendAndReassemble(t *testing.T) {
	snd := New(fragmenting(), t0)
	big := payloadOf(5000, 1)
	if err := snd.Send(gamemsg.TypeGameStateSync, wire.ReliableOrdered, []byte("first"), t0); err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(gamemsg.TypeGameStateSync, wire.ReliableOrdered, big, t0); err != nil {
		t.Fatal(err)
	}
	pkts := poll(t, snd, 0)
	if len(pkts) != 6 {
		t.Fatalf("%d packets, want 1 + 5 fragments", len(pkts))
	}
	for i, p := range pkts[1:] {
		if p.h.FragIndex != uint8(i) || p.h.FragCount != 5 || p.h.Sequence != uint32(2+i) || p.h.OrderedSequence != 2 {
			t.Fatalf("fragment %d: %+v", i, p.h)
		}
		if want := min(1149, 5000-i*1149); len(p.p) != want {
			t.Fatalf("fragment %d: %d bytes, want %d", i, len(p.p), want)
		}
	}
	// Fragments first, in reverse, then the message before them.
	rcv := New(Config{}, t0)
	var d delivery
	for i := len(pkts) - 1; i >= 1; i-- {
		if !rcv.Receive(&pkts[i].h, pkts[i].p, t0, d.fn) {
			t.Fatalf("fragment %d refused", i-1)
		}
		if rcv.Receive(&pkts[i].h, pkts[i].p, t0, d.fn); rcv.Stats().DuplicatesReceived == 0 {
			t.Fatal("a repeated fragment is not a duplicate")
		}
	}
	if len(d.got) != 0 {
		t.Fatalf("delivered %d before the first message arrived", len(d.got))
	}
	rcv.Receive(&pkts[0].h, pkts[0].p, t0, d.fn)
	if len(d.got) != 2 || string(d.got[0].p) != "first" || !bytes.Equal(d.got[1].p, big) {
		t.Fatalf("delivered %d messages", len(d.got))
	}
	if h := d.got[1].h; h.Sequence != 2 || h.FragCount != 5 || h.OrderedSequence != 2 {
		t.Fatalf("reassembled header %+v: Sequence the first fragment's, FragCount kept", h)
	}
	st := rcv.Stats()
	if st.Reassembled != 1 || st.Reassembling != 0 || st.ReassemblyBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Every fragment was acknowledged on arrival.
	acks, _ := split(t, poll(t, rcv, 20*ms))
	if len(acks) == 0 || acks[0].Ack != 6 || acks[0].Bits&0x1F != 0x1F {
		t.Fatalf("acks %+v", acks)
	}
}

// TestFragmentRetransmitsOnlyTheLost: the sender resends only the fragments
// that were not acknowledged.
func TestFragmentRetransmitsOnlyTheLost(t *testing.T) {
	snd := New(fragmenting(), t0)
	rcv := New(Config{}, t0)
	big := payloadOf(4000, 9)
	if err := snd.Send(gamemsg.TypeEntityRPC, wire.Reliable, big, t0); err != nil {
		t.Fatal(err)
	}
	pkts := poll(t, snd, 0)
	var d delivery
	for i, p := range pkts {
		if i != 1 { // fragment 1 is lost
			rcv.Receive(&p.h, p.p, t0, d.fn)
		}
	}
	acks, _ := split(t, poll(t, rcv, 20*ms))
	for _, a := range acks {
		snd.OnAck(a, at(30*ms))
	}
	_, resent := split(t, poll(t, snd, time.Second))
	if len(resent) != 1 || resent[0].h.FragIndex != 1 {
		t.Fatalf("resent %+v, want fragment 1 alone", seqs(resent))
	}
	rcv.Receive(&resent[0].h, resent[0].p, at(time.Second), d.fn)
	if len(d.got) != 1 || !bytes.Equal(d.got[0].p, big) {
		t.Fatalf("delivered %d", len(d.got))
	}
}

// TestReassemblyBufferBound: fragments beyond ReassemblyBytes are dropped
// unacknowledged unless they belong to the oldest message in reassembly,
// which always finishes.
func TestReassemblyBufferBound(t *testing.T) {
	rcv := New(Config{ReassemblyBytes: 3000}, t0)
	var d delivery
	frag := func(first uint32, i, n uint8) *wire.Header {
		return &wire.Header{Type: gamemsg.TypeEntityRPC, Channel: wire.Reliable, Sequence: first + uint32(i), FragIndex: i, FragCount: n}
	}
	// Sequences far beyond what an honest sender may have in flight (256
	// past the first missing one), so only the bound and its exemptions
	// decide. B (520..523) arrives first: 2 × 1024 + 640 bytes kept.
	if !rcv.Receive(frag(520, 0, 4), payloadOf(1000, 1), t0, d.fn) || !rcv.Receive(frag(520, 1, 4), payloadOf(1000, 2), t0, d.fn) {
		t.Fatal("B's first fragments refused below the bound")
	}
	// A (510..513) starts lower but is not in reassembly: no exemption.
	if rcv.Receive(frag(510, 0, 4), payloadOf(1000, 3), t0, d.fn) {
		t.Fatal("a new message passed a full buffer by starting lower")
	}
	if rcv.Stats().ReassemblyFull != 1 {
		t.Fatalf("stats %+v", rcv.Stats())
	}
	for i := uint8(2); i < 4; i++ { // B, the oldest held, always goes on
		if !rcv.Receive(frag(520, i, 4), payloadOf(1000, 2+i), t0, d.fn) {
			t.Fatalf("B's fragment %d refused", i)
		}
	}
	if len(d.got) != 1 || len(d.got[0].p) != 4000 || rcv.Stats().ReassemblyBytes != 0 {
		t.Fatalf("delivered %d, holding %d bytes", len(d.got), rcv.Stats().ReassemblyBytes)
	}
	if !rcv.Receive(frag(510, 0, 4), payloadOf(1000, 3), t0, d.fn) {
		t.Fatal("A refused once the buffer was free")
	}
	// What an honest sender may have in flight is never refused.
	for i := uint8(0); i < 4; i++ {
		if !rcv.Receive(frag(1, i, 4), payloadOf(1000, 9), t0, d.fn) {
			t.Fatalf("fragment %d of a message within the sender's window refused", i)
		}
	}
}

// keptLimit is what a receiver may hold for its peer at most: the bound,
// plus the two exempt messages at pooled capacity (a message of at most
// MAX_PAYLOAD bytes never takes more than four times that in pooled
// buffers, whatever its fragment sizes), plus an honest sender's window of
// small packets.
func keptLimit(bound int) int {
	return bound + 2*(4*wire.MaxPayload+partialOverhead) + MaxInFlightLimit*(honestPacketBytes+partialOverhead)
}

// TestReassemblyHoldsItsBoundUnderAttack: a hostile peer sends fragments
// in every order the parser allows — new messages in descending order,
// duplicates, the most fragments with the smallest payloads, declared
// totals beyond MAX_PAYLOAD, ordered messages far ahead of their turn —
// and what the receiver holds never passes its documented bound.
func TestReassemblyHoldsItsBoundUnderAttack(t *testing.T) {
	const bound = DefaultReassemblyBytes
	big := payloadOf(wire.MaxPayload/2, 9)
	for _, tc := range []struct {
		name string
		send func(rcv *Endpoint, d *delivery)
	}{
		{"descending messages", func(rcv *Endpoint, d *delivery) {
			for first := uint32(1000); first > 64; first -= 64 {
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.Reliable, Sequence: first, FragCount: 64}, big, t0, d.fn)
			}
		}},
		{"tiny fragments of many messages", func(rcv *Endpoint, d *delivery) {
			for first := uint32(1); first < 1000; first += 64 {
				for i := uint8(0); i < 63; i++ {
					rcv.Receive(&wire.Header{Type: 1000, Channel: wire.Reliable, Sequence: first + uint32(i), FragIndex: i, FragCount: 64}, []byte{1}, t0, d.fn)
				}
			}
		}},
		{"one message beyond MAX_PAYLOAD", func(rcv *Endpoint, d *delivery) {
			for i := uint8(0); i < 63; i++ {
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.Reliable, Sequence: 1 + uint32(i), FragIndex: i, FragCount: 64}, big, t0, d.fn)
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.Reliable, Sequence: 1 + uint32(i), FragIndex: i, FragCount: 64}, big, t0, d.fn) // duplicate
			}
		}},
		{"ordered messages ahead of their turn", func(rcv *Endpoint, d *delivery) {
			for os := uint32(2); os < 200; os++ { // 1 never comes
				first := 1 + (os-2)*2
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.ReliableOrdered, Sequence: first, OrderedSequence: os, FragIndex: 0, FragCount: 2}, big, t0, d.fn)
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.ReliableOrdered, Sequence: first + 1, OrderedSequence: os, FragIndex: 1, FragCount: 2}, big, t0, d.fn)
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.ReliableOrdered, Sequence: 5000 + os, OrderedSequence: 300 + os%50}, payloadOf(1100, 1), t0, d.fn)
			}
		}},
		{"many claimants of the next ordered turn", func(rcv *Endpoint, d *delivery) {
			for first := uint32(1); first < 1000; first += 2 {
				rcv.Receive(&wire.Header{Type: 1000, Channel: wire.ReliableOrdered, Sequence: first, OrderedSequence: 1, FragCount: 2}, big, t0, d.fn)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := New(Config{}, t0)
			var d delivery
			tc.send(rcv, &d)
			if got := rcv.Stats().ReassemblyBytes; got > keptLimit(bound) {
				t.Fatalf("holding %d bytes for the peer; the bound is %d", got, keptLimit(bound))
			}
			if rcv.keptBytes != rcv.countKept() {
				t.Fatalf("keptBytes %d, but the buffers held add up to %d", rcv.keptBytes, rcv.countKept())
			}
		})
	}
}

// countKept adds up what the Endpoint really holds, to check keptBytes.
func (e *Endpoint) countKept() int {
	n := len(e.partials) * partialOverhead
	for _, p := range e.partials {
		for _, b := range p.frags {
			if b != nil {
				n += cap(*b)
			}
		}
	}
	for _, h := range e.held {
		if h.buf != nil {
			n += cap(*h.buf)
		}
	}
	return n
}

// TestReassemblyTimeoutSkipsTheOrderedTurn: a message whose fragments stop
// coming is dropped after ReassemblyTimeout, refused (Incomplete), and the
// ordered messages after it are delivered.
func TestReassemblyTimeoutSkipsTheOrderedTurn(t *testing.T) {
	rcv := New(Config{ReassemblyTimeout: time.Second}, t0)
	var refused []wire.RefusalReason
	rcv.SetRefusalHook(func(h *wire.Header, r wire.RefusalReason) { refused = append(refused, r) })
	var d delivery
	rcv.Receive(&wire.Header{Type: 14, Channel: wire.ReliableOrdered, Sequence: 1, OrderedSequence: 1, FragCount: 3}, []byte("a"), t0, d.fn)
	rcv.Receive(orderedHdr(4, 2), []byte("next"), t0, d.fn)
	rcv.Expire(at(999*ms), d.fn)
	if len(d.got) != 0 || len(refused) != 0 {
		t.Fatal("expired early")
	}
	rcv.Expire(at(time.Second), d.fn)
	if len(refused) != 1 || refused[0] != wire.RefusedIncomplete {
		t.Fatalf("refusals %v", refused)
	}
	if len(d.got) != 1 || string(d.got[0].p) != "next" {
		t.Fatalf("delivered %d: the ordered channel stalled behind the abandoned message", len(d.got))
	}
	if st := rcv.Stats(); st.ReassemblyTimeouts != 1 || st.Reassembling != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestInconsistentFragmentsRefused: fragments of one message that disagree
// are acknowledged; the message is refused when its last one arrives, and
// takes its ordered turn.
func TestInconsistentFragmentsRefused(t *testing.T) {
	rcv := New(Config{}, t0)
	var refused []wire.RefusalReason
	rcv.SetRefusalHook(func(h *wire.Header, r wire.RefusalReason) { refused = append(refused, r) })
	var d delivery
	rcv.Receive(&wire.Header{Type: 14, Channel: wire.ReliableOrdered, Sequence: 1, OrderedSequence: 1, FragCount: 2}, []byte("a"), t0, d.fn)
	rcv.Receive(&wire.Header{Type: 15, Channel: wire.ReliableOrdered, Sequence: 2, OrderedSequence: 1, FragIndex: 1, FragCount: 2}, []byte("b"), t0, d.fn)
	rcv.Receive(orderedHdr(3, 2), []byte("after"), t0, d.fn)
	if len(refused) != 1 || refused[0] != wire.RefusedInconsistent {
		t.Fatalf("refusals %v", refused)
	}
	if len(d.got) != 1 || string(d.got[0].p) != "after" {
		t.Fatalf("delivered %+v", d.got)
	}
}

// TestFragmentedSendQueueBound: a fragmented message needs room for all of
// its fragments in the queue, or Send refuses it whole.
func TestFragmentedSendQueueBound(t *testing.T) {
	e := New(Config{MaxFragmentPayload: 1149, MaxInFlight: 1, MaxQueued: 4}, t0)
	mustSend(t, e, wire.Reliable, "fills the window", 0)
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, payloadOf(5*1149, 1), t0); err != ErrSendQueueFull {
		t.Fatalf("5 fragments into a queue of 4: %v", err)
	}
	if err := e.Send(gamemsg.TypeEntityRPC, wire.Reliable, payloadOf(4*1149, 1), t0); err != nil {
		t.Fatalf("4 fragments into a queue of 4: %v", err)
	}
	if st := e.Stats(); st.Queued != 4 || st.InFlight != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReassemblyAllocatesNothing: receiving, reassembling and delivering a
// fragmented message reuses pooled buffers.
func TestReassemblyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	snd, rcv := New(fragmenting(), t0), New(Config{}, t0)
	big := payloadOf(4000, 5)
	// A recorder that keeps the sender's own payload slices: they stay
	// valid until acknowledged, and the receiver copies what it keeps.
	var r struct{ pkts []packet }
	keep := func(h *wire.Header, p []byte) { r.pkts = append(r.pkts, packet{*h, p}) }
	seq := 0
	var n int
	deliver := func(*wire.Header, []byte) { n++ }
	// Warm the pools and the engines' slices.
	step := func() {
		seq++
		now := at(time.Duration(seq) * ms)
		_ = snd.Send(gamemsg.TypeEntityRPC, wire.Reliable, big, now)
		r.pkts = r.pkts[:0]
		_ = snd.Poll(now, keep)
		for i := range r.pkts {
			rcv.Receive(&r.pkts[i].h, r.pkts[i].p, now, deliver)
		}
		r.pkts = r.pkts[:0]
		_ = rcv.Poll(now.Add(20*ms), keep)
		for _, p := range r.pkts {
			if a, err := ParseAck(p.p); err == nil {
				snd.OnAck(a, now.Add(20*ms))
			}
		}
	}
	for range 50 {
		step()
	}
	r.pkts = make([]packet, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		step()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per fragmented message", allocs)
	}
	if n < 150 {
		t.Fatalf("%d messages delivered", n)
	}
}

// FuzzReassembly drives a receiver with arbitrary fragments and whole
// messages (each op: 2 bytes of sequence offset, index, count, channel and
// type choice, a length) and checks the engine's bounds: nothing panics,
// the bytes held stay below their bound (keptLimit) and agree with the
// buffers really held, nothing
// delivered exceeds MAX_PAYLOAD, and an ordered delivery never goes back.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0, 1, 0, 3, 2, 40, 0, 2, 1, 3, 2, 40, 0, 3, 2, 3, 2, 40})
	f.Add([]byte{0, 9, 0, 0, 1, 10, 0, 5, 4, 5, 1, 255})
	f.Add([]byte{0, 1, 0, 2, 2, 1, 0, 2, 1, 2, 3, 1, 0, 3, 0, 0, 2, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const limit = 4096
		e := New(Config{ReassemblyBytes: limit, ReassemblyTimeout: time.Second}, t0)
		lastOrdered := uint32(0)
		deliver := func(h *wire.Header, p []byte) {
			if len(p) > wire.MaxPayload {
				t.Fatalf("delivered %d bytes", len(p))
			}
			if h.Channel == wire.ReliableOrdered {
				if h.OrderedSequence <= lastOrdered {
					t.Fatalf("ordered %d after %d", h.OrderedSequence, lastOrdered)
				}
				lastOrdered = h.OrderedSequence
			}
		}
		buf := make([]byte, 3000)
		for i := 0; i+6 <= len(ops) && i < 600; i += 6 {
			op := ops[i : i+6]
			h := wire.Header{Type: wire.MessageType(14 + op[4]%2), Sequence: 1 + uint32(op[0])<<8 | uint32(op[1]),
				FragIndex: op[2] % 70, FragCount: op[3] & 0x7F} // also what the parser refuses
			h.Channel = wire.Reliable
			if op[4]&2 != 0 {
				h.Channel = wire.ReliableOrdered
				h.OrderedSequence = 1 + uint32(op[4]>>2)
			}
			if op[3]&0x80 != 0 {
				h.FragCount, h.FragIndex = 0, 0 // a whole message
			}
			now := at(time.Duration(i) * 10 * time.Millisecond)
			e.Expire(now, deliver)
			e.Receive(&h, buf[:1+int(op[5])*11], now, deliver)
			if st := e.Stats(); st.ReassemblyBytes > keptLimit(limit) || st.ReassemblyBytes != e.countKept() {
				t.Fatalf("holding %d bytes, buffers of %d", st.ReassemblyBytes, e.countKept())
			}
		}
		e.Expire(at(time.Hour), deliver)
		if st := e.Stats(); st.Reassembling != 0 || st.ReassemblyBytes != e.countKept() {
			t.Fatalf("after every timeout: %d messages, %d bytes held, buffers of %d", st.Reassembling, st.ReassemblyBytes, e.countKept())
		}
		e.Close()
		if e.keptBytes != 0 {
			t.Fatalf("after Close: %d bytes counted", e.keptBytes)
		}
	})
}
