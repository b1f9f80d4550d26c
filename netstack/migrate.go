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
// Owner: the session; guarded by its mu. What only a validation in
// progress (the server's) or only a client needs is kept apart, so that
// the server's idle sessions carry neither.
type migration struct {
	// id is the session's connection id: the server's for the session
	// (made at admission for every v4 session, told only to a client that
	// asks); the client's once the server told it (hasID).
	id    [seal.IDSize]byte
	hasID bool
	told  bool // the id was told to the client (counted once)

	// Server: the address being validated (nil: none); the address before
	// the last move, whose frames are the session's until oldUntil.
	cand     *pathCandidate
	old      netip.AddrPort
	oldUntil time.Duration  // since origin (session.since)
	rxFrom   netip.AddrPort // the source of the datagram being received
	moveTook time.Duration  // the last move: first frame from the new address to the move
	movePing time.Duration  // the ping when it moved (for OnMigrated)

	// Client: its request for an id (nil on the server's sessions).
	req *idRequest
}

// pathCandidate is an address a server's session is validating: its
// challenge token, when the first authenticated frame came from it, when
// the challenge was last sent, and the bytes received from and sent to it.
type pathCandidate struct {
	addr         netip.AddrPort
	token        [8]byte
	since        time.Time
	challengedAt time.Time
	rxBytes      int
	txBytes      int
	validated    bool // the answer came: the server moves the session
}

// idRequest is a client's request for a connection id (a PathChallenge)
// in flight, and the copy of its last answer to a server's challenge.
type idRequest struct {
	wanted  bool // a v4 client that supports migration
	token   [8]byte
	at      time.Time
	tries   int
	refused bool // the server refused PathChallenge: it does not migrate
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
	m, r := &s.path.mig, s.path.mig.req
	if r == nil || !r.wanted || m.hasID || r.refused || r.tries >= idRequestTries || s.life.finishing {
		return
	}
	if r.tries == 0 {
		_, _ = rand.Read(r.token[:])
	}
	r.tries++
	r.at = now
	var w [wire.PathChallengeSize]byte
	s.queueUnreliable(wire.TypePathChallenge, wire.AppendPathChallenge(w[:0], &wire.PathChallenge{Token: r.token}))
	s.out.urgent = true
}

// onPathChallengeLocked answers a challenge: the server's, sent to the
// address it saw us at, from the client; the client's request for an id,
// on the server.
func (s *session) onPathChallengeLocked(c wire.PathChallenge) {
	m := &s.path.mig
	r := wire.PathResponse{Token: c.Token}
	if m.hasID {
		r.ID = m.id // a server's session without one answers zero: no migration
	}
	var w [wire.PathResponseSize]byte
	s.queueUnreliable(wire.TypePathResponse, wire.AppendPathResponse(w[:0], &r))
	s.out.urgent = true
	if q := m.req; q != nil && m.hasID && q.againAt.IsZero() {
		q.again, q.againAt = r, s.rel.rx0.now.Add(answerRepeat)
	}
	if s.server && m.hasID && !m.told {
		// Counted in the server's totals; the session's own count is
		// told itself (statsLocked): nearly every v4 client asks, and a
		// counter here would make every session's rarely moved ones.
		m.told = true
		if s.global != nil {
			s.global.ConnectionIDsIssued.Add(1)
		}
	}
}

// onPathResponseLocked takes an answer: on the client, the id it asked for;
// on the server, the proof that the client receives at the address being
// validated — when the answer came from that very address.
func (s *session) onPathResponseLocked(r wire.PathResponse) {
	m := &s.path.mig
	if !s.server {
		q := m.req
		if q == nil || !q.wanted || m.hasID || q.tries == 0 || r.Token != q.token {
			return // not the answer to our request (a challenge's is sent, not received)
		}
		if r.ID == ([seal.IDSize]byte{}) {
			q.refused = true // the server gives no id to this session
			return
		}
		m.id, m.hasID = r.ID, true
		s.keys.sealer.SetID(r.ID)
		return
	}
	if c := m.cand; c != nil && m.rxFrom == c.addr && r.Token == c.token {
		c.validated = true
	}
}

