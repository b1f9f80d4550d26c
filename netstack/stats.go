package netstack

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Counters are the drop and traffic counters of protocol-v3.md §13 and the
// handshake counters of docs/protocol.md §11. Every field is updated
// atomically, so a Counters may be read while the network runs (a metrics
// exporter reads them as they are). Per-peer Counters use only the §13 ones.
type Counters struct {
	BytesSent              atomic.Uint64
	BytesReceived          atomic.Uint64
	PacketsSent            atomic.Uint64
	PacketsReceived        atomic.Uint64
	PacketsDropped         atomic.Uint64 // every drop, whatever the reason
	SecurityDrops          atomic.Uint64
	LateFrames             atomic.Uint64 // frames that authenticate under a session closed moments ago (closed.go)
	PlaintextFramesDropped atomic.Uint64
	MalformedDropped       atomic.Uint64
	PolicyDrops            atomic.Uint64
	ConnectRateLimited     atomic.Uint64 // refused by the per-address budget
	Retransmissions        atomic.Uint64
	InboxDrops             atomic.Uint64 // incremented by the host's module inboxes

	// Messages (protocol v4 packs many in a datagram; each fragment counts).
	MessagesSent     atomic.Uint64
	MessagesReceived atomic.Uint64
	// Refused counts the authenticated messages refused, by wire.RefusalReason
	// (index 0 unused): acknowledged if reliable, counted, dropped (§5.6).
	Refused [refusalSlots]atomic.Uint64
	// NoticesSent are the MessageRefused notices sent; NoticesSuppressed the
	// refusals not reported because of the notice rate limit.
	NoticesSent       atomic.Uint64
	NoticesSuppressed atomic.Uint64
	// PeerRefusals counts what the peer reported refusing of ours
	// (MessageRefused notices received, with their suppressed counts).
	PeerRefusals atomic.Uint64
	// HeldNotLoaded counts the reliable messages held for a module that was
	// not loaded (restarting, reloading); HeldDelivered those delivered once
	// it was back (the others were refused NotLoaded).
	HeldNotLoaded atomic.Uint64
	HeldDelivered atomic.Uint64
	// NotInProtocol counts the sends refused because the peer's protocol
	// version does not define the type (ErrNotInProtocol): a caller that
	// did not check ClientInfo.Speaks.
	NotInProtocol atomic.Uint64
	// StateSuperseded counts the state messages (SendState) replaced in the
	// send queue by a newer one of the same key; StateDropped those dropped
	// after waiting for the pacer past a second (congestion control).
	StateSuperseded atomic.Uint64
	StateDropped    atomic.Uint64

	// Resumption (server only, docs/protocol.md §3.15).
	ResumeTicketsIssued  atomic.Uint64
	SeatsHeld            atomic.Uint64 // seats held when their path went dark
	SeatsExpired         atomic.Uint64 // holds that ended without a resumption
	Resumed              atomic.Uint64
	SeatsWoken           atomic.Uint64 // held seats whose client was heard again on the old session
	ResumeRefusedExpired atomic.Uint64 // refused ResumeExpired
	ResumeRefusedInvalid atomic.Uint64 // refused ResumeInvalid
	// Handshakes without a resume ticket refused at admission (a sealed
	// Disconnect after ClientFinished) because the server drains or is
	// full: where a resumption may come, the hello is let on (§3.14).
	AdmissionDrainRefused atomic.Uint64
	AdmissionFullRefused  atomic.Uint64

	// Handshake traffic (server only).
	PlainBytesReceived atomic.Uint64 // every plain and legacy datagram that passed the endpoint policy
	PlainBytesSent     atomic.Uint64 // every plain and legacy datagram sent
	HalfOpen           atomic.Int64  // half-open handshakes now (a gauge)
	HalfOpenEvicted    atomic.Uint64 // half-open handshakes evicted from a full table
	CookiesSent        atomic.Uint64
	CookiesVerified    atomic.Uint64
	CookiesFailed      atomic.Uint64 // wrong MAC, other source or hello, or expired
	HandshakesSigned   atomic.Uint64 // key agreements + signatures performed

	// Refusals by budget or cap; each is also a drop (PacketsDropped).
	PrefixRateLimited       atomic.Uint64 // per-/24 or per-/64 budget
	HandshakeBudgetRefused  atomic.Uint64 // global signatures-per-second budget
	UnvalidatedReplyRefused atomic.Uint64 // global replies-to-unvalidated-sources budget
	HalfOpenCapRefused      atomic.Uint64 // per-address or per-prefix half-open cap
	AmplificationDropped    atomic.Uint64 // an answer would exceed the size limit (§3.5)
	ProtocolV3Refused       atomic.Uint64 // v3 hellos answered ProtocolTooOld (internet mode)
	// UnvalidatedRefusalRefused: refusals to unvalidated sources not sent
	// because the refusal budget was empty (docs/protocol.md §3.5).
	UnvalidatedRefusalRefused atomic.Uint64

	// Clients refused by the admission caps (AddressLimit), at the hello or
	// at admission; these are answered, not dropped.
	AddressCapRefused atomic.Uint64 // the source address had PerAddress admitted clients
	PrefixCapRefused  atomic.Uint64 // its /24 or /64 had PerPrefix

	// Connection migration (migrate.go, server only).
	ConnectionIDsIssued    atomic.Uint64 // connection ids told to clients that asked
	PathValidationsStarted atomic.Uint64 // an authenticated frame came from a new address
	PathValidationsFailed  atomic.Uint64 // abandoned: not answered in time, or replaced by a newer address
	PathChallengesHeld     atomic.Uint64 // a challenge not sent: it would pass 3× the bytes received from the address
	Migrations             atomic.Uint64 // sessions moved to a validated new address
}

