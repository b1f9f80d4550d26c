package netstack

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/congestion"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Timing defaults of protocol-v3.md §5.5 and §8, and of the v4 send queues
// (docs/protocol.md §5.5).
const (
	DefaultHeartbeatInterval = time.Second
	DefaultTimeout           = 10 * time.Second
	DefaultSecuringTimeout   = 5 * time.Second
	// DefaultFlushDelay is the longest a queued message waits for an explicit
	// Flush before the service loop sends it.
	DefaultFlushDelay = 10 * time.Millisecond
	// DefaultMaxQueuedUnreliable bounds the unreliable bytes queued per peer
	// between flushes.
	DefaultMaxQueuedUnreliable = 1 << 20
	// disconnectCopies is how many times a Disconnect is sealed and sent (§8).
	disconnectCopies = 3
	// heartbeatSlots bounds how many unanswered heartbeat tokens are remembered.
	heartbeatSlots = 4
	// Notices (MessageRefused) per peer: a burst of noticeBurst, then one
	// per noticeEvery.
	noticeBurst = 10
	noticeEvery = 100 * time.Millisecond
)

// Errors of Send.
var (
	// ErrClosed is returned when sending on a closed session or client.
	ErrClosed = errors.New("netstack: connection closed")
	// ErrUnreliableTooLarge: an unreliable message must fit one datagram (it
	// is never fragmented). Send it on a reliable channel, which fragments,
	// or make it smaller.
	ErrUnreliableTooLarge = errors.New("netstack: unreliable message does not fit one datagram")
	// ErrUnconfirmed: a graceful close ended its linger before the peer
	// acknowledged every reliable message sent before it.
	ErrUnconfirmed = errors.New("netstack: the server did not confirm everything sent before the close")
	// ErrSendQueueFull: the peer's queue of unreliable messages waiting for a
	// flush is full (a flush is overdue, or the sender outruns it).
	ErrSendQueueFull = errors.New("netstack: send queue full; flush more often or send less")
	// ErrNotInProtocol: the message type is not defined by the protocol
	// version the peer negotiated (a v4-only type for a v3 peer,
	// wire.InProtocol); it is never sent. Counted (NotInProtocol).
	ErrNotInProtocol = errors.New("netstack: message type not in the peer's protocol version")
)

// session is one end of a sealed channel: the server keeps one per slot, a
// client keeps one for its server. It is a few parts, each with one concern
// (as a wireguard-go peer groups its endpoint, timers and queues): keys and
// replay; reliability and reassembly; the send queue and its packer; the
// path to the peer; the lifecycle. Migration, resumption and congestion
// control extend the path and the lifecycle, not the session.
//
// Lock rule: the fields above mu are set before the session is shared and
// never change, so they are read without it; ctr is atomic; every part is guarded by mu, which the receive
// goroutine, the service goroutine and API callers each take briefly and
// never hold across a system call on a path the game thread waits for.
//
// Sending is two steps (docs/protocol.md §5.5): Send queues (an unreliable
// message in the send queue, a reliable one in the reliability engine), and
// a flush — the server's per-tick Flush, the end of a receive pass, the
// service loop, or a client's Flush — packs everything due into as few
// datagrams as the datagram size allows (v4; one message per datagram for
// v3), seals each into a datagramBatch, and the caller writes the batch
// after releasing the lock.
type session struct {
	tr      transport.Transport
	id      uint32 // the client id: our SenderID on a client, the expected one on the server
	server  bool   // true on the server side of the channel
	version uint16 // protocol of the session: 3 (one message per datagram) or 4 (packed)
	origin  time.Time
	global  *Counters          // the server's totals (nil on a client)
	hist    *sessionHistograms // the server's session histograms (nil on a client)
	ctr     peerCounters
	// svcDue is when the server's service loop next has work here, as an
	// offset from origin (nextServiceLocked); 0: at its next pass. Anything
	// that may make work due sooner stores 0 (wakeService), under mu, so
	// that a loop over many idle sessions only locks the few that are due.
	svcDue atomic.Int64
	// svcAt is where svcDue is kept: &svcDue, or the session's entry in
	// the server's dueTable (duetable.go) while it is admitted.
	svcAt atomic.Pointer[atomic.Int64]

	mu   sync.Mutex
	keys keyState
	rel  reliability
	out  sendQueue
	path peerPath
	life lifecycle
}

