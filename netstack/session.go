package netstack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

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
// client keeps one for its server. All fields are guarded by mu; the receive
// goroutine, the service goroutine and API callers all take it briefly.
//
// Sending is two steps (docs/protocol.md §5.5): Send queues (an unreliable
// message in uq, a reliable one in the reliability engine), and a flush —
// the server's per-tick Flush, the end of a receive pass, the service loop,
// or a client's Flush — packs everything due into as few datagrams as the
// datagram size allows (v4; one message per datagram for v3), seals each
// into a datagramBatch, and the caller writes the batch after releasing the
// lock. No lock is held across a system call on those paths.
type session struct {
	mu      sync.Mutex
	tr      transport.Transport
	addr    netip.AddrPort
	proof   addrProof // how the peer proved addr (the server's sessions)
	id      uint32    // the client id: our SenderID on a client, the expected one on the server
	server  bool      // true on the server side of the channel
	version uint16    // protocol of the session: 3 (one message per datagram) or 4 (packed)
	origin  time.Time

	sealer *seal.Sealer
	opener *seal.Opener
	rel    *reliable.Endpoint

	th            [32]byte // handshake transcript hash: the channel-binding value
	lastAuth      time.Time
	nextHeartbeat time.Time
	heartbeats    [heartbeatSlots]heartbeatProbe
	hbNext        int
	hbInterval    time.Duration
	// finishing: a client's session before admission, which sends its
	// ClientFinished alone (docs/protocol.md §3.7): no heartbeat yet.
	finishing bool
	timeout   time.Duration

	// Send queue. uq holds the unreliable messages (and control messages:
	// heartbeats, notices) queued since the last flush, each as type (u16),
	// length (u32) and payload.
	uq           []byte
	uqMax        int
	unrel        uint32        // v4: Sequence of the next unreliable record
	datagramSize int           // v4: largest datagram sent
	flushDelay   time.Duration // service loop sends what waited this long
	queuedAt     time.Time     // when the oldest unflushed message was queued (zero: none)
	urgent       bool          // something must leave at the end of this receive pass
	sends        atomic.Uint64 // Send calls, to spot handler replies
	pk           packState
	emitFn       func(h *wire.Header, payload []byte) // s.emitRecord, bound once

	// Reliable messages of a module that is not loaded now (held.go);
	// holdFor 0 refuses them at once (a v3 client).
	held      []heldMessage
	heldBytes int
	holdFor   time.Duration

	// MessageRefused notices (v4): a token bucket and the refusals not told.
	noticeTokens float64
	noticeAt     time.Time
	suppressed   uint32

	q      linkQuality
	ctr    Counters
	global *Counters // the server's totals (nil on a client)

	open      []byte      // scratch for opened plaintext, reused per datagram
	rx        wire.Header // header of the message being received
	rx0       rxContext   // the receive call in progress
	checkedFn deliverFunc // s.deliverChecked, bound once

	// Graceful close (linger.go): no new sends, no new deliveries, the
	// Disconnect once everything is acknowledged or lingerUntil passes.
	lingering   bool
	lingerUntil time.Time
	closeLinger time.Duration // how long a graceful close may wait
	abandoned   int           // reliable messages still unacknowledged at the close

	closed bool
	reason wire.DisconnectReason
	detail string
}

type heartbeatProbe struct {
	token uint32
	sent  time.Time
}

// sessionKeys are what a finished handshake hands to the channel.
type sessionKeys struct {
	send, recv [32]byte
	th         [32]byte
}

