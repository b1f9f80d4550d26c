package reliable

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// heldPacket is a ReliableOrdered message that arrived ahead of its turn. Slot
// i holds OrderedSequence os with os % len(held) == i; since only sequences in
// (expectOrd, expectOrd+len(held)] are held, they never collide. The ring
// starts empty and grows on demand up to MaxReorderAhead (growHeld). A
// tombstone (a refused message) holds its place without a payload, so that
// the messages after it are not held behind it for ever.
type heldPacket struct {
	hdr  wire.Header
	buf  *[]byte
	used bool
	tomb bool
}

// Receive processes an authenticated, validated packet from the peer and calls
// deliver for every message now deliverable, in order. deliver must not
// retain h or payload and must not call Receive; it may call Send.
//
// Unreliable packets are delivered as they are. A reliable packet is judged by
// its reliability Sequence alone: a duplicate is not delivered and an Ack is
// due at once. A new Reliable packet is delivered at once; a new
// ReliableOrdered one is delivered when its OrderedSequence is the next
// expected (with every held successor), held (copied) when up to
// MaxReorderAhead ahead, and acknowledged but dropped when below the next
// expected. New packets are acknowledged within AckDelay. A fragment (h has
// FragCount set, protocol v4) is acknowledged and kept until its message is
// whole; the reassembled message is then delivered like any other, with
// Sequence the first fragment's and FragCount still set, so that the caller
// knows its payload was not validated yet.
//
// Receive returns false when it dropped the packet unacknowledged, so the
// sender will retransmit it: an OrderedSequence more than MaxReorderAhead
// ahead, a Sequence beyond the receive window, Sequence/OrderedSequence 0,
// fragment fields the datagram parser refuses (it checks them first), or a
// fragment that finds the reassembly buffer full. The caller counts those
// (packetsDropped).
//
// On the server, a validated ClientFinished (type 1, Reliable, Sequence 1) is
// passed here like any reliable packet: it is delivered once and acked, and a
// later repeat is a duplicate, acked and not delivered, whatever its content.
func (e *Endpoint) Receive(h *wire.Header, payload []byte, now time.Time, deliver func(h *wire.Header, payload []byte)) (accepted bool) {
	return e.receive(h, payload, now, deliver)
}

func (e *Endpoint) receive(h *wire.Header, payload []byte, now time.Time, deliver func(*wire.Header, []byte)) bool {
	if e.failErr == ErrClosed {
		return false
	}
	if !h.Channel.IsReliable() {
		e.st.unreliableDelivered++
		deliver(h, payload)
		return true
	}
	t := e.since(now)
	s := h.Sequence
	ordered := h.Channel == wire.ReliableOrdered
	if s == 0 || ordered && h.OrderedSequence == 0 ||
		h.FragCount != 0 && (h.FragCount < 2 || h.FragCount > wire.MaxFragments || h.FragIndex >= h.FragCount || s <= uint32(h.FragIndex)) {
		e.st.invalid++
		return false
	}
	if e.recv.has(s) {
		e.st.duplicates++
		e.scheduleAck(s, t, 0)
		return true
	}
	if !e.recv.fits(s) {
		e.st.windowDropped++
		return false
	}
	os := h.OrderedSequence
	if ordered && os >= e.expectOrd && os-e.expectOrd > e.cfg.MaxReorderAhead {
		e.st.reorderDropped++
		return false
	}
	if h.FragCount != 0 {
		return e.receiveFragment(h, payload, t, deliver)
	}
	if ordered && os > e.expectOrd && e.keptBytes+bufCost(len(payload)) > e.cfg.ReassemblyBytes && !e.inSenderWindow(s, len(payload)) {
		e.st.reassemblyFull++ // it would wait for its turn in memory the peer has used up
		return false
	}
	e.markReceived(s, t)
	e.accept(h, payload, nil, deliver, false)
	return true
}