// Stats is a snapshot of one peer's statistics (§13), or of a whole server
// when read from Server.Stats (then Ping, Jitter and PacketLoss are zero).
type Stats struct {
	Ping                   time.Duration // latest heartbeat round trip
	Jitter                 time.Duration // smoothed variation of Ping (RFC 3550 style, gain 1/16)
	PacketLoss             float64       // inbound loss 0..1 estimated from the peer's unreliable sequence
	BytesSent              uint64
	BytesReceived          uint64
	PacketsSent            uint64
	PacketsReceived        uint64
	PacketsDropped         uint64
	BandwidthUp            float64 // bytes/s sent over the last full second
	BandwidthDown          float64 // bytes/s received over the last full second
	SecurityDrops          uint64
	LateFrames             uint64
	PlaintextFramesDropped uint64
	MalformedDropped       uint64
	PolicyDrops            uint64
	ConnectRateLimited     uint64
	Retransmissions        uint64
	InboxDrops             uint64
	RTO                    time.Duration // current retransmission timeout
	// Per peer only: what is held for the peer's fragmented and early
	// ordered messages (bytes at pooled capacity; bounded, §5.3), and the
	// fragments left unacknowledged because that bound was reached.
	ReassemblyBytes   int
	ReassemblyFull    uint64
	MessagesSent      uint64
	MessagesReceived  uint64
	MessagesRefused   uint64 // all reasons (RefusedBy has them one by one)
	RefusedBy         map[wire.RefusalReason]uint64
	NoticesSent       uint64
	NoticesSuppressed uint64
	PeerRefusals      uint64
	HeldNotLoaded     uint64
	HeldDelivered     uint64
	NotInProtocol     uint64
	StateSuperseded   uint64
	StateDropped      uint64

	// Congestion control (per peer; a server's v4 sessions pace, every
	// session's estimator takes its heartbeat round trips).
	SRTT           time.Duration // smoothed round trip (RFC 6298)
	RTTVariance    time.Duration // its variation (RTTVAR)
	MinRTT         time.Duration // the least round trip of the last 30 s
	ProbeLoss      float64       // round-trip probe loss, 0..1 (smoothed)
	Bandwidth      float64       // estimated bytes/s toward the peer (0: not estimated)
	SendRate       float64       // the pacing rate, bytes/s (0: not paced)
	SendQueueDelay time.Duration // how long the oldest message of the last flush waited
	Backlogged     bool          // state (SendState) waits for the pacer: send less to this peer
	PathState      string        // the pacer's view: free, hold, drain ("" when not paced)

	// Server totals only: the handshake counters of Counters.
	PlainBytesReceived      uint64
	PlainBytesSent          uint64
	HalfOpen                int
	HalfOpenEvicted         uint64
	CookiesSent             uint64
	CookiesVerified         uint64
	CookiesFailed           uint64
	HandshakesSigned        uint64
	PrefixRateLimited       uint64
	HandshakeBudgetRefused  uint64
	UnvalidatedReplyRefused uint64
	HalfOpenCapRefused      uint64
	AmplificationDropped    uint64
	ProtocolV3Refused       uint64

	UnvalidatedRefusalRefused uint64
	AddressCapRefused         uint64 // admission caps: per address
	PrefixCapRefused          uint64 // admission caps: per /24 or /64

	// Connection migration (the server's, totals and per client).
	ConnectionIDsIssued    uint64
	PathValidationsStarted uint64
	PathValidationsFailed  uint64
	PathChallengesHeld     uint64
	Migrations             uint64
}

