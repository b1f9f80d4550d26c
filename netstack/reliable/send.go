package reliable

import (
	"fmt"
	"math"
	"math/bits"
	"time"
	"unsafe"

	"github.com/sparkhost/sparkhost/netstack/internal/prefetch"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// outState is the life cycle of an in-flight slot.
type outState uint8

const (
	outFree   outState = iota
	outUnsent          // has a sequence, waiting for Poll to transmit it
	outSent            // transmitted, waiting for its ack
	outAcked           // acked, waiting for older packets so the window can slide
)

// outPacket is one reliable packet between sequence assignment and ack. It
// is 64 bytes, one cache line: a busy server's rings do not stay in the
// cache, and each field a Send, a transmission or an Ack touches is then on
// the one line that slot's first access brought in.
type outPacket struct {
	hdr       wire.Header
	buf       *[]byte
	firstSent time.Duration
	lastTx    uint64        // number of its latest transmission (Endpoint.txCount)
	due       time.Duration // next retransmission, or failure after the last
	retx      int32         // retransmissions so far; Karn samples only at 0
	state     outState
	// last: its latest transmission was made a connection timeout or more
	// after its first (RetryUntilTimeout): the end of its wait is failure.
	last bool
}

// queued is a message waiting for room in the in-flight window. Its
// OrderedSequence is fixed at Send so that the order of Send calls is the
// delivery order; its reliability sequence is assigned on entering the window.
type queued struct {
	typ              wire.MessageType
	ch               wire.Channel
	ordered          uint32
	buf              *[]byte
	fragIdx, fragCnt uint8 // a fragment of a larger message (fragCnt 0: whole)
}

// sendQueue is a FIFO ring that grows by doubling up to max entries, so an
// idle peer costs nothing and a busy one stops allocating once grown.
type sendQueue struct {
	items   []queued
	head, n int
	max     int
}

func (q *sendQueue) full() bool { return q.n >= q.max }

func (q *sendQueue) push(m queued) {
	if q.n == len(q.items) {
		grown := make([]queued, min(max(2*len(q.items), 16), q.max))
		for i := 0; i < q.n; i++ {
			grown[i] = q.items[(q.head+i)%len(q.items)]
		}
		q.items, q.head = grown, 0
	}
	q.items[(q.head+q.n)%len(q.items)] = m
	q.n++
}

func (q *sendQueue) pop() queued {
	m := q.items[q.head]
	q.items[q.head] = queued{}
	q.head = (q.head + 1) % len(q.items)
	q.n--
	return m
}

// Send accepts a reliable message for the peer and copies payload into
// pooled buffers (the caller may reuse payload at once). ch must be Reliable
// or ReliableOrdered. The packet gets the next reliability Sequence (shared by
// both channels, from 1) when it enters the in-flight window, and, on
// ReliableOrdered, the next OrderedSequence (from 1) now. It is transmitted by
// the next Poll. When the window is full the message waits in the local
// queue; when that is full too, Send returns ErrSendQueueFull and keeps
// nothing.
//
// With Config.MaxFragmentPayload set, a longer payload is split into
// fragments (docs/protocol.md §5.3): each is its own reliable packet, the
// fragments take consecutive reliability sequences (they leave the queue
// together, in order) and share the message's OrderedSequence; the peer
// reassembles them.
//
// The client's ClientFinished is simply its first Send (type 1 on Reliable),
// so it travels as Sequence 1 and the next reliable packet is Sequence 2.
func (e *Endpoint) Send(typ wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	parts := 1
	if f := e.cfg.MaxFragmentPayload; f > 0 && len(payload) > f {
		parts = (len(payload) + f - 1) / f
	}
	switch {
	case e.failErr != nil:
		return e.failErr
	case !ch.IsReliable():
		return ErrNotReliableChannel
	case len(payload) > wire.MaxPayload:
		return ErrPayloadTooLarge
	case uint64(e.nextSeq)+uint64(e.queue.n)+uint64(parts) > math.MaxUint32,
		ch == wire.ReliableOrdered && e.nextOrdered == math.MaxUint32:
		return ErrSequenceExhausted
	}
	roomNow := e.queue.n == 0 && e.windowHasRoom()
	if !(parts == 1 && roomNow) && e.queue.n+parts > e.queue.max {
		return ErrSendQueueFull
	}
	m := queued{typ: typ, ch: ch}
	if ch == wire.ReliableOrdered {
		m.ordered = e.nextOrdered
		e.nextOrdered++
	}
	t := e.since(now)
	if parts == 1 {
		m.buf = copyBuf(payload)
		e.admit(m, t)
		return nil
	}
	f := e.cfg.MaxFragmentPayload
	m.fragCnt = uint8(parts)
	for i := range parts {
		m.fragIdx = uint8(i)
		m.buf = copyBuf(payload[i*f : min((i+1)*f, len(payload))])
		e.admit(m, t)
	}
	return nil
}

// admit puts m in the window when it may go now (nothing queued before it,
// room in the window), else at the back of the queue.
func (e *Endpoint) admit(m queued, t time.Duration) {
	if e.queue.n == 0 && e.windowHasRoom() {
		e.enterWindow(m, t)
		return
	}
	e.queue.push(m)
}

func (e *Endpoint) windowHasRoom() bool { return e.nextSeq-e.oldest < uint32(e.cfg.MaxInFlight) }

// growOut makes room in the ring out for one more sequence, doubling it up to
// MaxInFlight, and moves every sequence in [oldest, nextSeq) to its slot in
// the new ring. The ring starts empty: an idle peer does not pay for a full
// window (MaxInFlight slots), a busy one stops allocating once grown.
func (e *Endpoint) growOut() {
	span := e.nextSeq - e.oldest
	if span < uint32(len(e.out)) {
		return
	}
	grown := make([]outPacket, min(max(2*len(e.out), minOutSlots), ceilPow2(e.cfg.MaxInFlight)))
	for s := e.oldest; s != e.nextSeq; s++ {
		grown[s%uint32(len(grown))] = *e.slot(s)
	}
	e.out = grown
}

// minOutSlots is the first size of the ring out.
const minOutSlots = 4

// slot is sequence s's place in the ring, whose length is a power of two
// (a mask, not a division: several slots are looked up per message).
func (e *Endpoint) slot(s uint32) *outPacket { return &e.out[s&uint32(len(e.out)-1)] }

// ceilPow2 is the least power of two ≥ n (n ≥ 1).
func ceilPow2(n int) int { return 1 << bits.Len(uint(n-1)) }

// enterWindow gives m the next reliability sequence and makes it sendable.
func (e *Endpoint) enterWindow(m queued, t time.Duration) {
	e.growOut()
	s := e.nextSeq
	e.nextSeq++
	*e.slot(s) = outPacket{
		hdr: wire.Header{
			Type: m.typ, Channel: m.ch, Sequence: s, OrderedSequence: m.ordered,
			FragIndex: m.fragIdx, FragCount: m.fragCnt,
		},
		buf:   m.buf,
		state: outUnsent,
	}
	e.inFlight++
	e.sendDue = min(e.sendDue, t)
}

// fillWindow moves queued messages into the window while it has room.
func (e *Endpoint) fillWindow(t time.Duration) {
	for e.queue.n > 0 && e.windowHasRoom() {
		e.enterWindow(e.queue.pop(), t)
	}
}

// transmitNew sends every packet that has a sequence but was never sent.
func (e *Endpoint) transmitNew(t time.Duration, emit func(*wire.Header, []byte)) {
	for ; e.firstUnsent != e.nextSeq; e.firstUnsent++ {
		p := e.slot(e.firstUnsent)
		p.state = outSent
		p.firstSent = t
		e.txCount++
		p.lastTx = e.txCount
		p.due = t + e.rtt.rto
		e.timerDue = min(e.timerDue, p.due, e.deadline(p))
		e.st.sent++
		e.emitPacket(p, emit)
	}
	e.sendDue = never
}

func (e *Endpoint) emitPacket(p *outPacket, emit func(*wire.Header, []byte)) {
	e.emitHdr = p.hdr
	e.carried = true
	emit(&e.emitHdr, *p.buf)
}

// runTimers retransmits the sent packets whose wait expired and detects
// delivery failure (giveUp). The k-th retransmission waits
// RTO·min(2^k, 8), with the RTO current when it is sent, at most
// MaxRetransmitWait with RetryUntilTimeout. It scans the whole window
// (≤ 256 slots), which is cheaper than keeping a timer heap in order under
// acks.
//
// An expired packet is resent at once when the peer has acknowledged a
// transmission made after it: the peer is alive and this one was lost. When
// the peer has acknowledged nothing sent since, it may be lost too — or the
// peer is slow (a client starved of CPU, a stalled path) and every packet in
// flight is still on its way. Resending the whole window then only adds to
// what a slow peer must get through, and a server with many slow peers
// melts down in its own retransmissions. So such packets are probes: at most
// MaxProbes of them (the oldest) go per silent round, and the rounds back
// off like a retransmission, wait(r) after the r-th; the others wait for
// the next round or for an Ack, which either acknowledges them or, by
// acknowledging the probes, shows them lost (then they go at once). Every
// packet keeps its own retransmission count and first-send time, so a dead
// peer is detected as before: the oldest packet is always probed first.
func (e *Endpoint) runTimers(t time.Duration, emit func(*wire.Header, []byte)) error {
	next := never
	probes, deferred := 0, false
	probing := t >= e.probeDue
	for s := e.oldest; s != e.firstUnsent; s++ {
		p := e.slot(s)
		if p.state != outSent {
			continue
		}
		if err := e.giveUp(s, p, t); err != nil {
			return err
		}
		deadline := e.deadline(p)
		if t >= p.due {
			if p.lastTx > e.ackedTx { // nothing sent after it has been acknowledged
				if !probing || probes >= MaxProbes {
					deferred = true
					next = min(next, deadline)
					continue
				}
				probes++
			}
			if !e.cfg.RetryUntilTimeout && int(p.retx) >= e.cfg.MaxRetransmissions {
				return e.fail(fmt.Errorf("%w: sequence %d unacknowledged after %d retransmissions",
					ErrDeliveryFailed, s, p.retx))
			}
			p.retx++
			e.txCount++
			p.lastTx = e.txCount
			p.due = t + e.wait(int(p.retx))
			p.last = e.cfg.RetryUntilTimeout && t-p.firstSent >= e.cfg.ConnectionTimeout
			e.st.retransmissions++
			e.emitPacket(p, emit)
		}
		next = min(next, p.due, deadline)
	}
	if probes > 0 {
		e.silentRounds++
		e.probeDue = t + e.wait(e.silentRounds)
	}
	e.deferred = deferred
	if deferred {
		next = min(next, e.probeDue)
	}
	e.timerDue = next
	return nil
}

// giveUp fails the endpoint when the sent packet p (sequence s) has gone
// unacknowledged for too long at t. Protocol v3: once it has waited the
// connection timeout since its first transmission (the retransmission
// count is checked where it is resent). With RetryUntilTimeout (v4): once
// the wait of a transmission made at least the connection timeout after
// its first is over — so it is given up no earlier than the connection
// timeout, and only after a last try that a peer back from an outage
// shorter than that timeout can answer.
func (e *Endpoint) giveUp(s uint32, p *outPacket, t time.Duration) error {
	switch {
	case e.cfg.RetryUntilTimeout && p.last && t >= p.due:
		return e.fail(fmt.Errorf("%w: sequence %d unacknowledged for %v, %d retransmissions (connection timeout)",
			ErrDeliveryFailed, s, t-p.firstSent, p.retx))
	case !e.cfg.RetryUntilTimeout && t >= p.firstSent+e.cfg.ConnectionTimeout:
		return e.fail(fmt.Errorf("%w: sequence %d unacknowledged for %v after %d retransmissions (connection timeout)",
			ErrDeliveryFailed, s, t-p.firstSent, p.retx))
	}
	return nil
}

// deadline is when p fails whatever its retransmissions (v3: its connection
// timeout); never with RetryUntilTimeout, where only the end of a wait is.
func (e *Endpoint) deadline(p *outPacket) time.Duration {
	if e.cfg.RetryUntilTimeout {
		return never
	}
	return p.firstSent + e.cfg.ConnectionTimeout
}

// wait is how long the k-th retransmission (k = 0: the original) waits, and
// the wait after the k-th silent probe round.
func (e *Endpoint) wait(k int) time.Duration {
	w := backoff(e.rtt.rto, k)
	if e.cfg.RetryUntilTimeout {
		w = min(w, MaxRetransmitWait)
	}
	return w
}

func (e *Endpoint) fail(err error) error {
	e.failErr = err
	return err
}

// OnAck applies an Ack from the peer: a.Ack and every sequence a.Ack−1−i whose
// bit i is set are acknowledged. Acks for sequences not in flight (old,
// repeated, or never sent) are ignored. An RTT sample is taken only when
// a.Ack itself is newly acknowledged and was never retransmitted (Karn's
// rule), minus a.DelayMS; acknowledgements carried by the bits give no
// sample, since the delay field describes a.Ack alone.
func (e *Endpoint) OnAck(a Ack, now time.Time) {
	if e.failErr != nil {
		return
	}
	t := e.since(now)
	e.st.acksReceived++
	if p := e.sentSlot(a.Ack); p != nil {
		if p.retx == 0 {
			e.rtt.sample(t-p.firstSent, time.Duration(a.DelayMS)*time.Millisecond)
		}
		e.markAcked(p, t)
	}
	for b := a.Bits; b != 0; b &= b - 1 {
		i := uint32(bits.TrailingZeros32(b))
		if a.Ack <= i+1 {
			break // a.Ack−1−i would be 0 or wrap: never a sequence
		}
		if p := e.sentSlot(a.Ack - 1 - i); p != nil {
			e.markAcked(p, t)
		}
	}
	e.slide(t)
}

// Acknowledged reports whether reliable sequence s was sent and has been
// acknowledged by the peer.
func (e *Endpoint) Acknowledged(s uint32) bool {
	if s-e.oldest >= e.firstUnsent-e.oldest { // not in the window
		return int32(e.oldest-s) > 0 && s != 0 // below it: acked and slid past
	}
	return e.slot(s).state == outAcked
}

// Settled reports whether every reliable message accepted by Send has been
// acknowledged: nothing is in flight or waiting in the queue. A graceful
// close lingers until it is (or its linger ends).
func (e *Endpoint) Settled() bool {
	return e.oldest == e.nextSeq && e.queue.n == 0
}

// Unsettled returns how many reliable packets accepted by Send are not yet
// acknowledged (in flight, or waiting in the queue).
func (e *Endpoint) Unsettled() int {
	return int(e.nextSeq-e.oldest) + e.queue.n
}

// sentSlot returns the slot of s if s was transmitted and is not yet acked.
func (e *Endpoint) sentSlot(s uint32) *outPacket {
	if s-e.oldest >= e.firstUnsent-e.oldest { // also catches s < oldest (wraps)
		return nil
	}
	if p := e.slot(s); p.state == outSent {
		return p
	}
	return nil
}

// markAcked records p's acknowledgement at t. An acknowledged transmission
// newer than any before ends a silent period (runTimers): probing starts
// over, and packets held back as probes that were sent before it are resent
// at the next Poll if their wait is over.
func (e *Endpoint) markAcked(p *outPacket, t time.Duration) {
	if p.lastTx > e.ackedTx {
		e.ackedTx = p.lastTx
		e.silentRounds, e.probeDue = 0, 0
		if e.deferred {
			e.timerDue = min(e.timerDue, t)
		}
	}
	p.state = outAcked
	releaseBuf(p.buf)
	p.buf = nil
	e.inFlight--
}

// slide advances the window over acked packets and refills it from the queue.
// The window is a span of sequences, not a count: one unacknowledged packet at
// its bottom holds back new sequences. That is what bounds how far ahead the
// peer's receive window must look (see seqWindow).
func (e *Endpoint) slide(t time.Duration) {
	for e.oldest != e.firstUnsent && e.slot(e.oldest).state == outAcked {
		*e.slot(e.oldest) = outPacket{}
		e.oldest++
	}
	if e.oldest == e.firstUnsent {
		e.timerDue = never
	}
	e.fillWindow(t)
	if e.Settled() {
		e.settledAt = t
	}
}

// outIdleRelease is how long a send ring of the first size is kept once
// nothing is in flight or queued.
const outIdleRelease = time.Second

// releaseIdleOut lets go of a send ring of the first size that has been
// empty for outIdleRelease: an idle session (it sends only unreliable
// heartbeats, whose flushes still Poll) then holds no ring, while a peer
// sending now and then reuses its ring without allocating. A ring that grew
// beyond the first size belongs to a busy peer and is kept.
func (e *Endpoint) releaseIdleOut(t time.Duration) {
	if e.out != nil && len(e.out) <= minOutSlots && e.Settled() && t-e.settledAt >= outIdleRelease {
		e.out = nil
	}
}

// Prefetch asks the processor to load the endpoint's state a datagram's
// receive and its answers touch (the endpoint, the send ring, the receive
// window), so that on a server with more sessions than its caches hold the
// misses overlap the work before it (opening the datagram). It changes
// nothing.
func (e *Endpoint) Prefetch() {
	prefetch.Range(unsafe.Pointer(e), unsafe.Sizeof(*e))
	if len(e.out) > 0 {
		prefetch.Range(unsafe.Pointer(&e.out[0]), uintptr(len(e.out))*unsafe.Sizeof(e.out[0]))
	}
	if b := e.recv.bits; len(b) > 0 {
		prefetch.Range(unsafe.Pointer(&b[0]), uintptr(len(b))*unsafe.Sizeof(b[0]))
	}
}