// markReceived records a new reliable arrival and schedules its Ack.
func (e *Endpoint) markReceived(s uint32, t time.Duration) {
	e.recv.add(s)
	if s > e.highest {
		e.highest, e.highestAt = s, t
	}
	e.scheduleAck(s, t, e.cfg.AckDelay)
}

// accept routes a whole new message: delivered now (Reliable, or the next
// ordered one with its held successors), held, or stale. buf, when not nil,
// is a pooled buffer holding payload that the Endpoint owns (a reassembled
// message); tomb marks a refused message, which takes its turn but is never
// delivered.
func (e *Endpoint) accept(h *wire.Header, payload []byte, buf *[]byte, deliver func(*wire.Header, []byte), tomb bool) {
	os := h.OrderedSequence
	switch {
	case h.Channel != wire.ReliableOrdered:
		if !tomb {
			e.st.delivered++
			deliver(h, payload)
		}
		releaseBuf(buf)
	case os < e.expectOrd:
		e.st.staleOrdered++
		releaseBuf(buf)
	case os == e.expectOrd:
		e.deliverOrdered(h, payload, deliver, tomb)
		releaseBuf(buf)
	default:
		e.hold(h, payload, buf, tomb)
	}
}

// deliverOrdered delivers the next expected message (unless it is a
// tombstone) and then every held successor. State is updated before each
// deliver call so that deliver may Send.
func (e *Endpoint) deliverOrdered(h *wire.Header, payload []byte, deliver func(*wire.Header, []byte), tomb bool) {
	e.expectOrd++
	if !tomb {
		e.st.delivered++
		deliver(h, payload)
	}
	n := uint32(len(e.held))
	for e.nHeld > 0 {
		hp := &e.held[e.expectOrd%n]
		if !hp.used || hp.hdr.OrderedSequence != e.expectOrd {
			return
		}
		e.deliverHdr = hp.hdr
		buf, skip := hp.buf, hp.tomb
		e.unkeep(buf)
		*hp = heldPacket{}
		e.nHeld--
		e.expectOrd++
		if !skip {
			e.st.delivered++
			deliver(&e.deliverHdr, *buf)
		}
		releaseBuf(buf)
	}
}

// hold keeps an ordered message that arrived ahead of its turn (a copy of
// payload, or buf itself when the Endpoint owns it). The slot can only be
// taken by the same OrderedSequence (the held range spans exactly len(held)
// values, and the drain never leaves a slot behind), i.e. a misbehaving sender
// reusing an OrderedSequence under a new Sequence (a retransmission keeps
// both): the first copy is kept, the second counted stale.
func (e *Endpoint) hold(h *wire.Header, payload []byte, buf *[]byte, tomb bool) {
	e.growHeld(h.OrderedSequence - e.expectOrd)
	hp := &e.held[h.OrderedSequence%uint32(len(e.held))]
	if hp.used {
		e.st.staleOrdered++
		releaseBuf(buf)
		return
	}
	if !tomb && buf == nil {
		buf = copyBuf(payload)
	}
	e.keep(buf)
	*hp = heldPacket{hdr: *h, buf: buf, used: true, tomb: tomb}
	e.nHeld++
}

// growHeld makes the ring held cover OrderedSequences up to ahead beyond the
// next expected one (ahead ≤ MaxReorderAhead, checked by Receive): it
// doubles it, at least to ahead and at most to MaxReorderAhead, and moves
// every held message to its slot in the new ring. An in-order peer never
// pays for the ring; one that reorders stops allocating once it is grown.
func (e *Endpoint) growHeld(ahead uint32) {
	if ahead <= uint32(len(e.held)) {
		return
	}
	size := min(max(2*uint32(len(e.held)), ahead, minHeldSlots), e.cfg.MaxReorderAhead)
	grown := make([]heldPacket, size)
	for _, hp := range e.held {
		if hp.used {
			grown[hp.hdr.OrderedSequence%size] = hp
		}
	}
	e.held = grown
}

// minHeldSlots is the first size of the ring held.
const minHeldSlots = 8