// onRefusedLocked notes a MessageRefused from the peer: a server that
// refuses PathChallenge does not support migration.
func (s *session) onRefusedLocked(n wire.MessageRefused) {
	if q := s.path.mig.req; q != nil && n.Type == wire.TypePathChallenge {
		q.refused = true
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
	if from == m.old && s.since(now) < m.oldUntil {
		return false
	}
	if m.cand != nil && m.cand.validated {
		return from == m.cand.addr
	}
	if m.cand == nil || from != m.cand.addr {
		if m.cand != nil {
			s.add(pathValidationsFailed, 1) // a newer address replaces it
		}
		m.cand = &pathCandidate{addr: from, since: now}
		_, _ = rand.Read(m.cand.token[:])
		s.add(pathValidationsStarted, 1)
	}
	m.cand.rxBytes += n
	if m.cand.challengedAt.IsZero() {
		s.challengeLocked(now, b)
	}
	return false
}

// challengeLocked seals a PathChallenge to the candidate address into b,
// unless it would take what is sent there past three times what came from
// there (it waits for more from the client, or for its timeout).
func (s *session) challengeLocked(now time.Time, b *datagramBatch) {
	c := s.path.mig.cand
	for i := range challengeCopies {
		if c.txBytes+challengeDatagramMax > amplificationFactor*c.rxBytes {
			if i == 0 {
				s.add(challengesHeld, 1)
			}
			return
		}
		var w [wire.PathChallengeSize]byte
		h := wire.Header{Type: wire.TypePathChallenge, Channel: wire.Unreliable}
		pk := &s.out.pk
		pk.begin(b, c.addr, now)
		pk.add(&h, wire.AppendPathChallenge(w[:0], &wire.PathChallenge{Token: c.token}))
		res := pk.finish()
		c.txBytes += res.bytes
		c.challengedAt = now
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
		q := m.req
		if q == nil {
			return
		}
		if q.wanted && !m.hasID && !q.refused && q.tries > 0 && now.Sub(q.at) >= s.retryAfter() {
			s.requestIDLocked(now)
		}
		if !q.againAt.IsZero() && !now.Before(q.againAt) {
			var w [wire.PathResponseSize]byte
			s.queueUnreliable(wire.TypePathResponse, wire.AppendPathResponse(w[:0], &q.again))
			s.out.urgent = true
			q.againAt = time.Time{}
		}
		return
	}
	if m.old.IsValid() && s.since(now) >= m.oldUntil {
		m.old = netip.AddrPort{}
	}
	c := m.cand
	if c == nil || c.validated {
		return
	}
	if now.Sub(c.since) >= pathValidationTimeout {
		s.add(pathValidationsFailed, 1)
		m.cand = nil
		return
	}
	if now.Sub(c.challengedAt) >= s.retryAfter() {
		s.challengeLocked(now, b)
	}
}

// migrateDueLocked returns the earlier of d and the next time
// migrateServiceLocked has something to do.
func (s *session) migrateDueLocked(d time.Time) time.Time {
	m := &s.path.mig
	if !s.server {
		q := m.req
		if q == nil {
			return d
		}
		if q.wanted && !m.hasID && !q.refused && q.tries > 0 {
			d = minTime(d, q.at.Add(s.retryAfter()))
		}
		if !q.againAt.IsZero() {
			d = minTime(d, q.againAt)
		}
		return d
	}
	if m.old.IsValid() {
		d = minTime(d, s.at(m.oldUntil))
	}
	if c := m.cand; c != nil && !c.validated {
		d = minTime(d, c.since.Add(pathValidationTimeout))
		d = minTime(d, c.challengedAt.Add(s.retryAfter()))
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
	s.path.addr = m.cand.addr
	m.moveTook = now.Sub(m.cand.since)
	m.movePing = s.path.q.ping
	m.old, m.oldUntil = old, s.since(now)+oldPathGrace
	m.cand = nil
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
	if c := p.path.mig.cand; p.state != slotConnected || c == nil || !c.validated {
		p.mu.Unlock()
		s.mu.Unlock()
		return
	}
	to := p.path.mig.cand.addr
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

func pathValidationsStarted(c *Counters) *atomicU64 { return &c.PathValidationsStarted }
func pathValidationsFailed(c *Counters) *atomicU64  { return &c.PathValidationsFailed }
func challengesHeld(c *Counters) *atomicU64         { return &c.PathChallengesHeld }
func migrations(c *Counters) *atomicU64             { return &c.Migrations }
