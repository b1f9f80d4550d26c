package v3strict

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Reliability constants of §7.
const (
	// MaxReorderAhead is MAX_REORDER_AHEAD.
	MaxReorderAhead = 256
	initialRTO      = 500 * time.Millisecond
	maxRetransmits  = 10
	ackSpan         = 32
)

// Ack is the §7 Ack payload.
type Ack struct {
	Ack, Bits uint32
	DelayMS   uint16
}

// AppendAck appends the 10-byte Ack payload.
func AppendAck(dst []byte, a Ack) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, a.Ack)
	dst = binary.LittleEndian.AppendUint32(dst, a.Bits)
	return binary.LittleEndian.AppendUint16(dst, a.DelayMS)
}

// ParseAck parses a 10-byte Ack payload.
func ParseAck(p []byte) (Ack, error) {
	if len(p) != 10 {
		return Ack{}, fmt.Errorf("Ack of %d bytes", len(p))
	}
	return Ack{binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]), binary.LittleEndian.Uint16(p[8:])}, nil
}

// Acknowledges lists the sequences an Ack says were received: ack, and
// ack−1−i for every bit i set.
func (a Ack) Acknowledges() []uint32 {
	out := []uint32{a.Ack}
	for i := range uint32(32) {
		if a.Bits>>i&1 == 1 && a.Ack > i+1 {
			out = append(out, a.Ack-1-i)
		}
	}
	return out
}

// inbound is the receiving half of §7: duplicates by reliability
// sequence, acknowledgements, and in-order delivery by OrderedSequence.
type inbound struct {
	received    map[uint32]bool
	highest     uint32
	nextOrdered uint32
	held        map[uint32]heldMessage
}

type heldMessage struct {
	m     Message
	since time.Time
}

func newInbound() *inbound {
	return &inbound{received: make(map[uint32]bool), nextOrdered: 1, held: make(map[uint32]heldMessage)}
}

// verdict is what arrival of a reliable packet leads to.
type verdict int

const (
	fresh     verdict = iota // new: acknowledge, deliver or hold
	duplicate                // acknowledge, do not deliver
	tooFar                   // beyond MAX_REORDER_AHEAD: drop unacknowledged
)

// arrive files a reliable packet that passed its checks. It returns the
// messages now deliverable, in order, and a protocol violation if the
// server reused an OrderedSequence.
func (in *inbound) arrive(m Message, now time.Time) (verdict, []Message, error) {
	if in.received[m.Sequence] {
		return duplicate, nil, nil
	}
	if m.Channel == ReliableOrdered && m.Ordered >= in.nextOrdered && m.Ordered-in.nextOrdered > MaxReorderAhead {
		return tooFar, nil, nil
	}
	in.received[m.Sequence] = true
	in.highest = max(in.highest, m.Sequence)
	if m.Channel != ReliableOrdered {
		return fresh, []Message{m}, nil
	}
	switch _, held := in.held[m.Ordered]; {
	case m.Ordered == 0:
		return fresh, nil, fmt.Errorf("%s with OrderedSequence 0", TypeName(m.Type))
	case m.Ordered < in.nextOrdered || held:
		return fresh, nil, fmt.Errorf("%s (sequence %d) reuses OrderedSequence %d, already delivered or held", TypeName(m.Type), m.Sequence, m.Ordered)
	case m.Ordered > in.nextOrdered:
		in.held[m.Ordered] = heldMessage{m, now}
		return fresh, nil, nil
	}
	out := []Message{m}
	in.nextOrdered++
	for {
		h, ok := in.held[in.nextOrdered]
		if !ok {
			break
		}
		delete(in.held, in.nextOrdered)
		out = append(out, h.m)
		in.nextOrdered++
	}
	return fresh, out, nil
}

// acks returns the Acks due for the arrival of seq: one for the highest
// sequence and, for a packet more than 32 below it, one of its own.
func (in *inbound) acks(seq uint32) []Ack {
	out := []Ack{in.ackOf(in.highest)}
	if in.highest-seq > ackSpan {
		out = append(out, in.ackOf(seq))
	}
	return out
}

func (in *inbound) ackOf(top uint32) Ack {
	a := Ack{Ack: top}
	for i := range uint32(32) {
		if top > i+1 && in.received[top-1-i] {
			a.Bits |= 1 << i
		}
	}
	return a
}

// oldestGap returns the OrderedSequence missing for longest and since when
// a successor waits for it (zero time: none).
func (in *inbound) oldestGap() (uint32, time.Time) {
	var since time.Time
	for _, h := range in.held {
		if since.IsZero() || h.since.Before(since) {
			since = h.since
		}
	}
	return in.nextOrdered, since
}

// outPacket is one reliable packet of ours waiting for its Ack.
type outPacket struct {
	h       Header
	payload []byte
	sends   int // transmissions so far
	next    time.Time
	acked   bool
	probe   bool // deliberately malformed: v3 must never acknowledge it
}

// outbound is the sending half of §7.
type outbound struct {
	nextSeq     uint32 // next reliability sequence
	nextOrdered uint32
	nextUnrel   uint32
	packets     map[uint32]*outPacket
}

func newOutbound() *outbound {
	return &outbound{nextSeq: 1, nextOrdered: 1, nextUnrel: 1, packets: make(map[uint32]*outPacket)}
}

// add numbers a reliable packet and keeps it until acknowledged.
func (o *outbound) add(h Header, payload []byte, probe bool, now time.Time) *outPacket {
	h.Sequence = o.nextSeq
	o.nextSeq++
	if h.Channel == ReliableOrdered {
		h.Ordered = o.nextOrdered
		o.nextOrdered++
	}
	p := &outPacket{h: h, payload: payload, probe: probe, sends: 1, next: now.Add(initialRTO)}
	o.packets[h.Sequence] = p
	return p
}

// onAck marks what an Ack acknowledges; it fails for a sequence never sent
// or a probe the server should have dropped.
func (o *outbound) onAck(a Ack) error {
	for _, s := range a.Acknowledges() {
		if s == 0 || s >= o.nextSeq {
			return fmt.Errorf("Ack acknowledges sequence %d, never sent (next is %d)", s, o.nextSeq)
		}
		p := o.packets[s]
		if p == nil {
			continue
		}
		if p.probe {
			return fmt.Errorf("the server acknowledged sequence %d, a malformed %s packet v3 drops unacknowledged", s, p.h.Channel)
		}
		p.acked = true
	}
	return nil
}

// due returns the packets to send again now (RTO·min(2^k, 8) after the
// k-th transmission) and an error for one out of retransmissions.
func (o *outbound) due(now time.Time) ([]*outPacket, error) {
	var out []*outPacket
	for _, p := range o.packets {
		if p.acked || p.probe || now.Before(p.next) {
			continue
		}
		if p.sends > maxRetransmits {
			return nil, fmt.Errorf("%s (sequence %d) never acknowledged after %d retransmissions", TypeName(p.h.Type), p.h.Sequence, maxRetransmits)
		}
		p.next = now.Add(initialRTO * time.Duration(min(1<<p.sends, 8)))
		p.sends++
		out = append(out, p)
	}
	return out, nil
}

// unacked counts our reliable packets (not probes) still unacknowledged.
func (o *outbound) unacked() int {
	n := 0
	for _, p := range o.packets {
		if !p.acked && !p.probe {
			n++
		}
	}
	return n
}
