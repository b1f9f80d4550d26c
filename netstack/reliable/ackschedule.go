package reliable

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Acknowledgement scheduling (§7).
//
// Every reliable arrival that is accepted, new or duplicate, must be covered
// by an Ack sent at the next emission: an Ack with ack = a covers a and the 32
// sequences below it. The regular Ack (ack = highest received) covers only
// [highest−32, highest], and the highest can move a long way between an
// arrival and the emission (a burst, reordering, a retransmission arriving
// long after its successors). So each arrival is recorded in a pending range
// [lo, hi] with hi − lo ≤ 32; at emission, every range the regular Ack does
// not reach gets its own Ack with ack = hi. This is §7's "more than 32 below
// its highest, it also sends an Ack whose ack is that packet's sequence",
// judged when the Ack leaves rather than when the packet arrives, with
// neighbouring packets sharing one extra Ack.
//
// A range lives for 1 + RedundantAcks emissions after its last arrival (the
// Ack and its repeats), then it is retired.
//
// A span-limited sender (≤ 256 in flight, and it cannot slide its window
// further without our Acks) brings at most about 512 sequences between two
// emissions, about 16 ranges; ackRangeSlots leaves room for fragmentation and
// misordered retransmissions. An arrival that finds every slot taken is
// counted and not scheduled: its sender retransmits, and the duplicate is
// acknowledged then.
const ackRangeSlots = 32

type ackRange struct {
	lo, hi uint32
	at     time.Duration // arrival of hi, for ack_delay_ms
	sent   int           // emissions since the last arrival merged in
}

// ackRanges holds the pending ranges in r[:n]. r grows on demand up to
// ackRangeSlots and is kept once grown: an idle peer costs no slots, a busy
// one stops allocating.
type ackRanges struct {
	r []ackRange
	n int
}

// add records arrival s at t. It returns false when s fits no range and no
// slot is free.
func (a *ackRanges) add(s uint32, t time.Duration) bool {
	// Newest ranges first: arrivals cluster around recent ones.
	for i := a.n - 1; i >= 0; i-- {
		r := &a.r[i]
		switch {
		case s >= r.lo && s <= r.hi:
			r.sent = 0
			return true
		case s > r.hi && s-r.lo <= AckBits:
			r.hi, r.at, r.sent = s, t, 0
			return true
		case s < r.lo && r.hi-s <= AckBits:
			r.lo, r.sent = s, 0
			return true
		}
	}
	if a.n == len(a.r) {
		if a.n >= ackRangeSlots {
			return false
		}
		grown := make([]ackRange, min(max(2*a.n, 4), ackRangeSlots))
		copy(grown, a.r[:a.n])
		a.r = grown
	}
	a.r[a.n] = ackRange{lo: s, hi: s, at: t}
	a.n++
	return true
}

// scheduleAck records arrival s and makes an Ack due by t+delay, followed by
// the configured redundant repeats.
func (e *Endpoint) scheduleAck(s uint32, t, delay time.Duration) {
	if delay > 0 && e.cfg.AckEvery > 0 {
		if e.sinceAck++; e.sinceAck >= e.cfg.AckEvery {
			delay = 0
		}
	}
	e.ackDue = min(e.ackDue, t+delay)
	e.ackRepeat = e.cfg.RedundantAcks
	if !e.pending.add(s, t) {
		e.st.ackRangesDropped++
	}
}

// emitAcks sends the regular Ack for the highest sequence, then one Ack per
// pending range it does not reach, retires ranges that have had their Ack and
// repeats, and schedules the next repeat (with the then current state) while
// one is owed.
//
// Acks that follow a reliable packet of this flush (e.carried) are not
// repeated: they share its datagram, so they are lost only with it, and it
// is retransmitted — with the Ack state of that time — until acknowledged.
// The repeat is for an Ack that travels alone (the answer to a lone
// retransmission); a request-answer exchange, whose every answer carries
// the Acks of its request, would otherwise send a datagram of Acks alone
// after every answer.
func (e *Endpoint) emitAcks(t time.Duration, emit func(*wire.Header, []byte)) {
	repeats := e.cfg.RedundantAcks
	if e.carried {
		repeats, e.ackRepeat = 0, 0
	}
	e.emitAck(e.highest, t-e.highestAt, emit)
	e.sinceAck = 0
	kept := 0
	for i := 0; i < e.pending.n; i++ {
		r := e.pending.r[i]
		if e.highest-r.lo > AckBits {
			e.emitAck(r.hi, t-r.at, emit)
		}
		if r.sent++; r.sent <= repeats {
			e.pending.r[kept] = r
			kept++
		}
	}
	e.pending.n = kept
	e.ackDue = never
	if e.ackRepeat > 0 || kept > 0 {
		e.ackRepeat = max(e.ackRepeat-1, 0)
		e.ackDue = t + e.cfg.AckDelay
	}
}

func (e *Endpoint) emitAck(ack uint32, held time.Duration, emit func(*wire.Header, []byte)) {
	a := Ack{Ack: ack, Bits: e.ackBits(ack), DelayMS: uint16(min(max(held/time.Millisecond, 0), 0xFFFF))}
	e.emitHdr = wire.Header{Type: wire.TypeAck, Channel: wire.Unreliable, Sequence: e.NextUnreliableSequence()}
	e.st.acksSent++
	emit(&e.emitHdr, AppendAck(e.ackBuf[:0], a))
}

// ackBits reports, for i in 0..31, whether ack−1−i was received.
func (e *Endpoint) ackBits(ack uint32) uint32 {
	var b uint32
	for i := uint32(0); i < AckBits && i+1 < ack; i++ {
		if e.recv.has(ack - 1 - i) {
			b |= 1 << i
		}
	}
	return b
}
