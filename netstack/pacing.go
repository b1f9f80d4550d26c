package netstack

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/congestion"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Congestion control of a server's v4 session (docs/protocol.md §5.7): the
// path's estimator learns the round trip, probe loss and bandwidth from
// heartbeat probes (markers) that a sending session adds to its flushes;
// the pacer holds a flush to the estimator's rate. What must flow goes
// regardless and draws the pacer into debt — the reliability engine's
// output and Acks, heartbeats, and unreliable messages sent with Send —
// while state sent with SendState waits for the budget: a newer state of
// the same key replaces a queued one it covers, and state that waited past
// staleAfter is dropped (a newer one follows; entity replication refreshes
// every entity). A session whose state waits is backlogged: the host tells
// its modules so that they send less to that client.

// staleAfter is how long queued state may wait before it is dropped;
// backlogAfter how long before the session counts as backlogged;
// stateBatch how much sending at the pacing rate a datagram of state alone
// waits to carry (at most a datagram's worth).
const (
	staleAfter   = time.Second
	backlogAfter = 50 * time.Millisecond
	stateBatch   = 25 * time.Millisecond
)

// pathCongestion is a path's congestion-control state (peerPath.cc).
type pathCongestion struct {
	est   congestion.Estimator
	pacer congestion.Pacer
	probe uint32  // a marker's token queued for the next flush (0: none)
	hb    [8]byte // scratch of heartbeat payloads (a local one escapes)
	on    bool    // a server's v4 session
	// backlogged: state was left waiting by the last flush (beside the
	// small fields above, not with the other figures of the last flush
	// below: its own 8 bytes of padding there).
	backlogged bool

	// Queued state (SendState), oldest first: kq indexes payloads in kbuf;
	// kidx finds the newest queued state of a type and key.
	kq    []stateMsg
	kbuf  []byte
	kbuf2 []byte // the other buffer, which compaction copies into
	kidx  map[stateKey]int
	// What the last flush did with state, for statistics and back-pressure
	// (and backlogged above).
	queueDelay time.Duration // the longest wait of what the last flush sent
	sampledAt  time.Time     // when the histograms last took this session
	lastRate   float64       // the pacing rate of the last flush
}

// stateKey names the state a message is about.
type stateKey struct {
	typ wire.MessageType
	key uint64
}

// stateMsg is one queued state message.
type stateMsg struct {
	typ      wire.MessageType
	key      uint64
	covers   uint64 // what of the key's state it carries (a field mask)
	at       time.Time
	off, len int
}

// initCongestion turns congestion control on for a server's v4 session.
func (s *session) initCongestion() {
	s.path.cc.on = true
	s.path.cc.est.Init(congestion.Config{})
}

// sendStateLocked queues state: an unreliable message of type typ about
// key whose payload carries the parts of covers. A queued one of the same
// type and key whose parts the new one covers is replaced in its place
// (the newest state wins and keeps the older one's turn and age).
func (s *session) sendStateLocked(typ wire.MessageType, key, covers uint64, payload []byte, now time.Time) error {
	cc := &s.path.cc
	if !cc.on {
		return s.sendLocked(typ, wire.Unreliable, payload, now)
	}
	if err := s.checkUnreliableLocked(typ, payload); err != nil {
		return err
	}
	if len(cc.kbuf)+len(payload) > s.out.uqMax {
		return ErrSendQueueFull
	}
	off := len(cc.kbuf)
	cc.kbuf = append(cc.kbuf, payload...)
	k := stateKey{typ, key}
	if i, ok := cc.kidx[k]; ok {
		if m := &cc.kq[i]; covers&m.covers == m.covers {
			m.covers, m.off, m.len = covers, off, len(payload)
			s.add(stateSuperseded, 1)
			s.out.sends.Add(1)
			return nil
		}
	}
	if cc.kidx == nil {
		cc.kidx = make(map[stateKey]int)
	}
	cc.kidx[k] = len(cc.kq)
	cc.kq = append(cc.kq, stateMsg{typ: typ, key: key, covers: covers, at: now, off: off, len: len(payload)})
	s.out.sends.Add(1)
	if s.out.queuedAt.IsZero() {
		s.out.queuedAt = now
	}
	return nil
}

// ccMovedLocked starts the estimates afresh when the session moved to
// another address (a new path: Wi-Fi → cellular), and keeps them when only
// the port changed (a NAT rebinding, the same path), as QUIC does (RFC
// 9000 §9.4). Queued state stays queued.
func (s *session) ccMovedLocked(old netip.AddrPort) {
	cc := &s.path.cc
	if !cc.on || old.Addr() == s.path.addr.Addr() {
		return
	}
	cc.est.Init(congestion.Config{})
	cc.pacer = congestion.Pacer{}
}