func (c *Counters) snapshot() Stats {
	return Stats{
		BytesSent:              c.BytesSent.Load(),
		BytesReceived:          c.BytesReceived.Load(),
		PacketsSent:            c.PacketsSent.Load(),
		PacketsReceived:        c.PacketsReceived.Load(),
		PacketsDropped:         c.PacketsDropped.Load(),
		SecurityDrops:          c.SecurityDrops.Load(),
		LateFrames:             c.LateFrames.Load(),
		PlaintextFramesDropped: c.PlaintextFramesDropped.Load(),
		MalformedDropped:       c.MalformedDropped.Load(),
		PolicyDrops:            c.PolicyDrops.Load(),
		ConnectRateLimited:     c.ConnectRateLimited.Load(),
		Retransmissions:        c.Retransmissions.Load(),
		InboxDrops:             c.InboxDrops.Load(),
		MessagesSent:           c.MessagesSent.Load(),
		MessagesReceived:       c.MessagesReceived.Load(),
		MessagesRefused:        c.refusedTotal(),
		RefusedBy:              c.refusedBy(),
		NoticesSent:            c.NoticesSent.Load(),
		NoticesSuppressed:      c.NoticesSuppressed.Load(),
		PeerRefusals:           c.PeerRefusals.Load(),
		HeldNotLoaded:          c.HeldNotLoaded.Load(),
		HeldDelivered:          c.HeldDelivered.Load(),
		NotInProtocol:          c.NotInProtocol.Load(),
		StateSuperseded:        c.StateSuperseded.Load(),
		StateDropped:           c.StateDropped.Load(),

		PlainBytesReceived:      c.PlainBytesReceived.Load(),
		PlainBytesSent:          c.PlainBytesSent.Load(),
		HalfOpen:                int(c.HalfOpen.Load()),
		HalfOpenEvicted:         c.HalfOpenEvicted.Load(),
		CookiesSent:             c.CookiesSent.Load(),
		CookiesVerified:         c.CookiesVerified.Load(),
		CookiesFailed:           c.CookiesFailed.Load(),
		HandshakesSigned:        c.HandshakesSigned.Load(),
		PrefixRateLimited:       c.PrefixRateLimited.Load(),
		HandshakeBudgetRefused:  c.HandshakeBudgetRefused.Load(),
		UnvalidatedReplyRefused: c.UnvalidatedReplyRefused.Load(),
		HalfOpenCapRefused:      c.HalfOpenCapRefused.Load(),
		AmplificationDropped:    c.AmplificationDropped.Load(),
		ProtocolV3Refused:       c.ProtocolV3Refused.Load(),

		UnvalidatedRefusalRefused: c.UnvalidatedRefusalRefused.Load(),
		AddressCapRefused:         c.AddressCapRefused.Load(),
		PrefixCapRefused:          c.PrefixCapRefused.Load(),

		ConnectionIDsIssued:    c.ConnectionIDsIssued.Load(),
		PathValidationsStarted: c.PathValidationsStarted.Load(),
		PathValidationsFailed:  c.PathValidationsFailed.Load(),
		PathChallengesHeld:     c.PathChallengesHeld.Load(),
		Migrations:             c.Migrations.Load(),
	}
}

// refusalSlots is one past the highest wire.RefusalReason.
const refusalSlots = 9

func (c *Counters) refusedTotal() uint64 {
	var n uint64
	for i := range c.Refused {
		n += c.Refused[i].Load()
	}
	return n
}

// refusedBy returns the non-zero refusal counts (nil when there are none, so
// the common snapshot allocates nothing).
func (c *Counters) refusedBy() map[wire.RefusalReason]uint64 {
	var m map[wire.RefusalReason]uint64
	for i := range c.Refused {
		if v := c.Refused[i].Load(); v > 0 {
			if m == nil {
				m = make(map[wire.RefusalReason]uint64)
			}
			m[wire.RefusalReason(i)] = v
		}
	}
	return m
}

// refused counts one refusal by reason.
func (c *Counters) refused(r wire.RefusalReason) {
	if int(r) < len(c.Refused) {
		c.Refused[r].Add(1)
	}
}

