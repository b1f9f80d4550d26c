package netstack

import (
	"errors"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// finishHalfOpen handles a sealed frame from the endpoint of a half-open
// handshake (docs/protocol.md §3.7). The frame is opened with the handshake's
// own opener; only a ClientFinished whose structure parses leaves the
// half-open table, and only then is a session built. Capacity (max_clients)
// and the admission caps are judged here again, at admission: the new
// session is closed with Disconnect(ServerFull) or Disconnect(AddressLimit).
func (s *Server) finishHalfOpen(ho *halfOpen, d []byte, now time.Time) {
	if ho.opener == nil {
		ho.opener = seal.NewOpener(ho.keys.recv)
	}
	pkt, err := ho.opener.Open(s.open[:0], d, now)
	if err != nil {
		s.ctr.drop(dropSecurity)
		return
	}
	s.open = pkt[:0]
	h, payload, err := parseClientFinishedFrame(pkt, ho.version, ho.id)
	if err != nil || h.Type != wire.TypeConnect || h.Channel != wire.Reliable || h.Sequence != 1 || h.FragCount != 0 {
		s.ctr.drop(dropMalformed) // a half-open handshake accepts only ClientFinished
		return
	}
	cf, perr := wire.ParseClientFinished(payload)
	if perr != nil && perr != wire.ErrNameInvalid || cf.Resume != nil && ho.version < handshake.ProtocolVersion4 {
		s.ctr.drop(dropMalformed)
		return
	}
	if !s.halfOpen.remove(ho) {
		s.ctr.drop(dropSecurity) // expired (or replaced) since the lookup
		return
	}
	if cf.Resume != nil {
		s.finishResume(ho, &cf, len(d), now)
		return
	}
	p := s.sessionFromHalfOpen(ho, ho.id, now)

	p.mu.Lock()
	p.ctr.PacketsReceived.Add(1)
	p.ctr.BytesReceived.Add(uint64(len(d)))
	p.path.q.traffic(now, 0, len(d))
	if perr == nil {
		if reason, detail, ok := s.claimSlot(p); !ok {
			p.closeLocked(reason, detail, now)
			p.mu.Unlock()
			return
		}
	}
	admitted := s.finishLocked(p, &h, payload, now) // NameInvalid closes the session instead
	info, proof := p.info(), p.path.proof
	info.Ticket, p.ticket = p.ticket, nil // handed over: the transport keeps no copy
	p.mu.Unlock()
	if !admitted {
		return
	}
	s.log.Info("client connected", "client", info.ID, "name", info.Name, "addr", info.Addr.String(), "address_proof", proof.String())
	if s.cfg.OnAdmitted != nil {
		s.cfg.OnAdmitted(info)
	}
}

// sessionFromHalfOpen builds the session of a finished handshake, with
// id as its client id, and wipes the handshake's keys.
func (s *Server) sessionFromHalfOpen(ho *halfOpen, id uint32, now time.Time) *peer {
	p := &peer{state: slotSecuring}
	p.session = s.newPeerSession(ho.addr, id, ho.version, now, ho.keys)
	p.path.proof = ho.proof
	p.keys.opener = ho.opener // its replay window has this frame marked
	if ho.version >= handshake.ProtocolVersion4 {
		p.life.seat.key = resumeKey(ho.keys.recv, ho.keys.send, ho.keys.th)
	}
	clear(ho.keys.send[:])
	clear(ho.keys.recv[:])
	return p
}

// claimSlot judges capacity and the admission caps for p and inserts it,
// under one lock: the peer is visible, but locked and not yet Connected,
// until finishLocked has admitted it, so Clients, Send and the service loop
// skip it until then. A refused peer is not inserted; the Disconnect's
// reason and detail say why.
func (s *Server) claimSlot(p *peer) (wire.DisconnectReason, string, bool) {
	if detail, draining := s.Draining(); draining {
		s.ctr.AdmissionDrainRefused.Add(1)
		return wire.DisconnectServerDraining, detail, false
	}
	addr := p.path.addr.Addr()
	s.mu.Lock()
	full := len(s.byID) >= s.cfg.MaxClients
	capped := capNone
	if !full {
		capped = s.admittedBy.reached(addr, s.cfg.Admission)
	}
	if !full && capped == capNone {
		if s.byAddr[p.path.addr] == nil { // never otherwise: sealed frames of an admitted endpoint go to its peer
			s.admittedBy.add(addr)
		}
		s.byAddr[p.path.addr] = p
		s.byID[p.id] = p
		s.due.add(p)
		s.registerIDLocked(p)
	}
	s.mu.Unlock()
	switch {
	case full:
		s.ctr.AdmissionFullRefused.Add(1)
		return wire.DisconnectServerFull, "server is full; try again later", false
	case capped != capNone:
		s.ctr.countCapRefusal(capped)
		return wire.DisconnectAddressLimit, capped.detail(), false
	}
	return 0, "", true
}

// parseClientFinishedFrame decodes the opened first frame of a handshake: a
// §2 packet with the assigned SenderID in a v3 session; in a v4 session a
// packed datagram (§5.2) holding exactly one record (§3.7).
func parseClientFinishedFrame(pkt []byte, version uint16, id uint32) (wire.Header, []byte, error) {
	if version < handshake.ProtocolVersion4 {
		h, payload, err := wire.ParsePacket(pkt)
		if err == nil && h.SenderID != id {
			err = errNotClientFinished
		}
		return h, payload, err
	}
	if n, err := wire.CheckDatagram(pkt); err != nil || n != 1 {
		return wire.Header{}, nil, errNotClientFinished
	}
	var h wire.Header
	r := wire.NewDatagramReader(pkt)
	payload, _ := r.Next(&h)
	return h, payload, nil
}

var errNotClientFinished = errors.New("netstack: not a ClientFinished")
