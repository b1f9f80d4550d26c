package netstack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The send queue (docs/protocol.md §5.5): Send queues — an unreliable
// message in the session's queue, a reliable one in the reliability engine
// — and a flush takes what is due — Acks, retransmissions and new reliable
// packets from the engine, then the queued unreliable messages, then (v4)
// the Acks still owed, which ride along — and gives it, in that order, to
// the packer, which seals datagrams into a batch. The flusher writes the
// batch after the session's lock is released.

// sendLocked queues one message on channel ch; a flush sends it. A
// reliable message goes to the reliability engine (which fragments it in a
// v4 session); an unreliable one must fit one datagram.
func (s *session) sendLocked(typ wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	if s.life.closed || s.life.lingering {
		return ErrClosed
	}
	if !wire.InProtocol(s.version, typ) {
		s.add(notInProtocol, 1)
		return fmt.Errorf("%w: %s is a protocol v%d message and this peer speaks v%d", ErrNotInProtocol, typ, wire.IntroducedIn(typ), s.version)
	}
	if ch.IsReliable() {
		if err := s.rel.engine.Send(typ, ch, payload, now); err != nil {
			return err
		}
	} else {
		if err := s.checkUnreliableLocked(typ, payload); err != nil {
			return err
		}
		if len(s.out.uq)+6+len(payload) > s.out.uqMax {
			return ErrSendQueueFull
		}
		s.queueUnreliable(typ, payload)
	}
	s.out.sends.Add(1)
	if s.out.queuedAt.IsZero() {
		s.out.queuedAt = now
	}
	s.wakeService()
	return nil
}

func notInProtocol(c *Counters) *atomicU64 { return &c.NotInProtocol }

// checkUnreliableLocked refuses an unreliable message that cannot be sent:
// the session is closing, the peer's protocol lacks the type, or it does
// not fit one datagram.
func (s *session) checkUnreliableLocked(typ wire.MessageType, payload []byte) error {
	switch {
	case s.life.closed || s.life.lingering:
		return ErrClosed
	case !wire.InProtocol(s.version, typ):
		s.add(notInProtocol, 1)
		return fmt.Errorf("%w: %s is a protocol v%d message and this peer speaks v%d", ErrNotInProtocol, typ, wire.IntroducedIn(typ), s.version)
	case len(payload) > wire.MaxPayload:
		return reliable.ErrPayloadTooLarge
	case s.version >= handshake.ProtocolVersion4 && len(payload) > wire.MaxUnreliablePayload(s.out.pk.size, typ):
		return fmt.Errorf("%w: %s of %d bytes; at most %d bytes with datagram size %d (send it on a reliable channel, which fragments it, or make it smaller)",
			ErrUnreliableTooLarge, typ, len(payload), wire.MaxUnreliablePayload(s.out.pk.size, typ), s.out.pk.size)
	}
	return nil
}

// queueUnreliable appends an unreliable message to uq.
func (s *session) queueUnreliable(typ wire.MessageType, payload []byte) {
	s.out.uq = binary.LittleEndian.AppendUint16(s.out.uq, uint16(typ))
	s.out.uq = binary.LittleEndian.AppendUint32(s.out.uq, uint32(len(payload)))
	s.out.uq = append(s.out.uq, payload...)
	s.wakeService()
}

// flushLocked packs and seals everything due into b. A delivery failure or
// exhausted keys close the session (its Disconnect is written at once).
func (s *session) flushLocked(now time.Time, b *datagramBatch) {
	if s.life.closed || s.life.seat.held {
		return // a held seat's path is dark: nothing leaves until it resumes
	}
	pk := &s.out.pk
	pk.begin(b, s.path.addr, now)
	s.ccBeginLocked(now)
	before := s.rel.engine.Retransmissions()
	err := s.rel.engine.Poll(now, pk.addFn)
	for off := 0; off+6 <= len(s.out.uq); {
		h := wire.Header{Type: wire.MessageType(binary.LittleEndian.Uint16(s.out.uq[off:])), Channel: wire.Unreliable}
		n := int(binary.LittleEndian.Uint32(s.out.uq[off+2:]))
		pk.add(&h, s.out.uq[off+6:off+6+n])
		off += 6 + n
	}
	s.out.uq = s.out.uq[:0]
	if s.path.cc.on {
		s.ccStateLocked(now)
	}
	if s.version >= handshake.ProtocolVersion4 && pk.carrying() {
		s.rel.engine.FlushAcks(now, pk.addFn) // they ride along with what goes anyway
	}
	res := pk.finish()
	s.out.queuedAt, s.out.urgent = time.Time{}, false
	if cc := &s.path.cc; len(cc.kq) > 0 {
		s.out.queuedAt = cc.kq[0].at // state waits for the pacer: the service loop flushes again
	}
	s.ccMarkLocked(now)
	s.ccEndLocked(res, now)
	s.countPacked(res, now)
	if n := s.rel.engine.Retransmissions() - before; n > 0 {
		s.ctr.Retransmissions.Add(n)
		if s.global != nil {
			s.global.Retransmissions.Add(n)
		}
	}
	switch {
	case errors.Is(res.err, seal.ErrKeyExhausted):
		s.closeLocked(wire.DisconnectKeyExhausted, "session keys exhausted; reconnect", now)
	case err != nil:
		s.closeLocked(wire.DisconnectReliableDeliveryFailed, "reliable message not acknowledged", now)
	}
}

// countPacked counts what a flush sealed, on the peer, the server's totals
// and the path's bandwidth estimate.
func (s *session) countPacked(res packResult, now time.Time) {
	if res.datagrams == 0 {
		return
	}
	s.countSent(res.datagrams, res.bytes, res.messages)
	s.path.q.traffic(now, res.bytes, 0)
}
