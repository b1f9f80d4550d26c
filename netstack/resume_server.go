package netstack

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The server's side of resumption (docs/protocol.md §3.15): tickets for the
// sessions that ask, seats held when a path goes dark, and the new
// handshake that takes a held (or still live) seat back.

// DefaultResumeHold is how long after a client's last authenticated
// datagram its seat is held for a resumption.
const DefaultResumeHold = 30 * time.Second

// peerResume is a seat's resumption bookkeeping; guarded by the peer's
// session lock.
type peerResume struct {
	wants    bool      // the client sent ResumeRequest: it is sent tickets
	gen      uint32    // the generation of the tickets that resume this seat
	issuedAt time.Time // when the newest ticket was queued
	// successor is the peer that resumed this seat: a Send that found this
	// one goes there, so nothing sent during the takeover is lost.
	successor *peer
}

// resumeState is the server's: its ticket jar and the held seats.
type resumeState struct {
	hold     time.Duration // 0: resumption off
	lifetime time.Duration
	jar      *ticketJar
	held     map[uint32]*peer // under Server.mu; also still in byID
	nHeld    atomic.Int64     // len(held), for readers without the lock (metrics)
	// heldAt finds a held seat by its old address (under Server.mu), so
	// that its client, if it comes back there before its own timeout, is
	// heard (a client with a connection id is found by it).
	heldAt map[netip.AddrPort]*peer
}

// unholdLocked forgets a held seat; under Server.mu.
func (s *Server) unholdLocked(p *peer) {
	if s.resume.held[p.id] == p {
		delete(s.resume.held, p.id)
		s.resume.nHeld.Add(-1)
	}
	if s.resume.heldAt[p.path.addr] == p {
		delete(s.resume.heldAt, p.path.addr)
	}
}

// heldAt returns the held seat whose old address is from.
func (s *Server) heldAt(from netip.AddrPort) *peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.resume.heldAt[from]
}

// wakeLocked ends the hold of a seat whose client was heard again, on its
// old session (it came back before its own timeout): nothing to resume,
// the session goes on, what waited is resent at once. It reports whether
// the seat was held.
func (p *peer) wakeLocked(now time.Time) bool {
	if !p.life.seat.held || p.state != slotConnected || p.life.closed {
		return false
	}
	p.life.seat.held = false
	p.life.reason, p.life.detail = 0, ""
	p.path.lastAuth = p.since(now)
	_ = p.rel.engine.Resume(now)
	p.out.urgent = true
	return true
}

// wakeSeat puts a seat that woke back in the endpoint map, at its address
// (migration moves it from there if its client came from elsewhere).
func (s *Server) wakeSeat(p *peer) {
	s.mu.Lock()
	s.unholdLocked(p)
	if s.byAddr[p.path.addr] == nil && s.byID[p.id] == p {
		s.byAddr[p.path.addr] = p
		s.admittedBy.add(p.path.addr.Addr())
	}
	s.mu.Unlock()
	s.ctr.SeatsWoken.Add(1)
	s.log.Info("client back on its held seat's session", "client", p.id)
}

func (s *Server) initResume(now time.Time) {
	s.resume = resumeState{hold: max(s.cfg.ResumeHold, 0), lifetime: s.cfg.TicketLifetime,
		held: make(map[uint32]*peer), heldAt: make(map[netip.AddrPort]*peer)}
	s.resume.jar = newTicketJar(s.resume.lifetime, now)
	s.handlers[wire.TypeResumeRequest] = s.onResumeRequest
}

// onResumeRequest answers ResumeRequest with a ticket (or, with resumption
// off, with a ResumeTicket that says so).
func (s *Server) onResumeRequest(client uint32, _ *wire.Header, _ []byte) {
	p := s.admitted(client)
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.state == slotConnected && !p.life.lingering && p.version >= handshake.ProtocolVersion4 {
		p.resume.wants = true
		s.issueTicketLocked(p, time.Now())
	}
	p.mu.Unlock()
}

// issueTicketLocked queues a fresh ResumeTicket for p, which makes its
// session holdable.
func (s *Server) issueTicketLocked(p *peer, now time.Time) {
	var m wire.ResumeTicket
	if s.resume.hold > 0 {
		c := ticketClaims{clientID: p.id, generation: p.resume.gen, identity: s.identity.Public, name: p.name,
			expires: now.Add(s.resume.lifetime).Unix()}
		m = wire.ResumeTicket{HoldSeconds: uint16(s.resume.hold / time.Second), Lifetime: uint32(s.resume.lifetime / time.Second),
			Ticket: s.resume.jar.seal(&c, now)}
		p.life.seat.holdable = true
	}
	p.resume.issuedAt = now
	if err := p.sendLocked(wire.TypeResumeTicket, wire.Reliable, wire.AppendResumeTicket(nil, &m), now); err == nil && len(m.Ticket) > 0 {
		s.ctr.ResumeTicketsIssued.Add(1)
	}
}

// resumeServiceLocked re-issues a ticket that passed half its lifetime.
func (s *Server) resumeServiceLocked(p *peer, now time.Time) {
	if p.resume.wants && s.resume.hold > 0 && !p.life.seat.held && now.Sub(p.resume.issuedAt) >= s.resume.lifetime/2 {
		s.issueTicketLocked(p, now)
	}
}

// resumeDueLocked is when resumeServiceLocked next has something to do for
// p (its ticket's reissue), zero for never: the service loop skips a
// session until then (session.nextServiceLocked).
func (s *Server) resumeDueLocked(p *peer) time.Time {
	if !p.resume.wants || s.resume.hold <= 0 || p.life.seat.held {
		return time.Time{}
	}
	return p.resume.issuedAt.Add(s.resume.lifetime / 2)
}