// ccBeginLocked starts a flush: the pacer earns its budget, and a marker
// probe is queued when one is due (only while there is something to send,
// so an idle session sends only its liveness heartbeat).
func (s *session) ccBeginLocked(now time.Time) {
	cc := &s.path.cc
	cc.queueDelay = 0
	if !s.out.queuedAt.IsZero() {
		cc.queueDelay = now.Sub(s.out.queuedAt)
	}
	if !cc.on {
		return
	}
	cc.lastRate = cc.est.Rate(now)
	cc.pacer.Refill(now, cc.lastRate, s.out.pk.size)
	if (len(s.out.uq) > 0 || len(cc.kq) > 0) && cc.est.ProbeDue(now) {
		cc.probe = rand.Uint32() | 1
		s.queueUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(cc.hb[:0], &wire.Heartbeat{Token: cc.probe}))
	}
}

// ccMarkLocked records the queued probe as a marker: it leaves in this
// flush, after what the estimator has counted as sent.
func (s *session) ccMarkLocked(now time.Time) {
	if cc := &s.path.cc; cc.probe != 0 {
		cc.est.Mark(cc.probe, now)
		cc.probe = 0
	}
}

// ccStateLocked adds queued state to the pack while the pacer's budget
// lasts and the bottleneck's queue stays under the estimator's bound
// (InFlightAllows: 60 ms at the estimate), oldest first; state past
// staleAfter is dropped, the rest waits.
func (s *session) ccStateLocked(now time.Time) {
	cc := &s.path.cc
	if len(cc.kq) == 0 {
		cc.backlogged = false
		cc.est.SetAppLimited(true, now)
		return
	}
	pk := &s.out.pk
	if s.stateWaitsForBatchLocked(now) {
		s.heldStateLocked(now)
		return
	}
	keep := cc.kq[:0]
	for _, m := range cc.kq {
		wait := now.Sub(m.at)
		switch {
		case wait > staleAfter:
			s.add(stateDropped, 1)
			continue
		case len(keep) > 0 || !cc.pacer.Allows(pk.packed()+m.len) || !cc.est.InFlightAllows(now, pk.packed()+m.len):
			keep = append(keep, m)
			continue
		}
		h := wire.Header{Type: m.typ, Channel: wire.Unreliable}
		pk.add(&h, cc.kbuf[m.off:m.off+m.len])
		cc.queueDelay = max(cc.queueDelay, wait)
	}
	cc.kq = keep
	s.heldStateLocked(now)
}

// heldStateLocked ends a flush's state: what is left waits.
func (s *session) heldStateLocked(now time.Time) {
	cc := &s.path.cc
	cc.est.SetAppLimited(len(cc.kq) == 0, now)
	// Backlogged once state has waited a while, not at every brief hold:
	// the signal makes modules and replication change what they send.
	cc.backlogged = len(cc.kq) > 0 && now.Sub(cc.kq[0].at) >= backlogAfter
	s.compactStateLocked()
}

// stateWaitsForBatchLocked reports whether queued state should wait rather
// than leave in a datagram of its own with little in it: on a narrow link
// the pacer lets out a few records at each of the many flushes (the
// tick's, the service loop's every 10 ms), and each datagram costs about
// 80 bytes of IP, UDP, frame header and seal — a third of a 256 kbit/s
// link went to them. State alone leaves once the pacer and the queue
// bound allow stateBatch at the rate (at most a datagram's worth, at most
// what is queued); in a flush that goes anyway it takes what they allow.
func (s *session) stateWaitsForBatchLocked(now time.Time) bool {
	cc, pk := &s.path.cc, &s.out.pk
	if pk.carrying() {
		return false
	}
	var queued int
	for _, m := range cc.kq {
		h := wire.Header{Type: m.typ, Channel: wire.Unreliable}
		queued += wire.RecordHeaderSize(&h, m.len) + m.len
	}
	need := min(queued, int(cc.lastRate*stateBatch.Seconds()), pk.size*3/4)
	return !cc.pacer.Allows(need) || !cc.est.InFlightAllows(now, need)
}

// compactStateLocked moves the payloads still queued to the front of kbuf
// and indexes them again.
func (s *session) compactStateLocked() {
	cc := &s.path.cc
	clear(cc.kidx)
	if len(cc.kq) == 0 {
		cc.kbuf = cc.kbuf[:0]
		return
	}
	// A replaced state's payload sits after later ones: copy into the
	// other buffer rather than move in place.
	out := cc.kbuf2[:0]
	for i := range cc.kq {
		m := &cc.kq[i]
		off := len(out)
		out = append(out, cc.kbuf[m.off:m.off+m.len]...)
		m.off = off
		cc.kidx[stateKey{m.typ, m.key}] = i // the newest of a key last
	}
	cc.kbuf, cc.kbuf2 = out, cc.kbuf[:0]
	s.out.queuedAt = cc.kq[0].at // the service loop flushes it again
}

