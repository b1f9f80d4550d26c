package reliable

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Reassembly of fragmented reliable messages (protocol v4, docs/protocol.md
// §5.3).
//
// A message of n fragments travels as n reliable packets with consecutive
// reliability sequences first..first+n−1; fragment i carries FragIndex i and
// FragCount n, and every fragment carries the message's type, channel and
// OrderedSequence. So (Sequence − FragIndex) names the message, and each
// fragment is acknowledged on arrival like any reliable packet: a sender
// retransmits only the fragments that were lost.
//
// Invariants:
//   - what the peer makes the Endpoint hold — fragments (pooled copies), the
//     bookkeeping of each message in reassembly (partialOverhead), whole
//     ordered messages waiting for their turn — counts toward keptBytes at
//     its pooled capacity. A packet that would be kept beyond
//     ReassemblyBytes is dropped unacknowledged (its sender resends it),
//     with two exemptions that keep every honest stream moving: a fragment
//     of the message with the lowest first sequence among those already in
//     reassembly (so the oldest can always finish), and a fragment of the
//     one message in reassembly whose OrderedSequence is the next to
//     deliver (so the ordered channel can always move, freeing what waits
//     behind it). A fragment of a message not yet held is never exempt by
//     the first rule, and only one message at a time by the second. And a
//     packet an honest sender could have in flight (inSenderWindow: within
//     256 sequences of the first missing one, at most 4 KiB) is never
//     refused, so an honest sender never pays a retransmission for the
//     bound. Together keptBytes ≤ ReassemblyBytes + 2 × (4 × MAX_PAYLOAD +
//     partialOverhead) + 256 × (4 KiB + partialOverhead) whatever the order,
//     duplication or declared sizes (a message of at most MAX_PAYLOAD bytes
//     takes at most four times that in pooled buffers, whatever its
//     fragment sizes);
//   - a message whose fragments add up to more than MAX_PAYLOAD keeps no
//     more of them: it is refused (BadSize) when its last fragment arrives;
//   - a partial that received nothing for ReassemblyTimeout is dropped and
//     its message refused (an honest sender never stops short of a whole
//     message while its connection lives); on ReliableOrdered its place is
//     taken by a tombstone, so the ordered channel goes on;
//   - fragments that disagree with the first one seen (type, channel,
//     count, ordered sequence) are acknowledged and not kept; the message is
//     refused when its last fragment arrives.

// partial is one message in reassembly.
type partial struct {
	first uint32      // reliability sequence of fragment 0
	hdr   wire.Header // Type, Channel, OrderedSequence, FragCount of the first fragment seen
	have  uint64      // bit i: fragment i arrived
	frags [wire.MaxFragments]*[]byte
	bytes int
	last  time.Duration // last arrival
	bad   wire.RefusalReason
}

func (p *partial) complete() bool {
	return p.have == (uint64(1)<<p.hdr.FragCount)-1 // a shift by 64 is 0 in Go: all ones
}

// SetRefusalHook sets fn to be told of every message the Endpoint refuses on
// its own: fragments that disagree, a reassembled message over MAX_PAYLOAD,
// an abandoned reassembly. fn runs under the caller's lock, from Receive or
// Expire; it must not call back into the Endpoint.
func (e *Endpoint) SetRefusalHook(fn func(h *wire.Header, reason wire.RefusalReason)) {
	e.refusedHook = fn
}

func (e *Endpoint) refuse(h *wire.Header, reason wire.RefusalReason) {
	e.st.refused++
	if e.refusedHook != nil {
		e.refusedHook(h, reason)
	}
}

// receiveFragment handles a new fragment that passed Receive's window checks.
func (e *Endpoint) receiveFragment(h *wire.Header, payload []byte, t time.Duration, deliver func(*wire.Header, []byte)) bool {
	first := h.Sequence - uint32(h.FragIndex)
	p, oldest := e.findPartial(first)
	cost := bufCost(len(payload))
	if p == nil {
		cost += partialOverhead
	}
	if e.keptBytes+cost > e.cfg.ReassemblyBytes && !e.exempt(p, oldest, h) && !e.inSenderWindow(h.Sequence, len(payload)) {
		e.st.reassemblyFull++
		return false
	}
	if p == nil {
		p = e.newPartial(first, h)
		e.keptBytes += partialOverhead
	}
	e.markReceived(h.Sequence, t)
	p.last = t
	e.partialDue = min(e.partialDue, t+e.cfg.ReassemblyTimeout)
	switch {
	case h.Type != p.hdr.Type || h.Channel != p.hdr.Channel || h.FragCount != p.hdr.FragCount ||
		h.OrderedSequence != p.hdr.OrderedSequence:
		p.bad = wire.RefusedInconsistent
	case p.bad != 0:
		// Refused already: its fragments are acknowledged, not kept.
	case p.bytes+len(payload) > wire.MaxPayload:
		p.bad = wire.RefusedSize
		e.releaseFrags(p)
	default:
		b := copyBuf(payload)
		p.frags[h.FragIndex] = b
		p.bytes += len(payload)
		e.keep(b)
	}
	if h.FragIndex < p.hdr.FragCount {
		p.have |= 1 << h.FragIndex
	}
	if p.complete() {
		e.finishPartial(p, deliver)
	}
	return true
}

// findPartial returns the partial of first (nil if none) and the lowest
// first sequence among the messages already in reassembly (0 if none): a
// fragment's own message is not its competitor.
func (e *Endpoint) findPartial(first uint32) (p *partial, oldest uint32) {
	for _, q := range e.partials {
		if q.first == first {
			p = q
		}
		if oldest == 0 || q.first < oldest {
			oldest = q.first
		}
	}
	return p, oldest
}

// exempt reports whether a fragment passes a full buffer (see the
// invariants): it belongs to the oldest message already in reassembly, or
// to the one message in reassembly that the ordered channel delivers next.
func (e *Endpoint) exempt(p *partial, oldest uint32, h *wire.Header) bool {
	if p != nil && p.first == oldest {
		return true
	}
	if h.Channel != wire.ReliableOrdered || h.OrderedSequence != e.expectOrd {
		return false
	}
	for _, q := range e.partials {
		if q != p && q.hdr.Channel == wire.ReliableOrdered && q.hdr.OrderedSequence == e.expectOrd {
			return false // another message claims that turn already
		}
	}
	return true
}

// inSenderWindow reports whether reliable sequence s, carrying n payload
// bytes, is one an honest sender could have in flight: within
// MaxInFlightLimit of the first sequence not yet received (a sender keeps at
// most that many unacknowledged, §5.4), and no larger than the packets of a
// sender with datagrams of up to honestPacketBytes. Those are kept whatever
// the bound, so an honest sender is never refused (a refusal costs it a
// retransmission); what they can cost is bounded by the window:
// MaxInFlightLimit × honestPacketBytes.
func (e *Endpoint) inSenderWindow(s uint32, n int) bool {
	return s-e.recv.cum <= MaxInFlightLimit && n <= honestPacketBytes
}

// honestPacketBytes is the largest packet payload inSenderWindow protects:
// four times a 1,200-byte datagram's.
const honestPacketBytes = 4096

// partialOverhead is what a message in reassembly costs beside its
// fragments: the partial itself (its 64 fragment slots) and its place in
// the lists, rounded up.
const partialOverhead = 640

// bufCost is what holding n payload bytes costs: the pooled buffer's
// capacity.
func bufCost(n int) int {
	if i := bufClass(n); i >= 0 {
		return bufClasses[i]
	}
	return n
}

// keep and unkeep count a buffer the Endpoint holds for the peer.
func (e *Endpoint) keep(b *[]byte) {
	if b != nil {
		e.keptBytes += cap(*b)
	}
}

func (e *Endpoint) unkeep(b *[]byte) {
	if b != nil {
		e.keptBytes -= cap(*b)
	}
}

// releaseFrags gives back the fragments a partial holds.
func (e *Endpoint) releaseFrags(p *partial) {
	for i, b := range p.frags {
		if b != nil {
			e.unkeep(b)
			releaseBuf(b)
			p.frags[i] = nil
		}
	}
	p.bytes = 0
}

func (e *Endpoint) newPartial(first uint32, h *wire.Header) *partial {
	var p *partial
	if n := len(e.freeParts); n > 0 {
		p, e.freeParts = e.freeParts[n-1], e.freeParts[:n-1]
	} else {
		p = new(partial)
	}
	p.first = first
	p.hdr = wire.Header{Type: h.Type, Channel: h.Channel, OrderedSequence: h.OrderedSequence, FragCount: h.FragCount}
	e.partials = append(e.partials, p)
	return p
}

// finishPartial delivers (or refuses) a message whose fragments have all
// arrived and frees its partial.
func (e *Endpoint) finishPartial(p *partial, deliver func(*wire.Header, []byte)) {
	h := &e.wholeHdr // a field: handing a local's address to deliver would allocate
	*h = p.hdr
	h.Sequence = p.first
	if p.bad == 0 && p.bytes > wire.MaxPayload {
		p.bad = wire.RefusedSize
	}
	if bad := p.bad; bad != 0 {
		e.dropPartial(p)
		e.refuse(h, bad)
		e.accept(h, nil, nil, deliver, true)
		return
	}
	buf := getBuf(p.bytes)
	for i := range h.FragCount {
		*buf = append(*buf, *p.frags[i]...)
	}
	e.dropPartial(p)
	e.st.reassembled++
	e.accept(h, *buf, buf, deliver, false)
}

// dropPartial releases a partial's fragments and returns it to the free list.
func (e *Endpoint) dropPartial(p *partial) {
	e.releaseFrags(p)
	e.keptBytes -= partialOverhead
	for i, q := range e.partials {
		if q == p {
			last := len(e.partials) - 1
			e.partials[i], e.partials[last] = e.partials[last], nil
			e.partials = e.partials[:last]
			break
		}
	}
	*p = partial{}
	e.freeParts = append(e.freeParts, p)
}

// Expire drops the messages in reassembly that received no fragment for
// ReassemblyTimeout, refusing each (wire.RefusedIncomplete); an ordered
// one's place becomes a tombstone, and deliver receives the held messages it
// releases. Call it when packets arrive (it costs one comparison when
// nothing is due).
func (e *Endpoint) Expire(now time.Time, deliver func(*wire.Header, []byte)) {
	t := e.since(now)
	if len(e.partials) == 0 || t < e.partialDue {
		return
	}
	next := never
	for i := 0; i < len(e.partials); {
		p := e.partials[i]
		if t-p.last < e.cfg.ReassemblyTimeout {
			next = min(next, p.last+e.cfg.ReassemblyTimeout)
			i++
			continue
		}
		h := &e.wholeHdr
		*h = p.hdr
		h.Sequence = p.first
		e.st.reassemblyTimeouts++
		e.dropPartial(p) // swaps the last partial into i
		e.refuse(h, wire.RefusedIncomplete)
		e.accept(h, nil, nil, deliver, true)
	}
	e.partialDue = next
}