// keyState is a session's keys and replay protection: the sealer with its
// rotation schedule, the opener with its replay window, and the channel
// binding. Owner: the session; guarded by its mu — whoever flushes seals,
// the receive goroutine opens. th never changes and is read without the
// lock. When the server frees a slot its closedTable (closed.go) takes the
// opener and uses it alone.
type keyState struct {
	sealer *seal.Sealer
	opener *seal.Opener
	th     [32]byte // handshake transcript hash: the channel-binding value
	open   []byte   // scratch for opened plaintext, reused per datagram; grows on demand
}

// reliability is a session's reliability and reassembly, and what becomes
// of an authenticated message: the engine (acknowledgements,
// retransmission, ordering, fragments), the reliable messages held for a
// module that is not loaded (held.go), the budget of MessageRefused
// notices, and the receive call in progress (recv.go). Owner: the session;
// guarded by its mu — the receive goroutine delivers, the service goroutine
// releases held messages and runs the engine's timers, every flush polls
// the engine for what is due.
type reliability struct {
	engine *reliable.Endpoint

	// Reliable messages of a module that is not loaded now; holdFor 0
	// refuses them at once (a v3 client).
	held      []heldMessage
	heldBytes int
	holdFor   time.Duration

	// MessageRefused notices (v4): a token bucket and the refusals not told.
	noticeTokens float64
	noticeAt     time.Duration // since origin (session.since)
	suppressed   uint32

	rx wire.Header // header of the message being received
	// deliverRefusals: the peer's MessageRefused notices are delivered
	// too (ClientConfig.DeliverRefusals), besides being counted. (Here,
	// where the fields before it leave room, not beside holdFor.)
	deliverRefusals bool
	rx0             rxContext   // the receive call in progress
	checkedFn       deliverFunc // s.deliverChecked, bound once
}

// sendQueue is what waits for a flush and the packer that sends it
// (sendqueue.go, packer.go). Owner: the session; guarded by its mu, except
// sends, an atomic that the server's receive goroutine reads without the
// lock to spot a handler's reply.
type sendQueue struct {
	// uq holds the unreliable messages (and control messages: heartbeats,
	// notices) queued since the last flush, each as type (u16), length
	// (u32) and payload; at most uqMax bytes.
	uq         []byte
	uqMax      int
	flushDelay time.Duration // the service loop sends what waited this long
	queuedAt   time.Time     // when the oldest unflushed message was queued (zero: none)
	urgent     bool          // something must leave at the end of this receive pass
	sends      atomic.Uint64 // Send calls, to spot handler replies
	pk         packer
}

// peerPath is the network path to the peer: its address and how it was
// proved, liveness and heartbeats, and the estimates of RTT, loss and
// bandwidth (path.go). Migration and congestion control extend it. Owner:
// the session; guarded by its mu. addr and proof change only when a
// server's session migrates (migrate.go), under both the server's mu and
// the session's: the server's maps read addr under their own lock.
type peerPath struct {
	addr   netip.AddrPort
	proof  addrProof // how the peer proved addr (the server's sessions)
	hbNext uint8     // the heartbeats slot of the next probe

	// The path's times are kept since the session's origin (session.since),
	// 8 bytes each where a time.Time takes 24: they are in every
	// connected player's session.
	lastAuth      time.Duration // when a datagram last authenticated
	timeout       time.Duration // closes the session after that long without one
	nextHeartbeat time.Duration
	hbInterval    time.Duration
	heartbeats    [heartbeatSlots]heartbeatProbe // unanswered probes: RTT samples

	q linkQuality

	// Connection migration (migrate.go): the connection id, the address
	// being validated and the one left. Kept apart from the fields above so
	// that congestion control's can be added beside them.
	mig migration

	// Congestion control (pacing.go): the estimator, the pacer and the
	// queued state. Only a server's v4 session paces; every session's
	// estimator takes its heartbeat round trips.
	cc pathCongestion
}