// holdSeat moves a peer whose session is held out of the endpoint map (its
// path is dark; its address counts no more) into the held seats. It keeps
// its id and its slot.
func (s *Server) holdSeat(p *peer) {
	s.mu.Lock()
	moved := s.byAddr[p.path.addr] == p && s.byID[p.id] == p
	if moved {
		delete(s.byAddr, p.path.addr)
		s.admittedBy.release(p.path.addr.Addr())
		s.resume.held[p.id] = p
		s.resume.nHeld.Add(1)
		s.resume.heldAt[p.path.addr] = p
	}
	s.mu.Unlock()
	if !moved {
		return
	}
	s.ctr.SeatsHeld.Add(1)
	p.mu.Lock()
	info, reason := p.info(), p.life.reason
	p.mu.Unlock()
	s.log.Info("client seat held for resumption", "client", info.ID, "name", info.Name, "addr", info.Addr.String(),
		"reason", reason.String(), "hold", s.resume.hold.String())
	if s.cfg.OnHeld != nil {
		s.cfg.OnHeld(info)
	}
}

// expireHeld closes the held seats whose hold ended: the game sees the
// player leave (Timeout) only now.
func (s *Server) expireHeld(now time.Time) {
	s.mu.RLock()
	var due []*peer
	for _, p := range s.resume.held {
		due = append(due, p)
	}
	s.mu.RUnlock()
	for _, p := range due {
		p.mu.Lock()
		end := p.life.seat.held && p.since(now)-p.path.lastAuth >= s.resume.hold
		if end {
			p.endHoldLocked(wire.DisconnectTimeout, fmt.Sprintf("did not come back within %v", s.resume.hold), now)
		}
		p.mu.Unlock()
		if end {
			s.ctr.SeatsExpired.Add(1)
			s.remove(p)
		}
	}
}

// heldPeers lists the held seats.
func (s *Server) heldPeers() []*peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*peer, 0, len(s.resume.held))
	for _, p := range s.resume.held {
		out = append(out, p)
	}
	return out
}

// appendHeld appends the held seats to peers.
func (s *Server) appendHeld(peers []*peer) []*peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.resume.held {
		peers = append(peers, p)
	}
	return peers
}

// Held reports whether client id's seat is held for a resumption (its
// path went dark; it still counts).
func (s *Server) Held(id uint32) bool {
	p := s.admitted(id)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.life.seat.held
}

// HeldSeats returns the number of seats held for a resumption.
func (s *Server) HeldSeats() int { return int(s.resume.nHeld.Load()) }

// sendHeldLocked is Send to a held seat: a reliable message queues in its
// reliability state (delivered after a resumption); an unreliable one is
// dropped. When the queue is full the hold ends (end reports it), so that
// no reliable message is silently lost.
func (s *Server) sendHeldLocked(p *peer, t wire.MessageType, ch wire.Channel, payload []byte, now time.Time) (end bool, err error) {
	if !ch.IsReliable() {
		return false, nil
	}
	err = p.sendLocked(t, ch, payload, now)
	if errors.Is(err, reliable.ErrSendQueueFull) {
		p.endHoldLocked(wire.DisconnectTimeout, "too much queued while away", now)
		return true, err
	}
	return false, err
}

// resumeRefusal is why a resumption was refused.
type resumeRefusal struct {
	reason wire.DisconnectReason
	detail string
}

var (
	refuseUnknownTicket = resumeRefusal{wire.DisconnectResumeInvalid, "resume ticket not recognised; connect again"}
	refuseOtherServer   = resumeRefusal{wire.DisconnectResumeInvalid, "resume ticket of another server; connect again"}
	refuseOtherName     = resumeRefusal{wire.DisconnectResumeInvalid, "resume ticket of another name; connect again"}
	refuseExpired       = resumeRefusal{wire.DisconnectResumeExpired, "resume ticket expired; connect again"}
	refuseSeatGone      = resumeRefusal{wire.DisconnectResumeExpired, "your seat is no longer held; connect again"}
	refuseProof         = resumeRefusal{wire.DisconnectResumeInvalid, "resume proof does not verify; connect again"}
	refuseUsed          = resumeRefusal{wire.DisconnectResumeInvalid, "resume ticket already used; connect again"}
)

// checkResume runs §3.15's checks 1..7 and returns the seat to resume.
func (s *Server) checkResume(cf *wire.ClientFinished, th [32]byte, now time.Time) (*peer, *resumeRefusal) {
	if s.resume.hold <= 0 {
		return nil, &refuseSeatGone
	}
	c, err := s.resume.jar.open(cf.Resume.Ticket, now)
	switch {
	case err != nil:
		return nil, &refuseUnknownTicket
	case c.identity != s.identity.Public:
		return nil, &refuseOtherServer
	case c.name != cf.Name:
		return nil, &refuseOtherName
	case now.Unix() > c.expires:
		return nil, &refuseExpired
	}
	seat := s.admitted(c.clientID)
	if seat == nil {
		return nil, &refuseSeatGone
	}
	seat.mu.Lock()
	key, gen, live := seat.life.seat.key, seat.resume.gen, seat.state == slotConnected && !seat.life.lingering
	seat.mu.Unlock()
	want := resumeProof(key, th)
	switch {
	case !live:
		return nil, &refuseSeatGone
	case !hmac.Equal(want[:], cf.Resume.Proof[:]):
		return nil, &refuseProof
	case c.generation != gen:
		return nil, &refuseUsed
	}
	return seat, nil
}

var errSeatTaken = errors.New("netstack: seat changed during the resumption")
