package netstack

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The receive path of a session (docs/protocol.md §5): open the sealed
// frame, check the datagram's structure (v4) or the packet (v3), then for
// every message: an unreliable one meets its schema and is consumed or
// delivered; a reliable one goes through the reliability engine first
// (acknowledged, deduplicated, reassembled, ordered) and meets its schema
// when it is delivered. A message that fails its schema is refused (§5.6):
// acknowledged all the same, and on ReliableOrdered its turn is taken, so
// nothing the peer sends can stall a channel or end the session; every
// refusal is counted and, in a v4 session, told to the sender in a
// MessageRefused notice.
//
// A v3 session keeps v3's rules (protocol-v3.md §3, §7): only v3's types
// are known to it, and a reliable packet that fails its schema is dropped
// before the reliability engine sees it — counted, never acknowledged, so
// that its sender resends it (a duplicate of one already received is
// acknowledged as any duplicate, without a second look).

// deliverFunc receives a validated message; payload is only valid during the call.
type deliverFunc func(h *wire.Header, payload []byte)

// validator is the schema check of the receive path: a *wire.Registry, or a
// client's registry with the server's announced module types behind it.
type validator interface {
	Validate(travel wire.Direction, h *wire.Header, payload []byte) error
}

// rxContext is what one receive call needs beyond the datagram; it lives in
// the session so that the bound callbacks reach it without allocating.
type rxContext struct {
	reg     validator
	deliver deliverFunc
	now     time.Time
	// ready, when set, says whether a type has a consumer now (the server's
	// handlers): a held message waits for both its schema and its handler.
	ready func(wire.MessageType) bool
}

// minOpenScratch is the first capacity of a session's scratch for opened
// plaintext: a heartbeat's datagram fits.
const minOpenScratch = 128

// receiveLocked authenticates a sealed datagram and handles every message
// in it. It returns false when the datagram was dropped (counted).
func (s *session) receiveLocked(reg validator, datagram []byte, now time.Time, deliver deliverFunc, ready func(wire.MessageType) bool) bool {
	if cap(s.keys.open) < len(datagram) { // room for the plaintext, grown by doubling
		s.keys.open = make([]byte, 0, max(len(datagram), 2*cap(s.keys.open), minOpenScratch))
	}
	s.rel.engine.Prefetch() // its misses overlap the opening
	pkt, err := s.keys.opener.Open(s.keys.open[:0], datagram, now)
	if err != nil {
		s.countDrop(dropSecurity)
		return false
	}
	s.keys.open = pkt[:0]
	s.wakeService() // acks, answers, held messages, a linger's end: the next service pass looks
	s.path.lastAuth = s.since(now)
	if s.life.seat.adopt != nil {
		s.adoptLocked(now) // the server's answer to a resumption (resume_session.go)
	}
	s.ctr.PacketsReceived.Add(1)
	s.ctr.BytesReceived.Add(uint64(len(datagram)))
	s.path.q.traffic(now, 0, len(datagram))
	if s.version >= handshake.ProtocolVersion4 {
		if _, err := wire.CheckDatagram(pkt); err != nil {
			s.countDrop(dropMalformed)
			return false
		}
		s.rel.rx0 = rxContext{reg: reg, deliver: deliver, now: now, ready: ready}
		s.releaseHeldLocked()
		s.rel.engine.Expire(now, s.rel.checkedFn)
		r := wire.NewDatagramReader(pkt)
		n := 0
		for {
			payload, ok := r.Next(&s.rel.rx)
			if !ok {
				break
			}
			n++
			s.handleLocked(&s.rel.rx, payload)
			if s.life.closed {
				break
			}
		}
		s.countReceived(n)
	} else {
		h, payload, err := wire.ParsePacket(pkt)
		if err != nil {
			s.countDrop(dropMalformed)
			return false
		}
		wantSender := uint32(0)
		if s.server {
			wantSender = s.id
		}
		if h.SenderID != wantSender {
			s.countDrop(dropMalformed)
			return false
		}
		s.rel.rx = h
		s.rel.rx0 = rxContext{reg: reg, deliver: deliver, now: now, ready: ready}
		s.releaseHeldLocked()
		s.countReceived(1)
		s.handleLocked(&s.rel.rx, payload)
	}
	s.rel.rx0 = rxContext{}
	s.admitResumedLocked()
	if !s.life.closed && s.rel.engine.Due(now) {
		s.out.urgent = true // an Ack due at once (a duplicate, AckEvery arrivals), or a window that opened
	}
	return true
}

