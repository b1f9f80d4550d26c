package netstack

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"time"

	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Resumption's share of a session (docs/protocol.md §3.15): the resume key
// both ends derive, the proof a resuming client presents, and the seat
// hold: a session that may be resumed is held, not closed, when its path
// goes dark, keeping its reliability state for the session that resumes it.

// seatHold is a session's resumption state; guarded by the session's mu.
type seatHold struct {
	// key is K_r, derived from the session's epoch-0 keys and th.
	key [32]byte
	// holdable: the peer holds a ticket, so a Timeout or a failed delivery
	// holds the session instead of closing it.
	holdable bool
	// held: the path went dark; the session waits to be resumed. Nothing
	// is sent or serviced; reliable messages still queue in the engine.
	held   bool
	heldAt time.Time
	// adopt, on a client's resuming session, is the old session's
	// reliability engine: it replaces the handshake's own at the first
	// authenticated frame (the server's answer to the resumption).
	adopt *reliable.Endpoint
	// noTickets, on a client, is told that the server refused its
	// ResumeRequest (a server without resumption).
	noTickets func()
	// onAdopt runs once the datagram whose arrival took adopt proved not to
	// be a Disconnect (the client's admission).
	onAdopt func()
}

// Labels of resumption's derivations (§3.15).
const (
	resumeKeyLabel   = "spark-net-100 resume"
	resumeProofLabel = "SPNR-v1 proof"
)

// resumeKey derives K_r = HKDF-SHA256(salt = th, ikm = K_c2s[0] ‖ K_s2c[0],
// info = "spark-net-100 resume", 32).
func resumeKey(c2s, s2c, th [32]byte) [32]byte {
	ikm := make([]byte, 0, 64)
	ikm = append(append(ikm, c2s[:]...), s2c[:]...)
	out, err := hkdf.Key(sha256.New, ikm, th[:], resumeKeyLabel, 32)
	clear(ikm)
	if err != nil {
		panic("netstack: hkdf.Key: " + err.Error()) // only for lengths above 255·32
	}
	var k [32]byte
	copy(k[:], out)
	clear(out)
	return k
}

// resumeProof is HMAC-SHA256(K_r, "SPNR-v1 proof" ‖ th of the new handshake).
func resumeProof(key, th [32]byte) [wire.ResumeProofSize]byte {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(resumeProofLabel))
	m.Write(th[:])
	var p [wire.ResumeProofSize]byte
	copy(p[:], m.Sum(nil))
	return p
}

// seatHoldLocked holds a holdable session instead of closing it when its
// path went dark (Timeout, or a reliable message unacknowledged for too
// long): it reports true when the close must not happen. The reason is
// recorded (a client reports it), the session stays open.
func (s *session) seatHoldLocked(reason wire.DisconnectReason, detail string, now time.Time) bool {
	if reason != wire.DisconnectTimeout && reason != wire.DisconnectReliableDeliveryFailed {
		return false
	}
	if s.life.seat.held {
		return true // already held: only its end closes it
	}
	if !s.life.seat.holdable {
		return false
	}
	s.life.seat.held, s.life.seat.heldAt = true, now
	s.life.reason, s.life.detail = reason, detail
	// A delivery failure is forgiven now, not only at the resumption: the
	// held seat keeps taking reliable messages meanwhile.
	_ = s.rel.engine.Resume(now)
	return true
}

// endHoldLocked closes a held session for good with reason.
func (s *session) endHoldLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	s.life.seat.held, s.life.seat.holdable = false, false
	s.life.reason = 0
	s.closeLocked(reason, detail, now)
}

// adoptLocked gives a client's resuming session the old session's
// reliability state: called at the first authenticated frame, which
// answers the resumption.
func (s *session) adoptLocked(now time.Time) {
	old := s.life.seat.adopt
	s.life.seat.adopt = nil
	s.takeEngineLocked(old, now)
}

// admitResumedLocked tells the client, once, that its resumption was
// answered by something other than a Disconnect: it is admitted.
func (s *session) admitResumedLocked() {
	if f := s.life.seat.onAdopt; f != nil && s.life.seat.adopt == nil && !s.life.closed {
		s.life.seat.onAdopt = nil
		f()
	}
}

// takeEngineLocked replaces the session's reliability engine with e, the
// resumed session's, and makes it carry on over this session's path.
func (s *session) takeEngineLocked(e *reliable.Endpoint, now time.Time) {
	s.rel.engine.Close()
	s.rel.engine = e
	e.SetRefusalHook(s.engineRefused)
	_ = e.Resume(now) // a closed engine is never handed over
	s.out.urgent = true
}
