package reliable

import (
	"math"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// never is the "no deadline" value of the engine's internal clock.
const never = time.Duration(math.MaxInt64)

// Endpoint is the reliability state for one peer, both directions: the
// sending half (sequence numbering, in-flight window, local queue,
// retransmission timers, RTT estimate) and the receiving half (duplicate
// window, ordered hold slots, pending Acks).
//
// How the owner drives it, all under the peer's lock:
//   - Send queues a reliable message; nothing goes out until Poll.
//   - For every authenticated packet from the peer: an Ack (type 6) goes to
//     OnAck, everything else to Receive. After the receive pass, call Poll so
//     that acknowledgements due at once (duplicates) leave in the same pass.
//   - Call Poll after Sends and whenever NextDeadline passes. Polling once per
//     tick instead is enough if AckDelay + tick interval ≤ 33 ms (10 ms +
//     16.7 ms at 60 Hz), so that Acks still leave within §7's 33 ms.
//   - When Poll returns ErrDeliveryFailed, close the connection with
//     Disconnect(ReliableDeliveryFailed), then Close the Endpoint.
//
// Times passed in must come from one monotonic clock and never go backwards.
// Internally they are kept as offsets from the time given to New.
type Endpoint struct {
	cfg     Config
	base    time.Time
	failErr error

	// Sending half. Reliability sequences in [oldest, nextSeq) occupy the ring
	// out, at index seq & (len(out)-1); those in [firstUnsent, nextSeq) have
	// never been transmitted. nextSeq − oldest ≤ len(out), a power of two at
	// most MaxInFlight rounded up to one: the ring grows on demand (growOut).
	out            []outPacket
	warmSink       outState      // Warm's loads land here, so that they are kept
	settledAt      time.Duration // when the last in-flight packet was acked (releaseIdleOut)
	oldest         uint32
	firstUnsent    uint32
	nextSeq        uint32
	nextOrdered    uint32
	nextUnreliable uint32
	inFlight       int
	queue          sendQueue
	rtt            rttEstimator
	// timerDue is a lower bound on the earliest retransmission or failure
	// deadline: acks may make it early (a harmless wasted Poll), never late.
	timerDue time.Duration
	// sendDue is when the oldest untransmitted packet became sendable.
	sendDue time.Duration
	// Probing a silent peer (runTimers): transmissions are numbered in
	// the order they leave (txCount is the last number given), ackedTx is
	// the latest transmission the peer has acknowledged (0: none yet);
	// silentRounds counts the probe rounds since, the next allowed at
	// probeDue; deferred is set while expired packets wait for one.
	txCount, ackedTx uint64
	silentRounds     int
	probeDue         time.Duration
	deferred         bool

	// Receiving half.
	recv      seqWindow
	highest   uint32
	highestAt time.Duration
	ackDue    time.Duration
	ackRepeat int // redundant Acks still to send after the next one
	// carried says this Poll emitted a reliable packet: an Ack emitted
	// after it in the same flush rides in its datagram (ackschedule.go).
	carried   bool
	sinceAck  int // new reliable arrivals since the last Ack (Config.AckEvery)
	pending   ackRanges
	expectOrd uint32
	held      []heldPacket
	nHeld     int

	// Reassembly (reassembly.go).
	partials  []*partial
	freeParts []*partial
	// keptBytes is what the Endpoint holds for the peer that the peer chose
	// to send (reassembly.go): fragment buffers, whole ordered messages
	// waiting for their turn, each partial's bookkeeping, all at their
	// pooled capacity. Bounded by Config.ReassemblyBytes plus two messages.
	keptBytes   int
	partialDue  time.Duration // lower bound on the earliest reassembly timeout
	refusedHook func(h *wire.Header, reason wire.RefusalReason)

	// Scratch handed to callbacks, kept here so passing a pointer to an
	// unknown func does not make a fresh header escape to the heap per call.
	emitHdr    wire.Header
	deliverHdr wire.Header
	wholeHdr   wire.Header // a reassembled (or abandoned) message
	ackBuf     [AckSize]byte

	st counters
}

// counters are the monotonically increasing parts of Stats.
type counters struct {
	sent, retransmissions, acksSent, acksReceived                uint64
	delivered, duplicates, reorderDropped, windowDropped         uint64
	staleOrdered, invalid, ackRangesDropped, unreliableDelivered uint64
	refused, reassembled, reassemblyFull, reassemblyTimeouts     uint64
}

// New returns an Endpoint for one peer. now is the current monotonic time.
func New(cfg Config, now time.Time) *Endpoint {
	cfg = cfg.populate()
	return &Endpoint{
		cfg:            cfg,
		base:           now,
		oldest:         1,
		firstUnsent:    1,
		nextSeq:        1,
		nextOrdered:    1,
		nextUnreliable: 1,
		queue:          sendQueue{max: cfg.MaxQueued},
		rtt:            newRTTEstimator(),
		timerDue:       never,
		sendDue:        never,
		recv:           newSeqWindow(cfg.ReceiveWindow),
		ackDue:         never,
		expectOrd:      1,
		partialDue:     never,
	}
}

// since converts a caller's time to the engine's internal clock.
func (e *Endpoint) since(now time.Time) time.Duration { return now.Sub(e.base) }

// NextUnreliableSequence returns the header Sequence for the next Unreliable
// packet to the peer: a per-direction counter from 1, separate from the
// reliability sequence (§7). Acks emitted by Poll draw from it too, so every
// unreliable packet to the peer should take its Sequence from here.
func (e *Endpoint) NextUnreliableSequence() uint32 {
	s := e.nextUnreliable
	e.nextUnreliable++
	return s
}

// Poll emits everything due at now, in this order: pending Acks, reliable
// packets whose retransmission timer expired, then packets never sent (as far
// as the in-flight window allows). emit is called once per packet with a
// header whose Type, Channel, Sequence and OrderedSequence are set; emit fills
// in SenderID and Timestamp, seals and sends. emit must not retain h or
// payload, nor modify payload.
//
// Poll returns ErrDeliveryFailed (wrapped with the failing sequence) when a
// packet went unacknowledged too long (Config.RetryUntilTimeout says how
// long: v4's rule or v3's); the Endpoint is then dead.
func (e *Endpoint) Poll(now time.Time, emit func(h *wire.Header, payload []byte)) error {
	if e.failErr != nil {
		return e.failErr
	}
	t := e.since(now)
	e.carried = false // a new flush: what the last one emitted is gone
	if t >= e.ackDue {
		e.emitAcks(t, emit)
	}
	if t >= e.timerDue {
		if err := e.runTimers(t, emit); err != nil {
			return err
		}
	}
	e.fillWindow(t)
	e.transmitNew(t, emit)
	e.releaseIdleOut(t)
	return nil
}

// NextDeadline returns the earliest time at which Poll has something to do,
// or the zero Time when the Endpoint is idle (or dead). It may be slightly
// early after acks arrive; a Poll then simply finds nothing due.
func (e *Endpoint) NextDeadline() time.Time {
	if e.failErr != nil {
		return time.Time{}
	}
	d := min(e.ackDue, e.timerDue, e.sendDue)
	if d == never {
		return time.Time{}
	}
	return e.base.Add(d)
}

// Close returns every buffer the Endpoint holds to the shared pool. After
// Close, Send and Poll return ErrClosed and Receive accepts nothing.
func (e *Endpoint) Close() {
	for i := range e.out {
		releaseBuf(e.out[i].buf)
		e.out[i] = outPacket{}
	}
	for e.queue.n > 0 {
		releaseBuf(e.queue.pop().buf)
	}
	for i := range e.held {
		e.unkeep(e.held[i].buf)
		releaseBuf(e.held[i].buf)
		e.held[i] = heldPacket{}
	}
	for len(e.partials) > 0 {
		e.dropPartial(e.partials[0])
	}
	e.nHeld, e.inFlight = 0, 0
	e.failErr = ErrClosed
}

// Stats is a snapshot of an Endpoint's state and counters.
type Stats struct {
	RTO        time.Duration // current retransmission timeout
	SRTT       time.Duration // smoothed RTT (0 before the first sample)
	RTTVar     time.Duration // RTT variation
	RTTSamples uint64        // samples taken (Karn: first transmissions only)

	InFlight int // reliable packets with a sequence, not yet acknowledged
	Queued   int // messages waiting for room in the in-flight window
	Held     int // ordered messages received ahead, waiting for a predecessor

	Sent            uint64 // first transmissions of reliable packets
	Retransmissions uint64 // retransmissions (§13 retransmissions)
	AcksSent        uint64 // Ack packets emitted
	AcksReceived    uint64 // Acks passed to OnAck

	Delivered           uint64 // reliable and ordered messages handed to deliver
	UnreliableDelivered uint64 // unreliable packets passed through Receive
	DuplicatesReceived  uint64 // reliable packets already received: acked, not delivered
	ReorderDropped      uint64 // ordered beyond MaxReorderAhead: dropped unacked
	WindowDropped       uint64 // sequence beyond ReceiveWindow: dropped unacked
	StaleOrdered        uint64 // OrderedSequence already delivered or held: acked, dropped
	Invalid             uint64 // Sequence 0 or OrderedSequence 0: dropped unacked
	AckRangesDropped    uint64 // arrivals left for a later Ack: 32 ranges already pending
	// Refused counts the reliable messages acknowledged and not delivered
	// because the Endpoint refused them (inconsistent, oversized or
	// abandoned reassembly).
	Refused            uint64
	Reassembled        uint64 // fragmented messages made whole
	ReassemblyFull     uint64 // fragments dropped unacked: reassembly buffer full
	ReassemblyTimeouts uint64 // messages abandoned in reassembly
	Reassembling       int    // messages in reassembly now
	ReassemblyBytes    int    // bytes held now for the peer: fragments, ordered messages waiting their turn (at pooled capacity)
}

// Retransmissions returns how many packets were retransmitted so far (cheaper
// than Stats on the per-packet path).
func (e *Endpoint) Retransmissions() uint64 { return e.st.retransmissions }

// Stats returns a snapshot of the Endpoint's counters.
func (e *Endpoint) Stats() Stats {
	return Stats{
		RTO: e.rtt.rto, SRTT: e.rtt.srtt, RTTVar: e.rtt.rttvar, RTTSamples: e.rtt.samples,
		InFlight: e.inFlight, Queued: e.queue.n, Held: e.nHeld,
		Sent: e.st.sent, Retransmissions: e.st.retransmissions,
		AcksSent: e.st.acksSent, AcksReceived: e.st.acksReceived,
		Delivered: e.st.delivered, UnreliableDelivered: e.st.unreliableDelivered,
		DuplicatesReceived: e.st.duplicates, ReorderDropped: e.st.reorderDropped,
		WindowDropped: e.st.windowDropped, StaleOrdered: e.st.staleOrdered,
		Invalid: e.st.invalid, AckRangesDropped: e.st.ackRangesDropped,
		Refused: e.st.refused, Reassembled: e.st.reassembled, ReassemblyFull: e.st.reassemblyFull,
		ReassemblyTimeouts: e.st.reassemblyTimeouts, Reassembling: len(e.partials), ReassemblyBytes: e.keptBytes,
	}
}

// AckPending reports whether an Ack is owed, due now or later.
func (e *Endpoint) AckPending() bool { return e.failErr == nil && e.ackDue != never }

// FlushAcks emits the owed Acks now, due or not. A v4 sender calls it when it
// sends a datagram anyway, so that acknowledgements ride along with data
// instead of waiting for AckDelay in a datagram of their own. Called after
// a Poll that emitted a reliable packet (in the same flush), it schedules
// no redundant repeat (Config.RedundantAcks).
func (e *Endpoint) FlushAcks(now time.Time, emit func(h *wire.Header, payload []byte)) {
	if e.failErr == nil && e.ackDue != never {
		e.emitAcks(e.since(now), emit)
	}
}

// Due reports whether Poll has something to emit at now (it may be a
// wasted Poll just after acks, never a missed one).
func (e *Endpoint) Due(now time.Time) bool {
	d := e.NextDeadline()
	return !d.IsZero() && !now.Before(d)
}

// Seen reports whether reliability sequence s has already been received
// (so that a packet carrying it is a duplicate).
func (e *Endpoint) Seen(s uint32) bool { return s != 0 && e.recv.has(s) }