// countReceived counts a datagram's authenticated messages, once per
// datagram rather than per message (atomic adds, on the session's and the
// server's counters).
func (s *session) countReceived(n int) {
	if n == 0 {
		return
	}
	s.ctr.MessagesReceived.Add(uint64(n))
	if s.global != nil {
		s.global.MessagesReceived.Add(uint64(n))
	}
}

// handleLocked routes one authenticated message (counted by its caller).
func (s *session) handleLocked(h *wire.Header, payload []byte) {
	now := s.rel.rx0.now
	if s.server && h.Type == wire.TypeConnect && h.FragCount == 0 {
		// A repeated ClientFinished is a duplicate by Sequence alone: acked,
		// never processed again. Any other type-1 packet is dropped.
		if h.Channel == wire.Reliable && h.Sequence == 1 {
			s.rel.engine.Receive(h, payload, now, discard)
		} else {
			s.countDrop(dropMalformed)
		}
		return
	}
	if h.Channel.IsReliable() && s.version < handshake.ProtocolVersion4 && !s.rel.engine.Seen(h.Sequence) {
		if err := s.validate(h, payload); err != nil {
			s.refuseLocked(h, wire.RefusalOf(err)) // v3: dropped unacknowledged
			return
		}
	}
	if h.Channel.IsReliable() {
		// Reliability first: a duplicate is acknowledged without another
		// look; a new message is acknowledged, ordered (and reassembled),
		// and meets its schema when its turn comes (deliverChecked), so a
		// refused one still takes its turn and never stalls the channel.
		if !s.rel.engine.Receive(h, payload, now, s.rel.checkedFn) {
			s.countDrop(dropOther) // beyond the windows: unacknowledged, resent later
		}
		return
	}
	if err := s.validate(h, payload); err != nil {
		s.refuseLocked(h, wire.RefusalOf(err))
		return
	}
	s.path.q.sawUnreliable(h.Sequence)
	switch h.Type {
	case wire.TypeAck:
		a, err := wire.ParseAck(payload)
		if err != nil {
			return // unreachable: validated
		}
		s.rel.engine.OnAck(reliable.Ack{Ack: a.Ack, Bits: a.Bits, DelayMS: a.DelayMS}, now)
	case wire.TypeHeartbeat:
		hb, err := wire.ParseHeartbeat(payload)
		if err != nil {
			return
		}
		s.onHeartbeatLocked(hb, now)
	case wire.TypeDisconnect:
		d, err := wire.ParseDisconnect(payload)
		if err != nil {
			return
		}
		s.peerClosedLocked(wire.DisconnectReason(d.Reason), d.Detail)
	case wire.TypePathChallenge:
		if c, err := wire.ParsePathChallenge(payload); err == nil {
			s.onPathChallengeLocked(c)
		}
	case wire.TypePathResponse:
		if r, err := wire.ParsePathResponse(payload); err == nil {
			s.onPathResponseLocked(r)
		}
	case wire.TypeMessageRefused:
		if n, err := wire.ParseMessageRefused(payload); err == nil {
			s.onRefusedLocked(n)
			s.add(peerRefusals, 1+uint64(n.Suppressed))
			if n.Type == wire.TypeResumeRequest && s.life.seat.noTickets != nil {
				s.life.seat.noTickets() // a server that holds no seats (resume_client.go)
			}
			if s.rel.deliverRefusals {
				s.rel.rx0.deliver(h, payload)
			}
		}
	default:
		s.rel.rx0.deliver(h, payload)
	}
}

func peerRefusals(c *Counters) *atomicU64 { return &c.PeerRefusals }

