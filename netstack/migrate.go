package netstack

import (
	"crypto/rand"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Connection migration (docs/protocol.md §4.1). A v4 client that supports
// it asks for a connection id after admission (a PathChallenge); the server
// answers with a PathResponse carrying the id, and the client puts the id in
// every later frame (class 0x03). The server finds such a frame by its id
// with one map lookup, whatever its source; an authenticated one from an
// address that is not the session's starts a path validation there: a
// PathChallenge that only the client can answer (in an authenticated frame
// from that address), sent within three times the bytes received from it.
// The answer moves the session; frames from the old address are accepted
// for oldPathGrace after the move. Until then the old address stays the
// one the server sends to: nothing but challenges ever goes to an address
// not proved.

const (
	// amplificationFactor bounds what the server sends to an unvalidated
	// address: at most this many times the bytes it received from there.
	amplificationFactor = 3
	// challengeDatagramMax is the largest datagram a PathChallenge takes:
	// header, a 5-byte base, a 3-byte record header, the token and the tag.
	challengeDatagramMax = seal.HeaderSize + 5 + 3 + wire.PathChallengeSize + seal.TagSize
	// pathValidationTimeout is how long a validation waits for its answer
	// before it is abandoned (the session stays on its address).
	pathValidationTimeout = 3 * time.Second
	// challengeRetryMin is the shortest wait before a challenge is resent
	// (otherwise twice the round trip).
	challengeRetryMin = 100 * time.Millisecond
	// oldPathGrace is how long frames from the address a session left are
	// still accepted as its own (reordered on the old path) without
	// starting a validation.
	oldPathGrace = 2 * time.Second
	// idRequestTries bounds a client's requests for a connection id; a
	// server that answers none (or refuses the type) does not migrate.
	idRequestTries = 8
	// challengeCopies is how many datagrams carry a challenge (each its own
	// frame), and a client's answer to one: a lost copy then costs nothing,
	// where it would cost a resend's wait, so that a migration takes one
	// round trip on a lossy link too (two copies fit the 3× bound of the
	// smallest frame: 2 × 43 ≤ 3 × 35 bytes).
	challengeCopies = 2
	// answerRepeat is how long after its answer a client sends the copy.
	answerRepeat = 5 * time.Millisecond
)

// migration is a session's migration state, a part of its path (session.path).
// Owner: the session; guarded by its mu.
type migration struct {
	// id is the session's connection id: the server's for the session
	// (made at admission for every v4 session, told only to a client that
	// asks); the client's once the server told it (hasID).
	id    [seal.IDSize]byte
	hasID bool

	// Server: the address being validated (zero: none), its challenge
	// token, when the first authenticated frame came from it, when the
	// challenge was last sent, and the bytes received from and sent to it.
	cand         netip.AddrPort
	token        [8]byte
	candSince    time.Time
	challengedAt time.Time
	rxBytes      int
	txBytes      int
	validated    bool           // the answer came: the server moves the session
	old          netip.AddrPort // the address before the last move
	oldUntil     time.Time      // frames from old are the session's until then
	rxFrom       netip.AddrPort // the source of the datagram being received
	moveTook     time.Duration  // the last move: first frame from the new address to the move
	movePing     time.Duration  // the ping when it moved (for OnMigrated)
	told         bool           // the id was told to the client (counted once)

	// Client: the request for an id (a PathChallenge) in flight.
	wanted   bool // a v4 client that supports migration
	reqToken [8]byte
	reqAt    time.Time
	reqTries int
	refused  bool // the server refused PathChallenge: it does not migrate
	// The copy of the client's last answer to a server's challenge, sent
	// answerRepeat after it in a datagram of its own.
	again   wire.PathResponse
	againAt time.Time // zero: no copy pending
}

// newConnectionID draws a random id (crypto/rand: the id must not be
// guessable, so that an off-path sender cannot make the server open frames).
func newConnectionID() (id [seal.IDSize]byte) {
	_, _ = rand.Read(id[:])
	return id
}

// --- Client side ---

// requestIDLocked asks the server for a connection id (once admitted, and
// again by migrateServiceLocked until answered).
func (s *session) requestIDLocked(now time.Time) {
	m := &s.path.mig
	if !m.wanted || m.hasID || m.refused || m.reqTries >= idRequestTries || s.life.finishing {
		return
	}
	if m.reqTries == 0 {
		_, _ = rand.Read(m.reqToken[:])
	}
	m.reqTries++
	m.reqAt = now
	var w [wire.PathChallengeSize]byte
	s.queueUnreliable(wire.TypePathChallenge, wire.AppendPathChallenge(w[:0], &wire.PathChallenge{Token: m.reqToken}))
	s.out.urgent = true
}

// onPathChallengeLocked answers a challenge: the server's, sent to the
// address it saw us at, from the client; the client's request for an id,
// on the server.
func (s *session) onPathChallengeLocked(c wire.PathChallenge) {
	r := wire.PathResponse{Token: c.Token}
	if s.path.mig.hasID {
		r.ID = s.path.mig.id // a server's session without one answers zero: no migration
	}
	var w [wire.PathResponseSize]byte
	s.queueUnreliable(wire.TypePathResponse, wire.AppendPathResponse(w[:0], &r))
	s.out.urgent = true
	if !s.server && s.path.mig.hasID && s.path.mig.againAt.IsZero() {
		s.path.mig.again, s.path.mig.againAt = r, s.rel.rx0.now.Add(answerRepeat)
	}
	if s.server && s.path.mig.hasID && !s.path.mig.told {
		s.path.mig.told = true
		s.add(idsIssued, 1)
	}
}

// onPathResponseLocked takes an answer: on the client, the id it asked for;
// on the server, the proof that the client receives at the address being
// validated — when the answer came from that very address.
func (s *session) onPathResponseLocked(r wire.PathResponse) {
	m := &s.path.mig
	if !s.server {
		if !m.wanted || m.hasID || m.reqTries == 0 || r.Token != m.reqToken {
			return // not the answer to our request (a challenge's is sent, not received)
		}
		if r.ID == ([seal.IDSize]byte{}) {
			m.refused = true // the server gives no id to this session
			return
		}
		m.id, m.hasID = r.ID, true
		s.keys.sealer.SetID(r.ID)
		return
	}
	if m.cand.IsValid() && m.rxFrom == m.cand && r.Token == m.token {
		m.validated = true
	}
}

// onRefusedLocked notes a MessageRefused from the peer: a server that
// refuses PathChallenge does not support migration.
func (s *session) onRefusedLocked(n wire.MessageRefused) {
	if !s.server && n.Type == wire.TypePathChallenge {
		s.path.mig.refused = true
	}
}

// --- Server side ---

// fromOtherAddressLocked handles an authenticated datagram of n bytes that
// came from an address that is not the session's: the old one within its
// grace is accepted as it is; any other starts (or feeds) a path
// validation, whose challenge is sealed into b. It reports whether the
// answer has come and the session must move.
func (s *session) fromOtherAddressLocked(from netip.AddrPort, n int, now time.Time, b *datagramBatch) bool {
	m := &s.path.mig
	if from == m.old && now.Before(m.oldUntil) {
		return false
	}
	if m.validated {
		return from == m.cand
	}
	if from != m.cand {
		if m.cand.IsValid() {
			s.add(pathValidationsFailed, 1) // a newer address replaces it
		}
		m.cand, m.candSince, m.rxBytes, m.txBytes, m.challengedAt = from, now, 0, 0, time.Time{}
		_, _ = rand.Read(m.token[:])
		s.add(pathValidationsStarted, 1)
	}
	m.rxBytes += n
	if m.challengedAt.IsZero() {
		s.challengeLocked(now, b)
	}
	return false
}

// challengeLocked seals a PathChallenge to the candidate address into b,
// unless it would take what is sent there past three times what came from
// there (it waits for more from the client, or for its timeout).
func (s *session) challengeLocked(now time.Time, b *datagramBatch) {
	m := &s.path.mig
	for i := range challengeCopies {
		if m.txBytes+challengeDatagramMax > amplificationFactor*m.rxBytes {
			if i == 0 {
				s.add(challengesHeld, 1)
			}
			return
		}
		var w [wire.PathChallengeSize]byte
		h := wire.Header{Type: wire.TypePathChallenge, Channel: wire.Unreliable}
		pk := &s.out.pk
		pk.begin(b, m.cand, now)
		pk.add(&h, wire.AppendPathChallenge(w[:0], &wire.PathChallenge{Token: m.token}))
		res := pk.finish()
		m.txBytes += res.bytes
		m.challengedAt = now
		s.countSent(res.datagrams, res.bytes, res.messages)
	}
}

// migrateServiceLocked runs migration's timers: a client's request for an
// id not answered; a server's challenge not answered (resent after twice
// the round trip, abandoned after pathValidationTimeout); the old address's
// grace.
func (s *session) migrateServiceLocked(now time.Time, b *datagramBatch) {
	m := &s.path.mig
	if !s.server {
		if m.wanted && !m.hasID && !m.refused && m.reqTries > 0 && now.Sub(m.reqAt) >= s.retryAfter() {
			s.requestIDLocked(now)
		}
		if !m.againAt.IsZero() && !now.Before(m.againAt) {
			var w [wire.PathResponseSize]byte
			s.queueUnreliable(wire.TypePathResponse, wire.AppendPathResponse(w[:0], &m.again))
			s.out.urgent = true
			m.againAt = time.Time{}
		}
		return
	}
	if m.old.IsValid() && !now.Before(m.oldUntil) {
		m.old = netip.AddrPort{}
	}
	if !m.cand.IsValid() || m.validated {
		return
	}
	if now.Sub(m.candSince) >= pathValidationTimeout {
		s.add(pathValidationsFailed, 1)
		m.cand = netip.AddrPort{}
		return
	}
	if now.Sub(m.challengedAt) >= s.retryAfter() {
		s.challengeLocked(now, b)
	}
}

// migrateDueLocked returns the earlier of d and the next time
// migrateServiceLocked has something to do.
func (s *session) migrateDueLocked(d time.Time) time.Time {
	m := &s.path.mig
	if !s.server {
		if m.wanted && !m.hasID && !m.refused && m.reqTries > 0 {
			d = minTime(d, m.reqAt.Add(s.retryAfter()))
		}
		if !m.againAt.IsZero() {
			d = minTime(d, m.againAt)
		}
		return d
	}
	if m.old.IsValid() {
		d = minTime(d, m.oldUntil)
	}
	if m.cand.IsValid() && !m.validated {
		d = minTime(d, m.candSince.Add(pathValidationTimeout))
		d = minTime(d, m.challengedAt.Add(s.retryAfter()))
	}
	return d
}

// retryAfter is the wait before a path message is sent again: twice the
// latest round trip, at least challengeRetryMin.
func (s *session) retryAfter() time.Duration {
	return max(2*s.path.q.ping, challengeRetryMin)
}

// movedLocked makes the validated candidate the session's address (the
// server's maps are changed by the caller, under its lock) and returns the
// address it left.
func (s *session) movedLocked(now time.Time) netip.AddrPort {
	m := &s.path.mig
	old := s.path.addr
	s.path.addr = m.cand
	m.moveTook = now.Sub(m.candSince)
	m.movePing = s.path.q.ping
	m.old, m.oldUntil = old, now.Add(oldPathGrace)
	m.cand, m.validated = netip.AddrPort{}, false
	s.path.proof = proofChallenge
	s.add(migrations, 1)
	s.out.urgent = true // what waited for the new path leaves now
	s.ccMovedLocked(old)
	return old
}

// supportsMigration reports whether a session may be given a connection id:
// a v4 session over UDP-like datagrams (a transport that proves addresses,
// WebTransport or WebSocket, names its sessions itself).
func (s *session) supportsMigration() bool {
	return s.version >= handshake.ProtocolVersion4 && s.path.proof != proofTransport
}

// handleSealedID routes a class-0x03 frame by its connection id: one map
// lookup, no cryptography for an id the server never gave.
func (s *Server) handleSealedID(d []byte, from netip.AddrPort, now time.Time) {
	id, ok := seal.FrameID(d)
	if !ok {
		s.ctr.drop(dropMalformed)
		return
	}
	s.mu.RLock()
	p := s.byConnID[id]
	s.mu.RUnlock()
	if p == nil {
		if s.closedSessions.late(from, d, now) {
			s.ctr.drop(dropLate)
			return
		}
		s.ctr.drop(dropSecurity)
		return
	}
	s.receiveOn(p, d, from, now)
}

// move makes p's validated address its own in the server's maps: the new
// address routes class-0x02 frames to it (unless another session holds
// that address: then only its id does), the old one no longer does.
func (s *Server) move(p *peer, now time.Time) {
	s.mu.Lock()
	p.mu.Lock()
	if p.state != slotConnected || !p.path.mig.validated {
		p.mu.Unlock()
		s.mu.Unlock()
		return
	}
	to := p.path.mig.cand
	old := p.movedLocked(now)
	if s.byAddr[old] == p {
		delete(s.byAddr, old)
		s.admittedBy.release(old.Addr())
	}
	if s.byAddr[to] == nil {
		s.byAddr[to] = p
		s.admittedBy.add(to.Addr())
	}
	took, ping, id := p.path.mig.moveTook, p.path.mig.movePing, p.id
	if !p.rxMarked {
		p.rxMarked = true
		s.rxTouched = append(s.rxTouched, p)
	}
	p.mu.Unlock()
	s.mu.Unlock()
	s.log.Debug("client moved to a new address", "client", id, "from", old, "to", to, "took", took, "rtt", ping)
	if s.cfg.OnMigrated != nil {
		s.cfg.OnMigrated(Migration{Client: id, From: old, To: to, Took: took, Ping: ping})
	}
}

// Migration describes one completed migration (ServerConfig.OnMigrated).
type Migration struct {
	Client   uint32
	From, To netip.AddrPort
	// Took is the time from the first authenticated frame from To to the
	// move (the path validation's round trip, and its retries).
	Took time.Duration
	// Ping is the session's latest heartbeat round trip at the move.
	Ping time.Duration
}

// registerIDLocked gives a new v4 session its connection id, unique among
// the server's (under s.mu).
func (s *Server) registerIDLocked(p *peer) {
	if !p.supportsMigration() {
		return
	}
	for {
		id := newConnectionID()
		if _, taken := s.byConnID[id]; !taken {
			p.path.mig.id, p.path.mig.hasID = id, true
			s.byConnID[id] = p
			return
		}
	}
}

func idsIssued(c *Counters) *atomicU64              { return &c.ConnectionIDsIssued }
func pathValidationsStarted(c *Counters) *atomicU64 { return &c.PathValidationsStarted }
func pathValidationsFailed(c *Counters) *atomicU64  { return &c.PathValidationsFailed }
func challengesHeld(c *Counters) *atomicU64         { return &c.PathChallengesHeld }
func migrations(c *Counters) *atomicU64             { return &c.Migrations }
