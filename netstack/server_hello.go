package netstack

import (
	"net/netip"
	"time"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/netstack/cookie"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The plain handshake path of docs/protocol.md §3.5, after the endpoint
// policy and the address and prefix budgets (handleDatagram). Until a v4
// source has echoed a valid cookie nothing here keeps state for it, computes
// a key agreement or a signature, or sends it more bytes than the datagram it
// answers. Everything runs on the receive goroutine and no lock is held across
// the signature: the half-open table is locked only to look up and to insert.

// compatAmplification bounds the answers to v3 and v1 requests where v3 is
// allowed: 3× the request (v3's own rule; its ConnectAccepted is 179 bytes
// for a 79-byte hello). Every other answer to an unvalidated source is at most
// 1× the request.
const compatAmplification = 3

// answer says how a reply may be sent: framed (0x01) or bare (a v1 answer),
// the server_version of a ConnectRejected, and for an unvalidated source the
// byte limit and the budget.
type answer struct {
	framed    bool
	version   uint16
	validated bool      // no byte limit, no budget of replies to unvalidated sources
	proof     addrProof // how the source proved its address, for its session
	limit     int       // bytes; only for unvalidated sources
}

// compatVersion is the server_version of answers that precede any version
// choice (ProtocolMissing, ProtocolTooOld, v1): 3 where v3 clients are
// served (what they expect), else 4.
func (s *Server) compatVersion() uint16 {
	if s.allowV3 {
		return handshake.ProtocolVersion
	}
	return handshake.ProtocolVersion4
}

// unvalidated is the answer rule for a request of size bytes from a source
// that has not proven its address.
func (s *Server) unvalidated(version uint16, size, factor int) answer {
	return answer{framed: true, version: version, limit: factor * size}
}

// handlePlain processes a plain handshake frame (d includes the class byte);
// vouched says the transport proved the source's address.
func (s *Server) handlePlain(d []byte, from netip.AddrPort, vouched bool, now time.Time) {
	h, payload, err := wire.ParsePacket(d[1:])
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
	if s.isConnected(from) {
		s.ctr.drop(dropMalformed) // §5.5 names no counter, so the default one
		return
	}
	compat := 1
	if s.allowV3 {
		compat = compatAmplification
	}
	version, reason := handshake.PeekVersion(payload)
	switch {
	case reason != handshake.RejectNone:
		s.refuse(from, s.unvalidated(s.compatVersion(), len(d), compat), wire.RejectProtocolMissing, "not a sparkhost ClientHello", now)
	case version < handshake.ProtocolVersion:
		s.refuse(from, s.unvalidated(s.compatVersion(), len(d), compat), wire.RejectProtocolTooOld, "client protocol too old; update the client", now)
	case version == handshake.ProtocolVersion && !s.allowV3:
		s.ctr.ProtocolV3Refused.Add(1)
		s.refuse(from, s.unvalidated(handshake.ProtocolVersion4, len(d), 1), wire.RejectProtocolTooOld, s.cfg.RefuseV3Detail, now)
	case version == handshake.ProtocolVersion:
		s.helloV3(payload, len(d), from, now)
	case version == handshake.ProtocolVersion4 && s.cfg.MaxProtocol >= handshake.ProtocolVersion4:
		s.helloV4(payload, len(d), from, vouched, now)
	default:
		detail := "client protocol too new; this server speaks protocol v4"
		if s.cfg.MaxProtocol < handshake.ProtocolVersion4 {
			detail = "client protocol too new; this server speaks protocol v3"
		}
		s.refuse(from, s.unvalidated(s.cfg.MaxProtocol, len(d), compat), wire.RejectProtocolTooNew, detail, now)
	}
}

func (s *Server) isConnected(from netip.AddrPort) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byAddr[from] != nil
}

// helloV3 handles a v3 ClientHello where v3 is allowed (§5.5 of the v3
// contract): v3 has no address validation, so it is answered under the
// unvalidated rules, with v3's 3× limit.
func (s *Server) helloV3(payload []byte, size int, from netip.AddrPort, now time.Time) {
	rule := s.unvalidated(handshake.ProtocolVersion, size, compatAmplification)
	if _, reason := handshake.CheckClientHello(payload); reason != handshake.RejectNone {
		s.refuse(from, rule, wire.RejectReason(reason), helloRejectDetail(wire.RejectReason(reason)), now)
		return
	}
	s.answerHello(from, rule, payload, now)
}