// validate applies the receive rules to a message: a type of the
// session's protocol version (to a v3 session every later type is
// unknown), then its schema.
func (s *session) validate(h *wire.Header, payload []byte) error {
	if !wire.InProtocol(s.version, h.Type) {
		return wire.ErrUnknownType
	}
	return s.rel.rx0.reg.Validate(s.travel(), h, payload)
}

// unconsumed reports whether t is a built-in type that no handler takes on
// this server (a module type without a handler is held instead, held.go).
func (s *session) unconsumed(t wire.MessageType) bool {
	return s.server && t < wire.FirstUserDefined && s.rel.rx0.ready != nil && !s.rel.rx0.ready(t)
}

// travel is the direction this end receives in.
func (s *session) travel() wire.Direction {
	if s.server {
		return wire.ClientToServer
	}
	return wire.ServerToClient
}

// deliverChecked is the deliver function given to the reliability engine:
// a reliable message meets its schema here, in its turn (whole, for a
// fragmented one). A refused message is dropped and counted; on the server,
// one of a module type whose module is not loaded now is held (held.go).
func (s *session) deliverChecked(h *wire.Header, payload []byte) {
	err := s.validate(h, payload)
	switch {
	case err == nil && s.life.lingering:
		// Closing: acknowledged (the engine did), not delivered.
	case err == nil && s.unconsumed(h.Type):
		// A built-in type nothing on this server takes (EntityRPC from a
		// client): refused, so that nothing accepted is silently lost.
		s.refuseLocked(h, wire.RefusedNotLoaded)
	case err == nil:
		h.FragCount = 0
		s.rel.rx0.deliver(h, payload)
	case err == wire.ErrTypeNotLoaded && s.rel.holdFor > 0:
		s.holdLocked(h, payload)
	default:
		s.refuseLocked(h, wire.RefusalOf(err))
	}
}

// engineRefused is the reliability engine's refusal hook (inconsistent,
// oversized or abandoned reassembly).
func (s *session) engineRefused(h *wire.Header, reason wire.RefusalReason) { s.refuseLocked(h, reason) }

// refuseLocked counts a refused message and, in a v4 session, queues a
// MessageRefused notice for its sender within the notice rate limit (never
// for a notice).
//
// A refusal also counts in malformedDropped (one message refused is what
// one packet dropped was in protocol v3), not in packetsDropped: the
// datagram around it was accepted.
func (s *session) refuseLocked(h *wire.Header, reason wire.RefusalReason) {
	s.ctr.refused(reason)
	s.ctr.more().MalformedDropped.Add(1)
	if s.global != nil {
		s.global.refused(reason)
		s.global.MalformedDropped.Add(1)
	}
	if s.version < handshake.ProtocolVersion4 || h.Type == wire.TypeMessageRefused || s.life.closed {
		return
	}
	now := s.rel.rx0.now
	if now.IsZero() {
		now = time.Now()
	}
	s.rel.noticeTokens = min(noticeBurst, s.rel.noticeTokens+float64(s.since(now)-s.rel.noticeAt)/float64(noticeEvery))
	s.rel.noticeAt = s.since(now)
	if s.rel.noticeTokens < 1 {
		s.rel.suppressed++
		s.add(noticesSuppressed, 1)
		return
	}
	s.rel.noticeTokens--
	n := wire.MessageRefused{Type: h.Type, Channel: h.Channel, Reason: reason, Suppressed: s.rel.suppressed}
	if h.Channel.IsReliable() {
		n.Sequence = h.Sequence
	}
	s.rel.suppressed = 0
	var buf [wire.MessageRefusedSize]byte
	s.queueUnreliable(wire.TypeMessageRefused, wire.AppendMessageRefused(buf[:0], &n))
	if s.out.queuedAt.IsZero() {
		s.out.queuedAt = now
	}
	s.add(noticesSent, 1)
}

func noticesSent(c *Counters) *atomicU64       { return &c.NoticesSent }
func noticesSuppressed(c *Counters) *atomicU64 { return &c.NoticesSuppressed }

// discard is the deliver function for a ClientFinished, which the reliability
// engine must see (to ack it and recognise repeats) but nobody consumes.
func discard(*wire.Header, []byte) {}