// lifecycle is where the session stands between its handshake and its end:
// a client's finishing phase, the graceful close's linger (linger.go), and
// the close with its reason. Owner: the session; guarded by its mu.
type lifecycle struct {
	// finishing: a client's session before admission, which sends its
	// ClientFinished alone (docs/protocol.md §3.7): no heartbeat yet.
	finishing bool

	// Graceful close: no new sends, no new deliveries, the Disconnect once
	// everything is acknowledged or lingerUntil passes.
	lingering   bool
	closed      bool
	reason      wire.DisconnectReason
	lingerUntil time.Duration // since origin (session.since)
	closeLinger time.Duration // how long a graceful close may wait
	abandoned   int           // reliable messages still unacknowledged at the close

	detail string // the close's reason, with closed and reason above

	// Resumption (resume_session.go): a holdable session that times out is
	// held, not closed, so that a new handshake can resume it.
	seat seatHold
}

type heartbeatProbe struct {
	token uint32
	sent  time.Duration // since origin (session.since)
}

// sessionKeys are what a finished handshake hands to the channel.
type sessionKeys struct {
	send, recv [32]byte
	th         [32]byte
}

func newSession(tr transport.Transport, addr netip.AddrPort, id uint32, server bool, version uint16, origin, now time.Time, keys sessionKeys, cfg *channelConfig) *session {
	rc := cfg.reliable
	// v4's sender retries until the connection timeout; v3 keeps its
	// retransmission count (docs/protocol.md §5.4).
	rc.RetryUntilTimeout = version >= handshake.ProtocolVersion4
	if version >= handshake.ProtocolVersion4 {
		// A migrating client's frames carry a connection id: room for it.
		rc.MaxFragmentPayload = wire.MaxFragmentPayload(cfg.datagramSize - cfg.idRoom)
	} else {
		rc.MaxFragmentPayload = 0
	}
	s := &session{tr: tr, id: id, server: server, version: version, origin: origin}
	s.svcAt.Store(&s.svcDue)
	// open starts empty and grows to the largest datagram received: an idle
	// session's heartbeats keep it a few dozen bytes, not a full datagram.
	s.keys = keyState{sealer: seal.NewSealer(keys.send, cfg.rotation), opener: seal.NewOpener(keys.recv), th: keys.th}
	s.rel.engine = reliable.New(rc, now)
	s.rel.holdFor = cfg.holdFor
	s.rel.deliverRefusals = cfg.deliverRefusals
	s.rel.noticeTokens, s.rel.noticeAt = noticeBurst, now.Sub(origin)
	s.rel.checkedFn = s.deliverChecked
	s.rel.engine.SetRefusalHook(s.engineRefused)
	s.out.uqMax, s.out.flushDelay = cfg.maxQueuedUnreliable, cfg.flushDelay
	pc := packerConfig{sealer: s.keys.sealer, size: cfg.datagramSize, version: version, origin: origin}
	if version < handshake.ProtocolVersion4 {
		pc.v3seq = s.rel.engine.NextUnreliableSequence
		if !server {
			pc.senderID = id
		}
	}
	s.out.pk.init(pc)
	s.path = peerPath{addr: addr, lastAuth: now.Sub(origin), timeout: cfg.timeout, hbInterval: cfg.heartbeat, nextHeartbeat: now.Sub(origin) + cfg.heartbeat}
	s.life = lifecycle{finishing: !server, closeLinger: cfg.closeLinger}
	s.path.cc.est.Init(congestion.Config{})
	if server && version >= handshake.ProtocolVersion4 {
		s.initCongestion()
	}
	return s
}