// helloV4 handles a v4 ClientHello: shape checks, then address validation
// (a CookieReply to a hello without a valid cookie), then the answer. A
// source the transport vouched for (its own handshake proved the address:
// a WebTransport or WebSocket session) has nothing left to prove: it is
// answered as a validated source, without the cookie round trip.
func (s *Server) helloV4(payload []byte, size int, from netip.AddrPort, vouched bool, now time.Time) {
	rule := s.unvalidated(handshake.ProtocolVersion4, size, 1)
	if vouched {
		rule.validated, rule.proof = true, proofTransport
	}
	hello, reason := handshake.CheckClientHello4(payload)
	if reason != handshake.RejectNone {
		s.refuse(from, rule, wire.RejectReason(reason), helloRejectDetail(wire.RejectReason(reason)), now)
		return
	}
	core := payload[:handshake.HelloCoreSize]
	if s.validate && !vouched {
		if len(hello.Cookie) == 0 {
			s.sendCookie(from, &hello.Nonce, core, rule, now)
			return
		}
		if s.cookies.Verify(now, from, core, hello.Cookie) != cookie.Valid {
			s.ctr.CookiesFailed.Add(1)
			s.sendCookie(from, &hello.Nonce, core, rule, now) // a fresh one: it may just have expired
			return
		}
		s.ctr.CookiesVerified.Add(1)
		rule.validated, rule.proof = true, proofCookie
	}
	s.answerHello(from, rule, payload, now)
}

// sendCookie answers with a CookieReply for this source and hello.
func (s *Server) sendCookie(to netip.AddrPort, nonce *[handshake.NonceSize]byte, core []byte, rule answer, now time.Time) {
	c, err := s.cookies.Mint(now, to, core)
	if err != nil {
		s.log.Error("address validation: cannot mint a cookie; answering nothing", "err", err)
		s.ctr.drop(dropOther)
		return
	}
	var pl [handshake.CookieReplyMaxSize]byte
	payload := handshake.AppendCookieReply(pl[:0], nonce, c[:])
	h := wire.Header{Type: wire.TypeCookieReply, Timestamp: s.timeAt(now)}
	s.reply = wire.AppendPacket(append(s.reply[:0], classPlain), &h, payload)
	if s.sendUnvalidated(s.reply, to, rule, false, now) {
		s.ctr.CookiesSent.Add(1)
	}
}

// answerHello answers a hello that passed its checks (and, for a validated
// v4 source, the cookie): the cached ConnectAccepted for a repeat, else
// Banned, ServerFull, the half-open caps and the budgets, then one key
// agreement and one signature outside every lock, then the half-open entry.
func (s *Server) answerHello(from netip.AddrPort, rule answer, payload []byte, now time.Time) {
	var core [handshake.HelloCoreSize]byte
	copy(core[:], payload)
	if ho := s.halfOpen.lookup(from); ho != nil && ho.version == rule.version && ho.core == core {
		s.sendAnswer(ho.accepted, from, rule, now)
		return
	}
	if s.cfg.IsBanned != nil && s.cfg.IsBanned(from.Addr()) {
		s.refuse(from, rule, wire.RejectBanned, "this address is banned from the server", now)
		return
	}
	if detail, draining := s.Draining(); draining && !s.mayResumeDraining(rule) {
		s.refuse(from, rule, wire.RejectServerDraining, detail, now)
		return
	}
	if s.admittedCount() >= s.cfg.MaxClients && !s.mayResumeFull(rule) {
		s.refuse(from, rule, wire.RejectServerFull, "server is full; try again later", now)
		return
	}
	if k := s.capReached(from.Addr()); k != capNone {
		s.ctr.countCapRefusal(k)
		s.refuse(from, rule, wire.RejectAddressLimit, k.detail(), now)
		return
	}
	if !s.halfOpen.admits(from) {
		s.ctr.drop(dropHalfOpenCap)
		return
	}
	const acceptedSize = 1 + wire.HeaderSize + handshake.ConnectAcceptedSize
	if !rule.validated {
		if acceptedSize > rule.limit {
			s.ctr.drop(dropAmplification)
			return
		}
		if !s.budgets.unvalidated.Allow(now) {
			s.ctr.drop(dropUnvalidatedBudget)
			return
		}
	}
	if !s.budgets.signatures.Allow(now) {
		s.ctr.drop(dropHandshakeBudget)
		return
	}
	id := s.nextID
	var res *handshake.ServerResult
	var err error
	switch {
	case rule.version == handshake.ProtocolVersion4:
		res, err = handshake.AcceptV4(s.identity, payload, id, s.timeAt(now), nil)
	case s.cfg.MaxProtocol >= handshake.ProtocolVersion4:
		hello, _ := handshake.CheckClientHello(payload)
		res, err = handshake.AcceptV3Marked(s.identity, payload, hello, id, s.timeAt(now), nil)
	default:
		hello, _ := handshake.CheckClientHello(payload)
		res, err = handshake.Accept(s.identity, payload, hello, id, s.timeAt(now), nil)
	}
	s.ctr.HandshakesSigned.Add(1)
	if err != nil {
		rule.validated = true // the budget was charged above
		s.refuse(from, rule, wire.RejectMalformedHandshake, "handshake refused", now)
		return
	}
	s.nextID++
	hdr := wire.Header{Type: wire.TypeConnectAccepted, Timestamp: s.timeAt(now)}
	accepted := append(make([]byte, 0, acceptedSize), classPlain)
	e := &halfOpen{
		addr: from, id: id, version: rule.version, proof: rule.proof, created: now, core: core,
		accepted: wire.AppendPacket(accepted, &hdr, res.Payload[:]),
		keys:     sessionKeys{send: res.S2C, recv: res.C2S, th: res.TH},
	}
	s.halfOpen.insert(e)
	s.writePlain(e.accepted, from)
}

