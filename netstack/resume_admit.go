package netstack

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// finishResume completes a handshake whose ClientFinished presents a resume
// ticket (docs/protocol.md §3.15): it checks the ticket and the proof and
// either hands the seat — id, name, reliability state — to the new session,
// or closes the new session with ResumeExpired or ResumeInvalid. The
// half-open handshake has left its table; n is the frame's size.
func (s *Server) finishResume(ho *halfOpen, cf *wire.ClientFinished, n int, now time.Time) {
	th := ho.keys.th
	seat, refusal := s.checkResume(cf, th, now)
	id := ho.id
	if seat != nil {
		id = seat.id // the handshake's own id is never used
	}
	np := s.sessionFromHalfOpen(ho, id, now)
	np.mu.Lock()
	np.ctr.PacketsReceived.Add(1)
	np.ctr.BytesReceived.Add(uint64(n))
	np.path.q.traffic(now, 0, n)
	if refusal == nil {
		refusal = s.takeSeat(seat, np, now)
	}
	if refusal != nil {
		np.closeLocked(refusal.reason, refusal.detail, now)
		np.mu.Unlock()
		s.countResumeRefusal(refusal.reason)
		s.log.Info("resumption refused", "addr", ho.addr.String(), "name", cf.Name, "reason", refusal.reason.String(), "detail", refusal.detail)
		return
	}
	info := np.info()
	np.mu.Unlock()
	s.ctr.Resumed.Add(1)
	s.log.Info("client resumed", "client", info.ID, "name", info.Name, "addr", info.Addr.String())
	if s.cfg.OnResumed != nil {
		s.cfg.OnResumed(info)
	}
}

func (s *Server) countResumeRefusal(r wire.DisconnectReason) {
	switch r {
	case wire.DisconnectResumeExpired:
		s.ctr.ResumeRefusedExpired.Add(1)
	case wire.DisconnectResumeInvalid:
		s.ctr.ResumeRefusedInvalid.Add(1)
	}
}

// takeSeat moves seat (held, or still live) to np, which is locked and not
// yet visible: the maps, the name and the announced schemas, the
// reliability state (resent at once over the new path), a new ticket
// generation. The old session ends without a Disconnect: its path is dark
// or abandoned. Lock order: np, then seat, then the server's maps.
func (s *Server) takeSeat(seat, np *peer, now time.Time) *resumeRefusal {
	seat.mu.Lock()
	defer seat.mu.Unlock()
	if seat.state != slotConnected || seat.life.lingering || seat.resume.successor != nil {
		return &refuseSeatGone // the hold ended (or another resumption won) since the checks
	}
	if capped := s.moveSeat(seat, np); capped != capNone {
		s.ctr.countCapRefusal(capped)
		return &resumeRefusal{wire.DisconnectAddressLimit, capped.detail()}
	}
	np.name, np.schemaSent, np.schemaRev = seat.name, seat.schemaSent, seat.schemaRev
	np.resume = peerResume{wants: true, gen: seat.resume.gen + 1}
	np.life.seat.holdable = true
	np.takeEngineLocked(seat.rel.engine, now)
	np.rel.held, np.rel.heldBytes = seat.rel.held, seat.rel.heldBytes
	seat.rel.held, seat.rel.heldBytes = nil, 0
	// The old session ends here without releasing what moved.
	seat.state, seat.life.closed, seat.life.seat.held = slotClosed, true, false
	seat.resume.successor = np
	s.closedSessions.remember(seat.path.addr, seat.keys.opener, now)
	np.state = slotConnected
	s.issueTicketLocked(np, now) // the resumed session's first message
	np.out.urgent, np.rxMarked = true, true
	s.rxTouched = append(s.rxTouched, np)
	return nil
}

// moveSeat puts np in seat's place in the server's maps, unless the
// admission caps of np's address are reached (then nothing changes).
func (s *Server) moveSeat(seat, np *peer) capKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.byAddr[seat.path.addr] == seat
	if live {
		s.admittedBy.release(seat.path.addr.Addr())
	}
	if capped := s.admittedBy.reached(np.path.addr.Addr(), s.cfg.Admission); capped != capNone {
		if live {
			s.admittedBy.add(seat.path.addr.Addr())
		}
		return capped
	}
	if live {
		delete(s.byAddr, seat.path.addr)
	}
	s.unholdLocked(seat)
	if m := &seat.path.mig; m.hasID && s.byConnID[m.id] == seat {
		delete(s.byConnID, m.id) // the old session's connection id dies with it
	}
	s.admittedBy.add(np.path.addr.Addr())
	s.byAddr[np.path.addr] = np
	s.byID[np.id] = np
	s.due.remove(seat) // both locked (takeSeat)
	s.due.add(np)
	return capNone
}

// A hello cannot say whether its handshake resumes a seat: the ticket
// travels in ClientFinished, sealed and bound to this handshake
// (docs/protocol.md §3.15). A held seat is not a new admission, so where
// one may come back, the drain and capacity are judged at ClientFinished
// instead of at the hello (claimSlot refuses a handshake that does not
// resume; finishResume judges neither).

// mayResumeDraining reports whether a draining server lets the hello on:
// a v4 hello while resumption is on (any ticketed seat, held or live, may
// come back during the drain).
func (s *Server) mayResumeDraining(rule answer) bool {
	return rule.version >= handshake.ProtocolVersion4 && s.resume.hold > 0
}

// mayResumeFull reports whether a full server lets the hello on: a v4
// hello while a seat is held (it keeps its slot, so it is what fills the
// server). A full server with no held seat refuses at the hello, as before.
func (s *Server) mayResumeFull(rule answer) bool {
	return rule.version >= handshake.ProtocolVersion4 && s.resume.nHeld.Load() > 0
}