func newSession(tr transport.Transport, addr netip.AddrPort, id uint32, server bool, version uint16, origin, now time.Time, keys sessionKeys, cfg *channelConfig) *session {
	rc := cfg.reliable
	if version >= handshake.ProtocolVersion4 {
		rc.MaxFragmentPayload = wire.MaxFragmentPayload(cfg.datagramSize)
	} else {
		rc.MaxFragmentPayload = 0
	}
	s := &session{
		tr: tr, addr: addr, id: id, server: server, version: version, origin: origin,
		sealer:       seal.NewSealer(keys.send, cfg.rotation),
		opener:       seal.NewOpener(keys.recv),
		rel:          reliable.New(rc, now),
		th:           keys.th,
		lastAuth:     now,
		hbInterval:   cfg.heartbeat,
		timeout:      cfg.timeout,
		uqMax:        cfg.maxQueuedUnreliable,
		unrel:        1,
		datagramSize: cfg.datagramSize,
		flushDelay:   cfg.flushDelay,
		holdFor:      cfg.holdFor,
		closeLinger:  cfg.closeLinger,
		finishing:    !server,
		noticeTokens: noticeBurst,
		noticeAt:     now,
		open:         make([]byte, 0, 2048),
	}
	s.emitFn = s.emitRecord
	s.checkedFn = s.deliverChecked
	s.rel.SetRefusalHook(s.engineRefused)
	s.nextHeartbeat = now.Add(cfg.heartbeat)
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

// add adds n to one counter of the peer and of the server's totals.
func (s *session) add(c func(*Counters) *atomicU64, n uint64) {
	c(&s.ctr).Add(n)
	if s.global != nil {
		c(s.global).Add(n)
	}
}

// sendLocked queues one message on channel ch; a flush sends it. A
// reliable message goes to the reliability engine (which fragments it in a
// v4 session); an unreliable one must fit one datagram.
func (s *session) sendLocked(typ wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	if s.closed || s.lingering {
		return ErrClosed
	}
	if !wire.InProtocol(s.version, typ) {
		s.add(notInProtocol, 1)
		return fmt.Errorf("%w: %s is a protocol v%d message and this peer speaks v%d", ErrNotInProtocol, typ, wire.IntroducedIn(typ), s.version)
	}
	switch {
	case ch.IsReliable():
		if err := s.rel.Send(typ, ch, payload, now); err != nil {
			return err
		}
	case len(payload) > wire.MaxPayload:
		return reliable.ErrPayloadTooLarge
	case s.version >= handshake.ProtocolVersion4 && len(payload) > wire.MaxUnreliablePayload(s.datagramSize, typ):
		return fmt.Errorf("%w: %s of %d bytes; at most %d bytes with datagram size %d (send it on a reliable channel, which fragments it, or make it smaller)",
			ErrUnreliableTooLarge, typ, len(payload), wire.MaxUnreliablePayload(s.datagramSize, typ), s.datagramSize)
	case len(s.uq)+6+len(payload) > s.uqMax:
		return ErrSendQueueFull
	default:
		s.queueUnreliable(typ, payload)
	}
	s.sends.Add(1)
	if s.queuedAt.IsZero() {
		s.queuedAt = now
	}
	return nil
}

func notInProtocol(c *Counters) *atomicU64 { return &c.NotInProtocol }

// queueUnreliable appends an unreliable message to uq.
func (s *session) queueUnreliable(typ wire.MessageType, payload []byte) {
	s.uq = binary.LittleEndian.AppendUint16(s.uq, uint16(typ))
	s.uq = binary.LittleEndian.AppendUint32(s.uq, uint32(len(payload)))
	s.uq = append(s.uq, payload...)
}

// serviceLocked runs the timers of one session — liveness, heartbeats,
// reliability — and flushes into b what is due: retransmissions and Acks,
// a heartbeat, and queued messages that waited flushDelay. It returns true
// when the session closed during this call.
func (s *session) serviceLocked(now time.Time, b *datagramBatch) bool {
	if s.closed {
		return false
	}
	if s.lingerDoneLocked(now) {
		return true
	}
	if now.Sub(s.lastAuth) >= s.timeout {
		s.closeLocked(wire.DisconnectTimeout, "nothing received for "+s.timeout.String(), now)
		return true
	}
	due := s.urgent
	if !now.Before(s.nextHeartbeat) && !s.finishing {
		s.queueHeartbeatLocked(now)
		s.nextHeartbeat = now.Add(s.hbInterval)
		due = true // a probe's send time is its RTT sample's start: it leaves now
	}
	if d := s.rel.NextDeadline(); !d.IsZero() && !now.Before(d) {
		due = true
	}
	if !s.queuedAt.IsZero() && now.Sub(s.queuedAt) >= s.flushDelay {
		due = true
	}
	if due {
		s.flushLocked(now, b)
	}
	return s.closed
}

func (s *session) queueHeartbeatLocked(now time.Time) {
	token := rand.Uint32() | 1 // nonzero
	s.heartbeats[s.hbNext] = heartbeatProbe{token: token, sent: now}
	s.hbNext = (s.hbNext + 1) % heartbeatSlots
	var w [8]byte
	s.queueUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(w[:0], &wire.Heartbeat{Token: token}))
}

