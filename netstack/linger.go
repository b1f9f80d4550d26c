package netstack

import (
	"math"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The end of a session's lifecycle (docs/protocol.md §6): the graceful
// close, and the close itself — the reason recorded, the Disconnect sent
// sealed three times (§8), the pooled buffers returned.
//
// Closing delivers first.
//
// A close that the local side decides — a client's quit, the server's kick,
// ban or shutdown — does not drop what was accepted for the peer before it.
// beginCloseLocked puts the session in its linger: it accepts no new sends
// and delivers nothing new it receives, but it keeps packing what is queued,
// retransmitting, and taking the peer's Acks. The linger ends when every
// reliable message is acknowledged and nothing is left queued, or when its
// time is up (DefaultCloseLinger), whichever comes first; then the
// Disconnect is sent, sealed three times, as before. A peer that never
// acknowledges costs its slot for the linger and no longer.
//
// The close reason is recorded when the linger begins, so it is the one
// reported whatever ends the linger (a timeout, the peer's own Disconnect).

// DefaultCloseLinger is the longest a graceful close waits for the peer to
// acknowledge what was sent before it.
const DefaultCloseLinger = time.Second

// beginCloseLocked starts a graceful close with reason and detail, lingering
// at most linger (≤ 0: close at once, dropping what is unacknowledged). It
// reports whether the session is closed already (nothing to wait for).
func (s *session) beginCloseLocked(reason wire.DisconnectReason, detail string, linger time.Duration, now time.Time) bool {
	if s.life.closed {
		return true
	}
	if !s.life.lingering {
		s.life.lingering = true
		s.life.reason, s.life.detail = reason, detail
		s.life.lingerUntil = s.since(now) + linger
		if s.life.lingerUntil < s.since(now) {
			s.life.lingerUntil = math.MaxInt64 // a linger of centuries
		}
		s.out.urgent = true // what is queued leaves at the next flush
		s.wakeService()
	}
	return s.lingerDoneLocked(now)
}

// lingerDoneLocked ends a linger whose work is done or whose time is up,
// sending the Disconnect; it reports whether the session is closed.
func (s *session) lingerDoneLocked(now time.Time) bool {
	if s.life.closed {
		return true
	}
	if !s.life.lingering {
		return false
	}
	if s.settledLocked() || s.since(now) >= s.life.lingerUntil {
		s.closeLocked(s.life.reason, s.life.detail, now)
	}
	return s.life.closed
}

// settledLocked reports whether nothing is left to deliver: every reliable
// message acknowledged and no unreliable one waiting for a flush.
func (s *session) settledLocked() bool {
	return s.rel.engine.Settled() && len(s.out.uq) == 0 && s.out.queuedAt.IsZero()
}

// closeReason returns the reason a close should record: the one of a
// linger in progress (the first recorded), else the one given.
func (s *session) closeReason(reason wire.DisconnectReason, detail string) (wire.DisconnectReason, string) {
	if s.life.lingering {
		return s.life.reason, s.life.detail
	}
	return reason, detail
}

// closeLocked records the first close reason and, when the channel is still
// usable, tells the peer with a Disconnect sealed three times (§8). Those
// three datagrams are written at once (a rare path: the end of a session).
func (s *session) closeLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	if s.life.closed || s.seatHoldLocked(reason, detail, now) {
		return
	}
	timedOut := reason == wire.DisconnectTimeout
	reason, detail = s.closeReason(reason, detail)
	s.life.closed, s.life.reason, s.life.detail = true, reason, detail
	s.life.abandoned = s.rel.engine.Unsettled()
	if !timedOut { // a timed-out peer is gone; nothing to tell
		s.sendDisconnectLocked(reason, detail, now)
	}
	s.releaseLocked()
}

// peerClosedLocked records a Disconnect received from the peer: its reason is
// the close reason (unless one was already recorded) and nothing is sent back.
func (s *session) peerClosedLocked(reason wire.DisconnectReason, detail string) {
	if s.life.closed {
		return
	}
	reason, detail = s.closeReason(reason, detail)
	s.life.closed, s.life.reason, s.life.detail = true, reason, detail
	s.releaseLocked()
}

// releaseLocked returns pooled buffers and forgets queued messages.
func (s *session) releaseLocked() {
	s.rel.engine.Close()
	s.out.uq, s.out.queuedAt, s.out.urgent = nil, time.Time{}, false
	s.rel.held, s.rel.heldBytes = nil, 0
}

func (s *session) sendDisconnectLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	var buf [3 + 256]byte
	if len(detail) > 256 {
		detail = detail[:256]
	}
	if s.version < handshake.ProtocolVersion4 && reason > wire.LastV3DisconnectReason {
		reason = wire.DisconnectUnknown // v3 defines 0..11; the detail says what happened
	}
	p := wire.AppendDisconnect(buf[:0], &wire.Disconnect{Reason: uint8(reason), Detail: detail})
	h := wire.Header{Type: wire.TypeDisconnect, Channel: wire.Unreliable}
	var plain []byte
	if s.version >= handshake.ProtocolVersion4 {
		h.Sequence = s.out.pk.takeUnreliable()
		plain = wire.AppendRecord(wire.AppendDatagramBase(make([]byte, 0, 300), h.Sequence), &h, p)
	} else {
		h.Sequence = s.rel.engine.NextUnreliableSequence()
		if !s.server {
			h.SenderID = s.id
		}
		h.Timestamp = s.timestamp(now)
		plain = wire.AppendPacket(make([]byte, 0, 300), &h, p)
	}
	frame := make([]byte, 0, len(plain)+seal.Overhead)
	for range disconnectCopies {
		f, err := s.keys.sealer.SealFinal(frame[:0], plain)
		if err != nil {
			return
		}
		if _, err := s.tr.WriteBatch([]transport.Message{{Buf: f, N: len(f), Addr: s.path.addr}}); err == nil {
			s.countSent(1, len(f), 1)
		}
	}
}