// ccEndLocked accounts a flush's bytes to the pacer and the estimator, and
// to the send-queue delay histogram. Each datagram counts with its IP and
// UDP headers: a bottleneck's rate counts packets whole, and a flush of
// small datagrams takes more of it than its payloads say.
func (s *session) ccEndLocked(res packResult, now time.Time) {
	cc := &s.path.cc
	if !cc.on || res.datagrams == 0 {
		return
	}
	n := res.bytes + res.datagrams*s.headerBytes()
	cc.pacer.Spend(n)
	cc.est.Sent(n)
	if s.hist != nil {
		s.hist.queueDelay.observe(cc.queueDelay.Seconds())
	}
}

// headerBytes is what IP and UDP add to each datagram on the session's
// path: 20 + 8 over IPv4, 40 + 8 over IPv6.
func (s *session) headerBytes() int {
	if s.path.addr.Addr().Unmap().Is4() {
		return 28
	}
	return 48
}

// ccEchoLocked takes a heartbeat echo: a marker's echo feeds the
// estimator (and is the path's RTT sample too); reports whether it was one.
func (s *session) ccEchoLocked(echo uint32, now time.Time) (time.Duration, bool) {
	cc := &s.path.cc
	if !cc.on || !cc.est.Echo(echo, now) {
		return 0, false
	}
	return cc.est.Latest(), true
}

// ccSampleLocked puts this session's estimates into the server's
// histograms once a second (session-seconds by RTT, loss, bandwidth).
func (s *session) ccSampleLocked(now time.Time) {
	cc := &s.path.cc
	if !cc.on || s.hist == nil || now.Sub(cc.sampledAt) < time.Second {
		return
	}
	cc.sampledAt = now
	snap := cc.est.Snapshot(now)
	if snap.SRTT == 0 {
		return
	}
	s.hist.rtt.observe(snap.SRTT.Seconds())
	s.hist.rttVar.observe(snap.RTTVar.Seconds())
	s.hist.loss.observe(snap.ProbeLoss)
	if snap.Bandwidth > 0 {
		s.hist.bandwidth.observe(snap.Bandwidth)
	}
}

func stateDropped(c *Counters) *atomicU64    { return &c.StateDropped }
func stateSuperseded(c *Counters) *atomicU64 { return &c.StateSuperseded }

// ccStatsLocked fills the congestion-control fields of st.
func (s *session) ccStatsLocked(st *Stats, now time.Time) {
	cc := &s.path.cc
	snap := cc.est.Snapshot(now)
	st.SRTT, st.RTTVariance, st.MinRTT, st.SendQueueDelay = snap.SRTT, snap.RTTVar, snap.MinRTT, cc.queueDelay
	if !cc.on {
		return
	}
	st.ProbeLoss, st.Bandwidth, st.SendRate = snap.ProbeLoss, snap.Bandwidth, cc.lastRate
	st.Backlogged, st.PathState = cc.backlogged, snap.State.String()
}

// Congestion is what congestion control says of one client's path: whether
// state waits for the pacer (send less), the pacing rate and the estimates.
type Congestion struct {
	Backlogged bool          // state sent with SendState waits for the pacer
	SendRate   float64       // the pacing rate, bytes/s (0: the session is not paced)
	Bandwidth  float64       // estimated bytes/s toward the client (0: not yet)
	SRTT       time.Duration // smoothed round trip
	QueueDelay time.Duration // how long the oldest message of the last flush waited
}

// Congestion returns an admitted client's congestion state; ok is false
// for an unknown client. It takes the client's lock briefly.
func (s *Server) Congestion(id uint32) (c Congestion, ok bool) {
	p := s.admitted(id)
	if p == nil {
		return c, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cc := &p.path.cc
	if cc.on {
		c = Congestion{Backlogged: cc.backlogged, SendRate: cc.lastRate, Bandwidth: cc.est.Bandwidth(time.Now()),
			SRTT: cc.est.SRTT(), QueueDelay: cc.queueDelay}
	}
	return c, true
}

// SendState queues state for an admitted client: an unreliable message of
// type t about key (an entity id, say) whose payload carries the parts in
// covers (a field mask; all ones for the whole state). In a paced session
// (protocol v4) it waits for the send-rate pacer behind what must flow, and
// a newer state of the same type and key that covers a queued one's parts
// replaces it in the queue: the newest state wins, and state that waited
// past a second is dropped. Elsewhere it is Send on the Unreliable channel.
func (s *Server) SendState(id uint32, t wire.MessageType, key, covers uint64, payload []byte) error {
	p := s.admitted(id)
	if p == nil {
		return ErrNoSuchClient
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != slotConnected || p.life.lingering {
		return ErrNoSuchClient
	}
	if t >= wire.FirstUserDefined {
		s.announceLocked(p, now)
	}
	return p.sendStateLocked(t, key, covers, payload, now)
}
