package netstack

import (
	"math/rand/v2"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The path to the peer (session.path): its address and how it was proved,
// liveness and the heartbeats whose echoes are its RTT samples, and the
// link quality estimates (stats.go). Migration and congestion control
// extend it.

// addrProof says how a peer proved that it receives at its address
// (docs/protocol.md §3.4): what the handshake knew of the path when it
// admitted the session.
type addrProof uint8

const (
	// proofNone: the source address was taken on trust (a v3 session, or
	// SkipAddressValidation on a private bind).
	proofNone addrProof = iota
	// proofCookie: the source echoed a cookie minted for its address.
	proofCookie
	// proofTransport: the transport's own handshake proved it (a
	// WebTransport or WebSocket session; transport.Message.Validated).
	proofTransport
	// proofChallenge: the session moved here after the client answered a
	// PathChallenge sent to this address (migrate.go).
	proofChallenge
)

func (p addrProof) String() string {
	switch p {
	case proofCookie:
		return "cookie"
	case proofTransport:
		return "transport"
	case proofChallenge:
		return "challenge"
	}
	return "none"
}

// queueHeartbeatLocked queues a heartbeat probe and remembers its token and
// send time, whose echo is an RTT sample.
func (s *session) queueHeartbeatLocked(now time.Time) {
	token := rand.Uint32() | 1 // nonzero
	s.path.heartbeats[s.path.hbNext] = heartbeatProbe{token: token, sent: s.since(now)}
	s.path.hbNext = (s.path.hbNext + 1) % heartbeatSlots
	var w [8]byte
	s.queueUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(w[:0], &wire.Heartbeat{Token: token}))
}

// peerProbeGrace is how many heartbeat intervals a v4 server waits, after
// its client's last probe, before it sends a liveness probe of its own: a
// client's probes come an interval apart plus its timers' lag.
const peerProbeGrace = 2

// onHeartbeatLocked answers a probe in this receive pass and takes an RTT
// sample from an echo.
func (s *session) onHeartbeatLocked(hb wire.Heartbeat, now time.Time) {
	if hb.Token != 0 {
		s.queueUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(s.path.cc.hb[:0], &wire.Heartbeat{Echo: hb.Token}))
		s.out.urgent = true
		if s.path.cc.on {
			// A v4 server's answer leaves with a marker probe (pacing.go,
			// docs/protocol.md §6): its echo is the RTT sample, and the
			// client's probe proved it alive, so the server's own probe
			// would be a second datagram each way for nothing. It is sent
			// only when the client's probes stop.
			s.path.nextHeartbeat = s.since(now) + peerProbeGrace*s.path.hbInterval
		}
	}
	if hb.Echo == 0 {
		return
	}
	if rtt, ok := s.ccEchoLocked(hb.Echo, now); ok {
		s.path.q.addPing(rtt)
		return
	}
	for i := range s.path.heartbeats {
		if p := &s.path.heartbeats[i]; p.token == hb.Echo {
			s.path.q.addPing(s.since(now) - p.sent)
			s.path.cc.est.RTT(s.since(now)-p.sent, now)
			p.token = 0
			return
		}
	}
}