// dropKind names the §13 counter a dropped datagram is counted in.
type dropKind uint8

const (
	dropOther dropKind = iota // counted in PacketsDropped only
	dropSecurity
	dropLate
	dropPlaintext
	dropMalformed
	dropPolicy
	dropRateLimited // per-address budget
	dropPrefixLimited
	dropHandshakeBudget
	dropUnvalidatedBudget
	dropRefusalBudget
	dropHalfOpenCap
	dropAmplification
)

// drop counts one dropped datagram in its counter and in PacketsDropped.
func (c *Counters) drop(k dropKind) {
	c.dropReason(k)
	c.PacketsDropped.Add(1)
}

// dropReason counts one dropped datagram in the counter of its reason
// (none for dropOther).
func (c *Counters) dropReason(k dropKind) {
	switch k {
	case dropSecurity:
		c.SecurityDrops.Add(1)
	case dropLate:
		c.LateFrames.Add(1)
	case dropPlaintext:
		c.PlaintextFramesDropped.Add(1)
	case dropMalformed:
		c.MalformedDropped.Add(1)
	case dropPolicy:
		c.PolicyDrops.Add(1)
	case dropRateLimited:
		c.ConnectRateLimited.Add(1)
	case dropPrefixLimited:
		c.PrefixRateLimited.Add(1)
	case dropHandshakeBudget:
		c.HandshakeBudgetRefused.Add(1)
	case dropUnvalidatedBudget:
		c.UnvalidatedReplyRefused.Add(1)
	case dropRefusalBudget:
		c.UnvalidatedRefusalRefused.Add(1)
	case dropHalfOpenCap:
		c.HalfOpenCapRefused.Add(1)
	case dropAmplification:
		c.AmplificationDropped.Add(1)
	}
}

// linkQuality tracks ping, jitter, inbound loss and bandwidth of one peer. It is
// guarded by the owning session's lock.
type linkQuality struct {
	ping, jitter time.Duration

	// Inbound loss: a bitmap of the peer's unreliable sequence numbers in
	// (lossBase, lossBase+2·lossWindow]. A window of lossWindow sequences is
	// judged only once the peer has sent lossWindow more after it, so late
	// (reordered) packets still count; duplicates set a bit once.
	lossBase    uint32
	hasPing     bool // ping was measured (here beside lossBase: no padding)
	lossStarted bool
	lossBits    [2 * lossWindow / 64]uint64
	loss        float64

	// Bandwidth: bytes in the current one-second bucket and the last full one.
	bwStart          time.Time
	bwUp, bwDown     uint64
	lastUp, lastDown float64
}

func (q *linkQuality) addPing(rtt time.Duration) {
	if !q.hasPing {
		q.ping, q.hasPing = rtt, true
		return
	}
	d := rtt - q.ping
	if d < 0 {
		d = -d
	}
	q.jitter += (d - q.jitter) / 16
	q.ping = rtt
}

// lossWindow is how many unreliable sequence numbers one loss estimate spans.
const lossWindow = 256

func (q *linkQuality) sawUnreliable(seq uint32) {
	if !q.lossStarted {
		q.lossStarted, q.lossBase = true, seq-1
	}
	if seq <= q.lossBase {
		return // from a window already judged
	}
	for seq-q.lossBase > 2*lossWindow {
		q.judgeLossWindow()
	}
	off := seq - q.lossBase - 1
	q.lossBits[off/64] |= 1 << (off % 64)
}

// judgeLossWindow turns the oldest window into the loss estimate and slides
// the bitmap by one window.
func (q *linkQuality) judgeLossWindow() {
	half := len(q.lossBits) / 2
	got := 0
	for _, w := range q.lossBits[:half] {
		got += bits.OnesCount64(w)
	}
	q.loss = 1 - float64(got)/lossWindow
	copy(q.lossBits[:half], q.lossBits[half:])
	clear(q.lossBits[half:])
	q.lossBase += lossWindow
}

func (q *linkQuality) traffic(now time.Time, up, down int) {
	if q.bwStart.IsZero() {
		q.bwStart = now
	}
	if el := now.Sub(q.bwStart); el >= time.Second {
		q.lastUp = float64(q.bwUp) / el.Seconds()
		q.lastDown = float64(q.bwDown) / el.Seconds()
		q.bwUp, q.bwDown, q.bwStart = 0, 0, now
	}
	q.bwUp += uint64(up)
	q.bwDown += uint64(down)
}
