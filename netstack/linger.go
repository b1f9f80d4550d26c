package netstack

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Graceful close (docs/protocol.md §6): closing delivers first.
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
	if s.closed {
		return true
	}
	if !s.lingering {
		s.lingering = true
		s.reason, s.detail = reason, detail
		s.lingerUntil = now.Add(linger)
		s.urgent = true // what is queued leaves at the next flush
	}
	return s.lingerDoneLocked(now)
}

// lingerDoneLocked ends a linger whose work is done or whose time is up,
// sending the Disconnect; it reports whether the session is closed.
func (s *session) lingerDoneLocked(now time.Time) bool {
	if s.closed {
		return true
	}
	if !s.lingering {
		return false
	}
	if s.settledLocked() || !now.Before(s.lingerUntil) {
		s.closeLocked(s.reason, s.detail, now)
	}
	return s.closed
}

// settledLocked reports whether nothing is left to deliver: every reliable
// message acknowledged and no unreliable one waiting for a flush.
func (s *session) settledLocked() bool {
	return s.rel.Settled() && len(s.uq) == 0 && s.queuedAt.IsZero()
}

// closeReason returns the reason a close should record: the one of a
// linger in progress (the first recorded), else the one given.
func (s *session) closeReason(reason wire.DisconnectReason, detail string) (wire.DisconnectReason, string) {
	if s.lingering {
		return s.reason, s.detail
	}
	return reason, detail
}
