package netstack

import (
	"sync/atomic"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// peerCounters are one session's own counters (Stats, §13). The few that
// every datagram or message moves are kept inline; the others — drops by
// reason, refusals and notices, held messages, state, migration — are in
// a Counters allocated at the first of them, so that the many sessions of
// a server that only exchange heartbeats carry 80 bytes of counters, not
// a whole Counters (504 bytes, most of them server-only totals). Every
// field is atomic, read while the network runs, as in Counters.
type peerCounters struct {
	BytesSent        atomic.Uint64
	BytesReceived    atomic.Uint64
	PacketsSent      atomic.Uint64
	PacketsReceived  atomic.Uint64
	PacketsDropped   atomic.Uint64
	Retransmissions  atomic.Uint64
	InboxDrops       atomic.Uint64
	MessagesSent     atomic.Uint64
	MessagesReceived atomic.Uint64

	// rare is where the other counters go (nil until the first of them);
	// its fields that shadow the ones above stay zero.
	rare atomic.Pointer[Counters]
}

// more returns the session's rarely moved counters, made at first use.
func (c *peerCounters) more() *Counters {
	if m := c.rare.Load(); m != nil {
		return m
	}
	c.rare.CompareAndSwap(nil, new(Counters))
	return c.rare.Load()
}

// drop counts one dropped datagram in its counter and in PacketsDropped.
func (c *peerCounters) drop(k dropKind) {
	if k != dropOther {
		c.more().dropReason(k)
	}
	c.PacketsDropped.Add(1)
}

// refused counts one refusal by reason.
func (c *peerCounters) refused(r wire.RefusalReason) { c.more().refused(r) }

// snapshot returns the session's statistics.
func (c *peerCounters) snapshot() Stats {
	var st Stats
	if m := c.rare.Load(); m != nil {
		st = m.snapshot()
	}
	st.BytesSent, st.BytesReceived = c.BytesSent.Load(), c.BytesReceived.Load()
	st.PacketsSent, st.PacketsReceived = c.PacketsSent.Load(), c.PacketsReceived.Load()
	st.PacketsDropped = c.PacketsDropped.Load()
	st.Retransmissions, st.InboxDrops = c.Retransmissions.Load(), c.InboxDrops.Load()
	st.MessagesSent, st.MessagesReceived = c.MessagesSent.Load(), c.MessagesReceived.Load()
	return st
}