// channelConfig holds the per-channel settings shared by server and client.
type channelConfig struct {
	rotation            seal.RotationConfig
	reliable            reliable.Config
	heartbeat           time.Duration
	timeout             time.Duration
	datagramSize        int
	flushDelay          time.Duration
	maxQueuedUnreliable int
	holdFor             time.Duration // held.go: the server's not-loaded hold, a v4 client's unannounced one
	closeLinger         time.Duration // linger.go: the graceful close's wait (0: none)
	deliverRefusals     bool          // a client's MessageRefused notices also go to Receive
	idRoom              int           // header bytes a connection id may add (a client that migrates)
}

// fit completes a channelConfig taken from a populated ServerConfig or
// ClientConfig for a transport of datagrams of at most maxDatagram bytes:
// the session packs into min(datagram size, maxDatagram); a negative hold
// or linger means none; the reliability engine's connection timeout is the
// session's unless set.
func (c *channelConfig) fit(maxDatagram int) {
	c.datagramSize = min(c.datagramSize, maxDatagram)
	c.holdFor = max(c.holdFor, 0)
	c.closeLinger = max(c.closeLinger, 0)
	if c.reliable.ConnectionTimeout <= 0 {
		c.reliable.ConnectionTimeout = c.timeout
	}
	if c.maxQueuedUnreliable <= 0 {
		c.maxQueuedUnreliable = DefaultMaxQueuedUnreliable
	}
}

// checkDatagramSize validates a configured datagram size (0 is the default).
func checkDatagramSize(n int) error {
	if n != 0 && (n < wire.MinDatagramSize || n > wire.MaxDatagram) {
		return fmt.Errorf("netstack: datagram size %d: choose %d..%d bytes of UDP payload (1200 crosses every path)",
			n, wire.MinDatagramSize, wire.MaxDatagram)
	}
	return nil
}

// minTransportDatagram is the smallest datagram a transport must carry: the
// datagram every IPv4 host must accept (RFC 791). A session packs into
// datagrams no larger than its transport carries, and below this nearly
// every reliable message would be fragmented.
const minTransportDatagram = 576

// checkTransport refuses a given transport that carries too small datagrams.
func checkTransport(tr transport.Transport) error {
	if tr != nil && tr.MaxDatagram() < minTransportDatagram {
		return fmt.Errorf("netstack: the transport carries datagrams of at most %d bytes; at least %d are needed", tr.MaxDatagram(), minTransportDatagram)
	}
	return nil
}

// since is now as the session keeps its times: the time since its origin.
// (A time.Duration is 8 bytes, a time.Time 24; the monotonic clock's
// reading is origin's.)
func (s *session) since(now time.Time) time.Duration { return now.Sub(s.origin) }

// at is the time that since returned d for.
func (s *session) at(d time.Duration) time.Time { return s.origin.Add(d) }

func (s *session) timestamp(now time.Time) float32 {
	return float32(now.Sub(s.origin).Seconds())
}

// countDrop counts a dropped datagram on this peer and on the server's totals.
func (s *session) countDrop(k dropKind) {
	s.ctr.drop(k)
	if s.global != nil {
		s.global.drop(k)
	}
}

// atomicU64 names the counters' type for the accessor functions of add.
type atomicU64 = atomic.Uint64

// add adds n to one of the peer's rarely moved counters and to the
// server's totals (the inline ones, peerCounters, are added to directly).
func (s *session) add(c func(*Counters) *atomicU64, n uint64) {
	c(s.ctr.more()).Add(n)
	if s.global != nil {
		c(s.global).Add(n)
	}
}

