// Package reliable owns the per-peer reliability engine of protocol-v3.md §7:
// reliability and ordered sequence numbering, retransmission with RFC 6298 RTO
// and Karn's rule, acknowledgement scheduling, duplicate detection and in-order
// delivery of ReliableOrdered messages.
//
// It is pure logic: no sockets, no goroutines, no clock. Every method takes the
// current time (from a monotonic clock) as an argument, so the engine runs
// unchanged in virtual time (testing/synctest) and in production. One Endpoint
// serves one peer and is used under that peer's lock; it is not safe for
// concurrent use.
//
// It must never drop a reliable message silently: a message either reaches the
// peer, or the caller is told (ErrSendQueueFull at Send, ErrDeliveryFailed from
// Poll, after which the connection is to be closed with
// Disconnect(ReliableDeliveryFailed)).
package reliable

import (
	"errors"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Limits fixed by protocol-v3.md §7.
const (
	// InitialRTO is the retransmission timeout before any RTT sample.
	InitialRTO = 500 * time.Millisecond
	// MinRTO and MaxRTO clamp SRTT + 4·RTTVAR.
	MinRTO = 50 * time.Millisecond
	MaxRTO = time.Second
	// MaxInFlightLimit is the most reliable packets that may be unacknowledged
	// per peer and direction.
	MaxInFlightLimit = 256
	// MaxReorderAhead is MAX_REORDER_AHEAD: how far beyond the next expected
	// OrderedSequence a ReliableOrdered message is still held.
	MaxReorderAhead = 256
	// MaxAckDelay is the longest a receiver may wait before acknowledging a
	// reliable arrival ("within 33 ms").
	MaxAckDelay = 33 * time.Millisecond
	// MaxRetransmitWait caps the wait after any transmission in a
	// RetryUntilTimeout (protocol v4) endpoint, so that a peer back from an
	// outage is retried within a second (docs/protocol.md §5.4).
	MaxRetransmitWait = time.Second
	// MaxProbes is how many expired packets are resent per round to a peer
	// that has acknowledged nothing sent since them (see runTimers): a
	// slow peer gets a probe, not its whole window again.
	MaxProbes = 2
	// AckBits is the width of an Ack's bitfield: an Ack also covers the 32
	// sequences below its ack field.
	AckBits = 32
)

// Defaults used for zero Config fields.
const (
	DefaultMaxQueued          = 4096
	DefaultReceiveWindow      = 1024
	DefaultConnectionTimeout  = 10 * time.Second
	DefaultMaxRetransmissions = 10
	DefaultAckDelay           = 10 * time.Millisecond
	DefaultAckEvery           = 16
	// DefaultReassemblyBytes bounds the fragment bytes held per peer.
	DefaultReassemblyBytes = 4 * wire.MaxPayload
)

// Errors the engine reports. Callers match them with errors.Is.
var (
	// ErrSendQueueFull means the local queue beyond the in-flight window is
	// full: the message was not accepted. The caller decides (retry later, or
	// disconnect a peer that does not keep up); it is never dropped silently.
	ErrSendQueueFull = errors.New("reliable: send queue full: the peer is not acknowledging fast enough; retry later or disconnect it")
	// ErrDeliveryFailed means a reliable packet went unacknowledged for too
	// long: after the last retransmission's wait or for longer than the
	// connection timeout (protocol v3), or through the wait of a
	// transmission made a connection timeout after its first (with
	// RetryUntilTimeout, protocol v4). The connection must be closed with
	// Disconnect(ReliableDeliveryFailed). Once returned, every later Send
	// and Poll returns it again.
	ErrDeliveryFailed = errors.New("reliable: reliable delivery failed")
	// ErrNotReliableChannel is returned by Send for the Unreliable channel.
	ErrNotReliableChannel = errors.New("reliable: Send needs channel Reliable or ReliableOrdered; send unreliable packets directly")
	// ErrPayloadTooLarge is returned by Send for a payload over MAX_PAYLOAD.
	ErrPayloadTooLarge = errors.New("reliable: payload larger than MAX_PAYLOAD (65453 bytes)")
	// ErrSequenceExhausted is returned by Send once 2^32−2 reliable (or
	// ordered) sequences are used: sequences never wrap (comparisons are
	// plain u32), so the connection must be re-established. At 1,000 reliable
	// packets per second that is 49 days.
	ErrSequenceExhausted = errors.New("reliable: sequence space exhausted; reconnect")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("reliable: endpoint closed")
)

// Config tunes an Endpoint. The zero value of every field means its documented
// default; out-of-range values are clamped (never rejected), as noted per field.
type Config struct {
	// MaxInFlight bounds the reliable packets toward the peer that have a
	// sequence number and are not yet acknowledged, counted as a span of
	// sequence numbers (oldest unacknowledged .. newest). 0 means 256; values
	// above 256 are clamped to 256 (§7).
	MaxInFlight int
	// MaxQueued bounds the messages held locally, beyond the in-flight window,
	// waiting for a sequence number. 0 means 4096. Overflow is ErrSendQueueFull.
	MaxQueued int
	// MaxReorderAhead is how many OrderedSequences beyond the next expected one
	// are held for in-order delivery; further ones are dropped unacknowledged.
	// 0 means 256 (MAX_REORDER_AHEAD); at most 65536. Each unit reserves one
	// slot (~40 bytes).
	MaxReorderAhead uint32
	// ReceiveWindow is how many reliability sequences beyond the first missing
	// one are tracked for duplicate detection; a packet beyond it is dropped
	// unacknowledged (the sender retransmits it later). 0 means 1024; rounded up
	// to a multiple of 64, at least 256 so a sender within §7's 256-packet
	// limit never hits it, at most 2^20. Costs ReceiveWindow/8 bytes.
	ReceiveWindow uint32
	// ConnectionTimeout is how long a sent reliable packet may wait for its
	// acknowledgement before ErrDeliveryFailed (§8's liveness timeout); with
	// RetryUntilTimeout, the least it is retried for. 0 means 10 s; clamped
	// to 100 years so deadlines cannot overflow.
	ConnectionTimeout time.Duration
	// MaxRetransmissions is how many times a packet is retransmitted; after
	// the last retransmission's wait without an ack, ErrDeliveryFailed.
	// 0 means 10. Ignored with RetryUntilTimeout.
	MaxRetransmissions int
	// RetryUntilTimeout is protocol v4's give-up rule (docs/protocol.md
	// §5.4); netstack sets it by the session's protocol version. A packet
	// is retransmitted, however often, until a transmission of it made at
	// least ConnectionTimeout after its first goes unacknowledged through
	// its wait; only then ErrDeliveryFailed. Every wait is capped at
	// MaxRetransmitWait. So an outage shorter than the connection timeout
	// never ends the session here, whatever the RTO: ten retransmissions
	// at the 50 ms minimum RTO are over in 3.55 s, which is what ended
	// such sessions under v3's count. False keeps protocol v3's (frozen)
	// rule: MaxRetransmissions, and ConnectionTimeout as a hard deadline.
	RetryUntilTimeout bool
	// AckDelay is how long an Ack for a new reliable arrival is held back so
	// that one Ack covers a burst. 0 means 10 ms; clamped to 33 ms (§7).
	// Duplicates are acknowledged at once regardless.
	AckDelay time.Duration
	// AckEvery makes an Ack due at once when this many new reliable packets
	// arrived since the last Ack, so that a sender with a full window is not
	// held for AckDelay (the window, not the link, would set the throughput)
	// and no arrival can fall out of an Ack's 32-bit field before it is sent.
	// 0 means 16; negative means only AckDelay applies.
	AckEvery int
	// RedundantAcks is how many times the acknowledgement state is sent again,
	// AckDelay apart, after the Ack that answered the last reliable arrival.
	// A retransmission usually arrives alone and earns a single Ack; losing
	// it costs the sender a whole backoff step, so a cheap repeat (10-byte
	// payload, at most one per AckDelay) roughly squares the chance that the
	// acknowledgement is lost. Acks that leave in a datagram with a
	// reliable packet are not repeated: that packet is retransmitted until
	// acknowledged, with the Acks. 0 means 1; negative means none.
	RedundantAcks int
	// MaxFragmentPayload, when positive, makes Send split a message longer
	// than it into fragments of this many bytes (the last shorter), each its
	// own reliable packet (protocol v4, docs/protocol.md §5.3). 0 never
	// fragments (protocol v3: one message per datagram). A positive value is
	// raised so that no message needs more than wire.MaxFragments.
	MaxFragmentPayload int
	// ReassemblyBytes bounds what is held for the peer: fragments of
	// messages in reassembly and ordered messages ahead of their turn, at
	// their pooled capacity. A packet that would pass it is dropped
	// unacknowledged (its sender resends it), unless it is a fragment of the
	// oldest message already in reassembly or of the message the ordered
	// channel delivers next, so that reassembly always progresses: what is
	// held stays below ReassemblyBytes + two messages (reassembly.go). 0
	// means 4 × MAX_PAYLOAD.
	ReassemblyBytes int
	// ReassemblyTimeout drops a message in reassembly that received no
	// fragment for this long (a sender that stopped short: an honest one
	// resends every fragment until it is acknowledged or its connection
	// fails); on ReliableOrdered its place is skipped, so the channel goes
	// on. 0 means 2 × ConnectionTimeout.
	ReassemblyTimeout time.Duration
}

// populate returns c with defaults filled in and values clamped.
func (c Config) populate() Config {
	if c.MaxInFlight <= 0 || c.MaxInFlight > MaxInFlightLimit {
		c.MaxInFlight = MaxInFlightLimit
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.MaxReorderAhead == 0 {
		c.MaxReorderAhead = MaxReorderAhead
	}
	c.MaxReorderAhead = min(c.MaxReorderAhead, 1<<16)
	if c.ReceiveWindow == 0 {
		c.ReceiveWindow = DefaultReceiveWindow
	}
	c.ReceiveWindow = min(max(c.ReceiveWindow, MaxInFlightLimit), 1<<20)
	c.ReceiveWindow = (c.ReceiveWindow + 63) &^ 63
	if c.ConnectionTimeout <= 0 {
		c.ConnectionTimeout = DefaultConnectionTimeout
	}
	c.ConnectionTimeout = min(c.ConnectionTimeout, 100*365*24*time.Hour)
	if c.MaxRetransmissions <= 0 {
		c.MaxRetransmissions = DefaultMaxRetransmissions
	}
	if c.AckDelay <= 0 {
		c.AckDelay = DefaultAckDelay
	}
	c.AckDelay = min(c.AckDelay, MaxAckDelay)
	switch {
	case c.AckEvery == 0:
		c.AckEvery = DefaultAckEvery
	case c.AckEvery < 0:
		c.AckEvery = 0
	}
	switch {
	case c.RedundantAcks == 0:
		c.RedundantAcks = 1
	case c.RedundantAcks < 0:
		c.RedundantAcks = 0
	}
	if c.MaxFragmentPayload < 0 {
		c.MaxFragmentPayload = 0
	}
	if c.MaxFragmentPayload > 0 {
		c.MaxFragmentPayload = max(c.MaxFragmentPayload, (wire.MaxPayload+wire.MaxFragments-1)/wire.MaxFragments)
	}
	if c.ReassemblyBytes <= 0 {
		c.ReassemblyBytes = DefaultReassemblyBytes
	}
	if c.ReassemblyTimeout <= 0 {
		c.ReassemblyTimeout = 2 * c.ConnectionTimeout
	}
	return c
}
