package netstack

import (
	"bytes"
	"crypto/rand"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Frame class bytes of §2.
const (
	classPlain  = 0x01
	classSealed = 0x02
	classLegacy = 0x4B // followed by 52 50 53: a bare v1 packet
)

// handleDatagram is the whole receive path for one datagram (§2): endpoint
// policy first, then the frame class.
func (s *Server) handleDatagram(d []byte, from netip.AddrPort, now time.Time) {
	addr := from.Addr()
	if !addr.Is4() || !s.policy.Allows(addr) {
		s.ctr.drop(dropPolicy)
		return
	}
	if len(d) == 0 {
		s.ctr.drop(dropMalformed)
		return
	}
	switch d[0] {
	case classSealed:
		s.handleSealed(d, from, now)
	case classPlain:
		if !s.limiter.Allow(addr.As4(), now) {
			s.ctr.drop(dropRateLimited)
			return
		}
		s.handlePlain(d[1:], from, now)
	case classLegacy:
		if len(d) < 4 || d[1] != 0x52 || d[2] != 0x50 || d[3] != 0x53 {
			s.ctr.drop(dropMalformed)
			return
		}
		if !s.limiter.Allow(addr.As4(), now) {
			s.ctr.drop(dropRateLimited)
			return
		}
		s.handleLegacy(d, from, now)
	default:
		s.ctr.drop(dropMalformed)
	}
}

// handleLegacy answers a protocol v1 Connect with an unframed ConnectRejected
// (ProtocolTooOld); anything else of that class is dropped.
func (s *Server) handleLegacy(d []byte, from netip.AddrPort, now time.Time) {
	h, _, err := wire.ParsePacket(d)
	if err != nil || h.Type != wire.TypeConnect {
		s.ctr.drop(dropMalformed)
		return
	}
	s.ctr.PacketsReceived.Add(1)
	s.reject(from, wire.RejectProtocolTooOld, "protocol v1 is no longer supported; update the client to protocol v3", false, now)
}

// handlePlain processes a plain handshake frame in the order of §5.5.
func (s *Server) handlePlain(pkt []byte, from netip.AddrPort, now time.Time) {
	h, payload, err := wire.ParsePacket(pkt)
	if err != nil {
		s.ctr.drop(dropMalformed)
		return
	}
	if h.Type < wire.TypeConnect || h.Type > wire.TypeConnectRejected {
		s.ctr.drop(dropPlaintext)
		return
	}
	if h.Type != wire.TypeConnect || h.Channel != wire.Unreliable {
		s.ctr.drop(dropMalformed) // ConnectAccepted/Rejected travel S→C only
		return
	}
	s.ctr.PacketsReceived.Add(1)

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.byAddr[from]
	if old != nil {
		old.mu.Lock()
		state, cached := old.state, old.accepted
		same := state == slotSecuring && bytes.Equal(payload, old.hello[:])
		old.mu.Unlock()
		if state == slotConnected {
			s.ctr.drop(dropMalformed) // §5.5 names no counter, so the default one
			return
		}
		if same {
			s.writePlain(cached, from)
			return
		}
	}
	hello, reason := handshake.CheckClientHello(payload)
	if reason != 0 {
		s.reject(from, wire.RejectReason(reason), rejectDetail(wire.RejectReason(reason)), true, now)
		return
	}
	if s.cfg.IsBanned != nil && s.cfg.IsBanned(from.Addr()) {
		s.reject(from, wire.RejectBanned, "this address is banned from the server", true, now)
		return
	}
	if old != nil { // a different valid hello replaces the Securing slot
		old.mu.Lock()
		old.closed, old.state = true, slotClosed
		old.mu.Unlock()
		delete(s.byAddr, from)
		delete(s.byID, old.id)
	}
	if len(s.byAddr) >= s.cfg.MaxClients {
		s.reject(from, wire.RejectServerFull, "server is full; try again later", true, now)
		return
	}
	id := s.nextID
	res, err := handshake.Accept(s.identity, payload, hello, id, s.timeAt(now), rand.Reader)
	if err != nil {
		s.reject(from, wire.RejectMalformedHandshake, "handshake refused", true, now)
		return
	}
	s.nextID++
	p := &peer{created: now}
	copy(p.hello[:], payload)
	p.session = s.newPeerSession(from, id, now, sessionKeys{send: res.S2C, recv: res.C2S, th: res.TH})
	hdr := wire.Header{Type: wire.TypeConnectAccepted, Timestamp: s.timeAt(now)}
	p.accepted = wire.AppendPacket([]byte{classPlain}, &hdr, res.Payload[:])
	s.byAddr[from] = p
	s.byID[id] = p
	s.hs.accepted.Add(1)
	s.writePlain(p.accepted, from)
}

func (s *Server) timeAt(now time.Time) float32 { return float32(now.Sub(s.origin).Seconds()) }

func rejectDetail(r wire.RejectReason) string {
	switch r {
	case wire.RejectProtocolMissing:
		return "not a protocol v3 ClientHello"
	case wire.RejectProtocolTooOld:
		return "client protocol too old; this server speaks protocol v3"
	case wire.RejectProtocolTooNew:
		return "client protocol too new; this server speaks protocol v3"
	case wire.RejectMalformedHandshake:
		return "malformed ClientHello"
	case wire.RejectUnsupportedSuite:
		return "unsupported cipher suite; this server offers suite 1"
	}
	return ""
}

// reject sends ConnectRejected, in a plain frame or (to a legacy client) bare.
func (s *Server) reject(to netip.AddrPort, reason wire.RejectReason, detail string, framed bool, now time.Time) {
	s.hs.refuse(reason)
	var buf [1 + wire.HeaderSize + 5 + 256]byte
	var pl [5 + 256]byte
	payload := wire.AppendConnectRejected(pl[:0], &wire.ConnectRejected{Reason: uint8(reason), ServerVersion: wire.ProtocolVersion, Detail: detail})
	h := wire.Header{Type: wire.TypeConnectRejected, Timestamp: s.timeAt(now)}
	out := buf[:0]
	if framed {
		out = append(out, classPlain)
	}
	out = wire.AppendPacket(out, &h, payload)
	s.writePlain(out, to)
}

func (s *Server) writePlain(b []byte, to netip.AddrPort) {
	if err := s.conn.write(b, to); err == nil {
		s.ctr.PacketsSent.Add(1)
		s.ctr.BytesSent.Add(uint64(len(b)))
	}
}

// handleSealed routes a sealed frame to the session of its source endpoint.
func (s *Server) handleSealed(d []byte, from netip.AddrPort, now time.Time) {
	s.mu.RLock()
	p := s.byAddr[from]
	s.mu.RUnlock()
	if p == nil {
		s.ctr.drop(dropSecurity) // no channel for that endpoint
		return
	}
	s.ctr.PacketsReceived.Add(1)
	s.ctr.BytesReceived.Add(uint64(len(d)))

	var admittedNow bool
	p.mu.Lock()
	if p.state == slotClosed {
		p.mu.Unlock()
		s.ctr.drop(dropSecurity)
		return
	}
	h, payload := p.openLocked(d, now)
	if h != nil {
		switch {
		case p.state == slotSecuring:
			if h.Type == wire.TypeConnect && h.Channel == wire.Reliable && h.Sequence == 1 {
				admittedNow = s.finishLocked(p, h, payload, now)
			} else {
				p.countDrop(dropMalformed)
			}
		case h.Type == wire.TypeConnect:
			// A repeated ClientFinished is a duplicate by Sequence alone: acked,
			// never processed again. Any other type-1 packet is dropped.
			if h.Channel == wire.Reliable && h.Sequence == 1 {
				p.rel.Receive(h, payload, now, discard)
				p.flushLocked(now)
			} else {
				p.countDrop(dropMalformed)
			}
		default:
			p.handleLocked(s.reg, h, payload, now, s.collectFn)
		}
	}
	closed := p.closed
	info := ClientInfo{ID: p.id, Name: p.name, Addr: p.addr}
	p.mu.Unlock()

	if admittedNow {
		s.log.Info("client connected", "client", info.ID, "name", info.Name, "addr", info.Addr.String())
		if s.cfg.OnAdmitted != nil {
			s.cfg.OnAdmitted(info)
		}
	}
	s.dispatchPending(info)
	if closed {
		s.remove(p)
	}
}

// finishLocked processes ClientFinished (§5.4) on a Securing slot and reports
// whether the client was admitted.
func (s *Server) finishLocked(p *peer, h *wire.Header, payload []byte, now time.Time) bool {
	cf, err := wire.ParseClientFinished(payload)
	switch {
	case err == wire.ErrNameInvalid:
		p.closeLocked(wire.DisconnectNameInvalid, "player name must be 1..32 bytes of UTF-8 without control characters", now)
		return false
	case err != nil:
		p.countDrop(dropMalformed)
		return false
	}
	p.state = slotConnected
	p.name = cf.Name
	p.rel.Receive(h, payload, now, discard) // marks Sequence 1 received
	if s.cfg.Welcome != nil {
		t, ch, payload := s.cfg.Welcome(p.id, nil)
		if err := p.sendLocked(t, ch, payload, now); err != nil {
			s.log.Warn("welcome message not sent", "client", p.id, "type", t.String(), "err", err)
		}
	}
	return true
}

// collect copies a delivered message into the receive scratch; it runs under
// the peer's lock, dispatchPending runs the handlers after it is released.
func (s *Server) collect(h *wire.Header, payload []byte) {
	start := len(s.scratch)
	s.scratch = append(s.scratch, payload...)
	s.pending = append(s.pending, pendingDelivery{h: *h, start: start, end: len(s.scratch)})
}

func (s *Server) dispatchPending(from ClientInfo) {
	if len(s.pending) == 0 {
		return
	}
	for i := range s.pending {
		d := &s.pending[i]
		payload := s.scratch[d.start:d.end]
		s.handlersMu.RLock()
		hf := s.handlers[d.h.Type]
		s.handlersMu.RUnlock()
		if hf != nil {
			hf(from.ID, &d.h, payload)
		}
	}
	s.pending = s.pending[:0]
	s.scratch = s.scratch[:0]
}

// discard is the deliver function for a ClientFinished, which the reliability
// engine must see (to ack it and recognise repeats) but nobody consumes.
func discard(*wire.Header, []byte) {}