// serviceLocked runs the timers of one session — liveness, heartbeats,
// reliability — and flushes into b what is due: retransmissions and Acks,
// a heartbeat, and queued messages that waited flushDelay. It returns true
// when the session closed during this call.
func (s *session) serviceLocked(now time.Time, b *datagramBatch) bool {
	if s.life.closed || s.life.seat.held {
		return false
	}
	if s.lingerDoneLocked(now) {
		return true
	}
	if s.since(now)-s.path.lastAuth >= s.path.timeout {
		s.closeLocked(wire.DisconnectTimeout, "nothing received for "+s.path.timeout.String(), now)
		return s.life.closed // a held seat is not closed (resume_session.go)
	}
	s.migrateServiceLocked(now, b)
	due := s.out.urgent
	if s.since(now) >= s.path.nextHeartbeat && !s.life.finishing {
		s.queueHeartbeatLocked(now)
		s.path.nextHeartbeat = s.since(now) + s.path.hbInterval
		due = true // a probe's send time is its RTT sample's start: it leaves now
	}
	if d := s.rel.engine.NextDeadline(); !d.IsZero() && !now.Before(d) {
		due = true
	}
	if !s.out.queuedAt.IsZero() && now.Sub(s.out.queuedAt) >= s.out.flushDelay {
		due = true
	}
	if due {
		s.flushLocked(now, b)
	}
	s.ccSampleLocked(now)
	return s.life.closed
}

// wakeService makes the server's next service pass look at the session:
// something was queued or received, or a close began.
func (s *session) wakeService() {
	// Called per message sent: after the first, the entry is 0 already, and
	// a load is cheaper than an atomic store. (Entries change only under the
	// session's lock, which the caller holds.)
	if at := s.svcAt.Load(); at.Load() != 0 {
		at.Store(0)
	}
}

// nextServiceLocked returns, as an offset from origin, the earliest time at
// which serviceLocked may have something to do: the liveness timeout, the
// next heartbeat, the reliability engine's deadline, the flush of queued
// messages (entity state the pacer holds among them), the end of a linger,
// migration's timers, congestion control's sample; 0 when something is due
// at once. Whatever serviceLocked does on a timer must be here.
func (s *session) nextServiceLocked() int64 {
	if s.out.urgent || s.life.closed {
		return 0
	}
	d := s.at(s.path.lastAuth + s.path.timeout)
	if !s.life.finishing {
		d = minTime(d, s.at(s.path.nextHeartbeat))
	}
	if e := s.rel.engine.NextDeadline(); !e.IsZero() {
		d = minTime(d, e)
	}
	if !s.out.queuedAt.IsZero() {
		d = minTime(d, s.out.queuedAt.Add(s.out.flushDelay))
	}
	if s.life.lingering {
		d = minTime(d, s.at(s.life.lingerUntil))
	}
	d = s.migrateDueLocked(d)
	if cc := &s.path.cc; cc.on && s.hist != nil {
		d = minTime(d, cc.sampledAt.Add(time.Second)) // ccSampleLocked's once a second
	}
	return max(int64(d.Sub(s.origin)), 1)
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// countSent counts datagrams sealed and written: their bytes and the
// messages they carry, on the peer and on the server's totals.
func (s *session) countSent(datagrams, bytes, msgs int) {
	s.ctr.PacketsSent.Add(uint64(datagrams))
	s.ctr.BytesSent.Add(uint64(bytes))
	s.ctr.MessagesSent.Add(uint64(msgs))
	if s.global != nil {
		s.global.PacketsSent.Add(uint64(datagrams))
		s.global.BytesSent.Add(uint64(bytes))
		s.global.MessagesSent.Add(uint64(msgs))
	}
}

// statsLocked returns this session's §13 statistics.
func (s *session) statsLocked() Stats {
	st := s.ctr.snapshot()
	st.Ping, st.Jitter, st.PacketLoss = s.path.q.ping, s.path.q.jitter, s.path.q.loss
	st.BandwidthUp, st.BandwidthDown = s.path.q.lastUp, s.path.q.lastDown
	s.ccStatsLocked(&st, time.Now())
	if s.server && s.path.mig.told {
		st.ConnectionIDsIssued = 1
	}
	rs := s.rel.engine.Stats()
	st.RTO, st.ReassemblyBytes, st.ReassemblyFull = rs.RTO, rs.ReassemblyBytes, rs.ReassemblyFull
	return st
}
