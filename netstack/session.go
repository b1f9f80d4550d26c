package netstack

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Timing defaults of protocol-v3.md §5.5 and §8.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultTimeout           = 10 * time.Second
	DefaultSecuringTimeout   = 5 * time.Second
	// disconnectCopies is how many times a Disconnect is sealed and sent (§8).
	disconnectCopies = 3
	// heartbeatSlots bounds how many unanswered heartbeat tokens are remembered.
	heartbeatSlots = 4
)

// ErrClosed is returned when sending on a closed session or client.
var ErrClosed = errors.New("netstack: connection closed")

// session is one end of a sealed channel: the server keeps one per slot, a
// client keeps one for its server. All fields are guarded by mu; the receive
// goroutine, the service goroutine and API callers all take it briefly.
type session struct {
	mu     sync.Mutex
	conn   *packetConn
	addr   netip.AddrPort
	id     uint32 // the client id: our SenderID on a client, the expected one on the server
	server bool   // true on the server side of the channel
	origin time.Time

	sealer *seal.Sealer
	opener *seal.Opener
	rel    *reliable.Endpoint

	th            [32]byte // handshake transcript hash: the channel-binding value
	lastAuth      time.Time
	nextHeartbeat time.Time
	heartbeats    [heartbeatSlots]heartbeatProbe
	hbNext        int
	hbInterval    time.Duration
	timeout       time.Duration

	q      linkQuality
	ctr    Counters
	global *Counters // the server's totals (nil on a client)

	pkt, frame, open []byte      // scratch buffers, reused per packet
	rx               wire.Header // header of the packet being received

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

func newSession(conn *packetConn, addr netip.AddrPort, id uint32, server bool, origin, now time.Time, keys sessionKeys, cfg *channelConfig) *session {
	s := &session{
		conn: conn, addr: addr, id: id, server: server, origin: origin,
		sealer:     seal.NewSealer(keys.send, cfg.rotation),
		opener:     seal.NewOpener(keys.recv),
		rel:        reliable.New(cfg.reliable, now),
		th:         keys.th,
		lastAuth:   now,
		hbInterval: cfg.heartbeat,
		timeout:    cfg.timeout,
		pkt:        make([]byte, 0, wire.MaxDatagram),
		frame:      make([]byte, 0, wire.MaxDatagram),
		open:       make([]byte, 0, wire.MaxDatagram),
	}
	s.nextHeartbeat = now.Add(cfg.heartbeat)
	return s
}

// channelConfig holds the per-channel settings shared by server and client.
type channelConfig struct {
	rotation  seal.RotationConfig
	reliable  reliable.Config
	heartbeat time.Duration
	timeout   time.Duration
}

func (c *channelConfig) populate() {
	if c.heartbeat <= 0 {
		c.heartbeat = DefaultHeartbeatInterval
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.reliable.ConnectionTimeout <= 0 {
		c.reliable.ConnectionTimeout = c.timeout
	}
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

// writeLocked builds, seals and writes one packet. The header's SenderID and
// Timestamp are filled here.
func (s *session) writeLocked(h *wire.Header, payload []byte, now time.Time) error {
	if s.closed {
		return ErrClosed
	}
	if s.server {
		h.SenderID = 0
	} else {
		h.SenderID = s.id
	}
	h.Timestamp = s.timestamp(now)
	s.pkt = wire.AppendPacket(s.pkt[:0], h, payload)
	frame, err := s.sealer.Seal(s.frame[:0], s.pkt, now)
	if err != nil {
		if errors.Is(err, seal.ErrKeyExhausted) {
			s.closeLocked(wire.DisconnectKeyExhausted, "session keys exhausted; reconnect", now)
		}
		return err
	}
	s.frame = frame
	return s.sendFrameLocked(frame, now)
}

func (s *session) sendFrameLocked(frame []byte, now time.Time) error {
	if err := s.conn.write(frame, s.addr); err != nil {
		return err
	}
	s.ctr.PacketsSent.Add(1)
	s.ctr.BytesSent.Add(uint64(len(frame)))
	if s.global != nil {
		s.global.PacketsSent.Add(1)
		s.global.BytesSent.Add(uint64(len(frame)))
	}
	s.q.traffic(now, len(frame), 0)
	return nil
}

// sendLocked sends one message on channel ch. Reliable messages are queued in
// the reliability engine and flushed at once as far as the in-flight window allows.
func (s *session) sendLocked(typ wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	if s.closed {
		return ErrClosed
	}
	if ch == wire.Unreliable {
		h := wire.Header{Type: typ, Channel: ch, Sequence: s.rel.NextUnreliableSequence()}
		return s.writeLocked(&h, payload, now)
	}
	if err := s.rel.Send(typ, ch, payload, now); err != nil {
		return err
	}
	return s.flushLocked(now)
}

// flushLocked emits what the reliability engine has due (new packets,
// retransmissions, acks). A delivery failure closes the session.
func (s *session) flushLocked(now time.Time) error {
	var werr error
	before := s.rel.Retransmissions()
	err := s.rel.Poll(now, func(h *wire.Header, payload []byte) {
		if e := s.writeLocked(h, payload, now); e != nil && werr == nil {
			werr = e
		}
	})
	if n := s.rel.Retransmissions() - before; n > 0 {
		s.ctr.Retransmissions.Add(n)
		if s.global != nil {
			s.global.Retransmissions.Add(n)
		}
	}
	if err != nil {
		s.closeLocked(wire.DisconnectReliableDeliveryFailed, "reliable message not acknowledged", now)
		return err
	}
	return werr
}

// serviceLocked runs the timers of one session: reliability, heartbeats and
// liveness. It returns true when the session closed during this call.
func (s *session) serviceLocked(now time.Time) bool {
	if s.closed {
		return false
	}
	if now.Sub(s.lastAuth) >= s.timeout {
		s.closeLocked(wire.DisconnectTimeout, "nothing received for "+s.timeout.String(), now)
		return true
	}
	if !now.Before(s.nextHeartbeat) {
		s.sendHeartbeatLocked(now)
		s.nextHeartbeat = now.Add(s.hbInterval)
	}
	s.flushLocked(now)
	return s.closed
}

func (s *session) sendHeartbeatLocked(now time.Time) {
	token := rand.Uint32() | 1 // nonzero
	s.heartbeats[s.hbNext] = heartbeatProbe{token: token, sent: now}
	s.hbNext = (s.hbNext + 1) % heartbeatSlots
	var w [8]byte
	p := wire.AppendHeartbeat(w[:0], &wire.Heartbeat{Token: token})
	h := wire.Header{Type: wire.TypeHeartbeat, Channel: wire.Unreliable, Sequence: s.rel.NextUnreliableSequence()}
	s.writeLocked(&h, p, now)
}

// onHeartbeatLocked answers a probe at once and takes an RTT sample from an echo.
func (s *session) onHeartbeatLocked(hb wire.Heartbeat, now time.Time) {
	if hb.Token != 0 {
		var w [8]byte
		p := wire.AppendHeartbeat(w[:0], &wire.Heartbeat{Echo: hb.Token})
		h := wire.Header{Type: wire.TypeHeartbeat, Channel: wire.Unreliable, Sequence: s.rel.NextUnreliableSequence()}
		s.writeLocked(&h, p, now)
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
// usable, tells the peer with a Disconnect sealed three times (§8).
func (s *session) closeLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	if s.closed {
		return
	}
	s.closed, s.reason, s.detail = true, reason, detail
	if reason != wire.DisconnectTimeout { // a timed-out peer is gone; nothing to tell
		s.sendDisconnectLocked(reason, detail, now)
	}
	s.rel.Close() // returns pooled buffers
}

// peerClosedLocked records a Disconnect received from the peer: its reason is
// the close reason (unless one was already recorded) and nothing is sent back.
func (s *session) peerClosedLocked(reason wire.DisconnectReason, detail string) {
	if s.closed {
		return
	}
	s.closed, s.reason, s.detail = true, reason, detail
	s.rel.Close()
}

func (s *session) sendDisconnectLocked(reason wire.DisconnectReason, detail string, now time.Time) {
	var buf [3 + 256]byte
	if len(detail) > 256 {
		detail = detail[:256]
	}
	p := wire.AppendDisconnect(buf[:0], &wire.Disconnect{Reason: uint8(reason), Detail: detail})
	h := wire.Header{Type: wire.TypeDisconnect, Channel: wire.Unreliable, Sequence: s.rel.NextUnreliableSequence()}
	if s.server {
		h.SenderID = 0
	} else {
		h.SenderID = s.id
	}
	h.Timestamp = s.timestamp(now)
	s.pkt = wire.AppendPacket(s.pkt[:0], &h, p)
	for range disconnectCopies {
		frame, err := s.sealer.SealFinal(s.frame[:0], s.pkt)
		if err != nil {
			return
		}
		s.frame = frame
		s.sendFrameLocked(frame, now)
	}
}

// stats returns this session's §13 statistics.
func (s *session) statsLocked() Stats {
	st := s.ctr.snapshot()
	st.Ping, st.Jitter, st.PacketLoss = s.q.ping, s.q.jitter, s.q.loss
	st.BandwidthUp, st.BandwidthDown = s.q.lastUp, s.q.lastDown
	st.RTO = s.rel.Stats().RTO
	return st
}

// deliverFunc receives a validated message; payload is only valid during the call.
type deliverFunc func(h *wire.Header, payload []byte)

// openLocked authenticates a sealed datagram and decodes its packet into the
// session's receive header (kept in the session so that passing it on by
// pointer allocates nothing). It returns nil when the datagram was dropped;
// the drop is counted.
func (s *session) openLocked(datagram []byte, now time.Time) (*wire.Header, []byte) {
	pkt, err := s.opener.Open(s.open[:0], datagram, now)
	if err != nil {
		s.countDrop(dropSecurity)
		return nil, nil
	}
	s.open = pkt[:0]
	s.lastAuth = now
	s.ctr.PacketsReceived.Add(1)
	s.ctr.BytesReceived.Add(uint64(len(datagram)))
	s.q.traffic(now, 0, len(datagram))
	h, payload, err := wire.ParsePacket(pkt)
	if err != nil {
		s.countDrop(dropMalformed)
		return nil, nil
	}
	wantSender := uint32(0)
	if s.server {
		wantSender = s.id
	}
	if h.SenderID != wantSender {
		s.countDrop(dropMalformed)
		return nil, nil
	}
	s.rx = h
	return &s.rx, payload
}

// handleLocked applies the schema, then routes an authenticated packet through
// the channel machinery: acks, heartbeats and Disconnect are consumed here;
// everything else reaches deliver (reliable traffic after dedupe and ordering).
func (s *session) handleLocked(reg *wire.Registry, h *wire.Header, payload []byte, now time.Time, deliver deliverFunc) {
	travel := wire.ServerToClient
	if s.server {
		travel = wire.ClientToServer
	}
	if err := reg.Validate(travel, h, payload); err != nil {
		s.countDrop(dropMalformed)
		return
	}
	if h.Channel.IsReliable() {
		if !s.rel.Receive(h, payload, now, deliver) {
			s.countDrop(dropOther)
		}
		s.flushLocked(now) // a duplicate is acked at once
		return
	}
	s.q.sawUnreliable(h.Sequence)
	switch h.Type {
	case wire.TypeAck:
		a, err := wire.ParseAck(payload)
		if err != nil {
			s.countDrop(dropMalformed)
			return
		}
		s.rel.OnAck(reliable.Ack{Ack: a.Ack, Bits: a.Bits, DelayMS: a.DelayMS}, now)
		s.flushLocked(now) // the window may have opened
	case wire.TypeHeartbeat:
		hb, err := wire.ParseHeartbeat(payload)
		if err != nil {
			s.countDrop(dropMalformed)
			return
		}
		s.onHeartbeatLocked(hb, now)
	case wire.TypeDisconnect:
		d, err := wire.ParseDisconnect(payload)
		if err != nil {
			s.countDrop(dropMalformed)
			return
		}
		s.peerClosedLocked(wire.DisconnectReason(d.Reason), d.Detail)
	default:
		deliver(h, payload)
	}
}