// onHeartbeatLocked answers a probe in this receive pass and takes an RTT
// sample from an echo.
func (s *session) onHeartbeatLocked(hb wire.Heartbeat, now time.Time) {
	if hb.Token != 0 {
		var w [8]byte
		s.queueUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(w[:0], &wire.Heartbeat{Echo: hb.Token}))
		s.urgent = true
	}
	if hb.Echo == 0 {
		return
	}
	for i := range s.heartbeats {
		if p := &s.heartbeats[i]; p.token == hb.Echo {
			s.q.addPing(now.Sub(p.sent))
			p.token = 0
			return
		}
	}
}

// closeLocked records the first close reason and, when the channel is still
// usable, tells the peer with a Disconnect sealed three times (§8). Those
// three datagrams are written at once (a rare path: the end of a session).
func (s *session) closeLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	if s.closed {
		return
	}
	timedOut := reason == wire.DisconnectTimeout
	reason, detail = s.closeReason(reason, detail)
	s.closed, s.reason, s.detail = true, reason, detail
	s.abandoned = s.rel.Unsettled()
	if !timedOut { // a timed-out peer is gone; nothing to tell
		s.sendDisconnectLocked(reason, detail, now)
	}
	s.releaseLocked()
}

// peerClosedLocked records a Disconnect received from the peer: its reason is
// the close reason (unless one was already recorded) and nothing is sent back.
func (s *session) peerClosedLocked(reason wire.DisconnectReason, detail string) {
	if s.closed {
		return
	}
	reason, detail = s.closeReason(reason, detail)
	s.closed, s.reason, s.detail = true, reason, detail
	s.releaseLocked()
}

// releaseLocked returns pooled buffers and forgets queued messages.
func (s *session) releaseLocked() {
	s.rel.Close()
	s.uq, s.queuedAt, s.urgent = nil, time.Time{}, false
	s.held, s.heldBytes = nil, 0
}

func (s *session) sendDisconnectLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	var buf [3 + 256]byte
	if len(detail) > 256 {
		detail = detail[:256]
	}
	if s.version < handshake.ProtocolVersion4 && reason > wire.LastV3DisconnectReason {
		reason = wire.DisconnectUnknown // v3 defines 0..11; the detail says what happened
	}
	p := wire.AppendDisconnect(buf[:0], &wire.Disconnect{Reason: uint8(reason), Detail: detail})
	h := wire.Header{Type: wire.TypeDisconnect, Channel: wire.Unreliable}
	var plain []byte
	if s.version >= handshake.ProtocolVersion4 {
		h.Sequence = s.unrel
		s.unrel++
		plain = wire.AppendRecord(wire.AppendDatagramBase(make([]byte, 0, 300), h.Sequence), &h, p)
	} else {
		h.Sequence = s.rel.NextUnreliableSequence()
		if !s.server {
			h.SenderID = s.id
		}
		h.Timestamp = s.timestamp(now)
		plain = wire.AppendPacket(make([]byte, 0, 300), &h, p)
	}
	frame := make([]byte, 0, len(plain)+seal.Overhead)
	for range disconnectCopies {
		f, err := s.sealer.SealFinal(frame[:0], plain)
		if err != nil {
			return
		}
		if _, err := s.tr.WriteBatch([]transport.Message{{Buf: f, N: len(f), Addr: s.addr}}); err == nil {
			s.countSent(len(f), 1)
		}
	}
}

// countSent counts one datagram of n bytes carrying msgs messages.
func (s *session) countSent(n, msgs int) {
	s.ctr.PacketsSent.Add(1)
	s.ctr.BytesSent.Add(uint64(n))
	s.ctr.MessagesSent.Add(uint64(msgs))
	if s.global != nil {
		s.global.PacketsSent.Add(1)
		s.global.BytesSent.Add(uint64(n))
		s.global.MessagesSent.Add(uint64(msgs))
	}
}

// statsLocked returns this session's §13 statistics.
func (s *session) statsLocked() Stats {
	st := s.ctr.snapshot()
	st.Ping, st.Jitter, st.PacketLoss = s.q.ping, s.q.jitter, s.q.loss
	st.BandwidthUp, st.BandwidthDown = s.q.lastUp, s.q.lastDown
	rs := s.rel.Stats()
	st.RTO, st.ReassemblyBytes, st.ReassemblyFull = rs.RTO, rs.ReassemblyBytes, rs.ReassemblyFull
	return st
}

// nextUnreliable returns the Sequence of the next v4 unreliable record, or
// false once 2^32−1 have been used (the session must be re-established; at
// 1,000 a second that is 49 days).
func (s *session) nextUnreliable() (uint32, bool) {
	if s.unrel == math.MaxUint32 {
		return 0, false
	}
	v := s.unrel
	s.unrel++
	return v, true
}