// sendAnswer sends a ConnectAccepted (fresh or cached) under rule.
func (s *Server) sendAnswer(b []byte, to netip.AddrPort, rule answer, now time.Time) {
	if rule.validated {
		s.writePlain(b, to)
		return
	}
	s.sendUnvalidated(b, to, rule, false, now)
}

// sendUnvalidated sends b to a source that has not proven its address: never
// more than rule.limit bytes, and only within the global budget of such
// replies; a refusal first within the refusal budget, so that tiny requests
// cannot spend the tokens of CookieReplies (§3.5). It reports whether b was
// sent.
func (s *Server) sendUnvalidated(b []byte, to netip.AddrPort, rule answer, refusal bool, now time.Time) bool {
	if len(b) > rule.limit {
		s.ctr.drop(dropAmplification)
		return false
	}
	if refusal && !s.budgets.refusals.Allow(now) {
		s.ctr.drop(dropRefusalBudget)
		return false
	}
	if !s.budgets.unvalidated.Allow(now) {
		s.ctr.drop(dropUnvalidatedBudget)
		return false
	}
	s.writePlain(b, to)
	return true
}

// handleLegacy answers a protocol v1 Connect with an unframed ConnectRejected
// (ProtocolTooOld) of at most 3× its size where v3 is allowed, 1× elsewhere
// (shorter than the answer: dropped); anything else of that class is dropped.
func (s *Server) handleLegacy(d []byte, from netip.AddrPort, now time.Time) {
	h, _, err := wire.ParsePacket(d)
	if err != nil || h.Type != wire.TypeConnect {
		s.ctr.drop(dropMalformed)
		return
	}
	rule := s.unvalidated(s.compatVersion(), len(d), 1)
	if s.allowV3 {
		rule.limit *= compatAmplification
	}
	rule.framed = false
	s.refuse(from, rule, wire.RejectProtocolTooOld, "update the client: v1 is unsupported", now)
}

// refuse sends ConnectRejected under rule. To an unvalidated source the
// detail is shortened to fit rule.limit; when even an empty detail does not
// fit, nothing is sent (counted AmplificationDropped).
func (s *Server) refuse(to netip.AddrPort, rule answer, reason wire.RejectReason, detail string, now time.Time) {
	s.hs.refuse(reason)
	if rule.version < handshake.ProtocolVersion4 && reason > wire.RejectBanned {
		reason = wire.RejectServerFull // v3 defines 1..7; the detail says what happened
	}
	base := wire.HeaderSize + 5
	if rule.framed {
		base++
	}
	if !rule.validated {
		detail = fitDetail(detail, rule.limit-base)
		if rule.limit < base {
			s.ctr.drop(dropAmplification)
			return
		}
	}
	s.replyPayload = wire.AppendConnectRejected(s.replyPayload[:0], &wire.ConnectRejected{Reason: uint8(reason), ServerVersion: rule.version, Detail: detail})
	payload := s.replyPayload
	h := wire.Header{Type: wire.TypeConnectRejected, Timestamp: s.timeAt(now)}
	s.reply = s.reply[:0]
	if rule.framed {
		s.reply = append(s.reply, classPlain)
	}
	s.reply = wire.AppendPacket(s.reply, &h, payload)
	if rule.validated {
		s.writePlain(s.reply, to)
		return
	}
	s.sendUnvalidated(s.reply, to, rule, true, now)
}

// fitDetail cuts detail to at most room bytes on a character boundary.
func fitDetail(detail string, room int) string {
	if room <= 0 {
		return ""
	}
	if len(detail) <= room {
		return detail
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(detail[cut]) {
		cut--
	}
	return detail[:cut]
}

func helloRejectDetail(r wire.RejectReason) string {
	switch r {
	case wire.RejectMalformedHandshake:
		return "malformed ClientHello"
	case wire.RejectUnsupportedSuite:
		return "unsupported cipher suite; this server offers suite 1"
	}
	return ""
}
