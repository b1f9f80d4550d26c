package pluginhost

import (
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// pinger spreads the clients' pings (their link facts: ping, loss,
// bandwidth) over the ticks of a round of pingEvery: each client's go to
// the plugin about once a second, a share of the clients at every tick.
// Gathering a client's facts locks its session and reads its congestion
// estimate; for a few thousand clients at one tick that was milliseconds
// of the game thread, and the longest tick of every second.
type pinger struct {
	ids     []uint32  // the clients of the round under way, listed at its start
	next    int       // ids[next:] are not pinged yet in this round
	roundAt time.Time // when the round under way began
}

// clientLister is a Host that lists its clients' ids without their facts
// (the server's; a Host without it is asked for Clients at each round).
type clientLister interface {
	ClientIDs() []uint32
}

// due returns the clients to ping at a tick at now of length dt: a new
// round's list once the last round is done and pingEvery has passed since
// it began, then a round's share of it at each tick, so that a round takes
// pingEvery at the tick's rate (longer, when the ticks are late). The
// slice is the pinger's: valid until the next call.
func (p *pinger) due(now time.Time, dt time.Duration, h module.Host) []uint32 {
	if p.next >= len(p.ids) {
		if !p.roundAt.IsZero() && now.Sub(p.roundAt) < pingEvery {
			return nil
		}
		p.ids, p.next, p.roundAt = listClients(p.ids[:0], h), 0, now
	}
	ticks := 1
	if dt > 0 {
		ticks = max(int(pingEvery/dt), 1)
	}
	share := (len(p.ids) + ticks - 1) / ticks
	end := min(p.next+share, len(p.ids))
	out := p.ids[p.next:end]
	p.next = end
	return out
}

// listClients appends the ids of h's clients to ids.
func listClients(ids []uint32, h module.Host) []uint32 {
	if l, ok := h.(clientLister); ok {
		return append(ids, l.ClientIDs()...)
	}
	for _, c := range h.Clients() {
		ids = append(ids, c.ID)
	}
	return ids
}

// appendPings appends this tick's share of the pings to pings.
func (m *Module) appendPings(pings []*pluginv1.ClientPing, t module.Tick) []*pluginv1.ClientPing {
	for _, id := range m.pings.due(t.Now, t.DT, m.host) {
		c, ok := m.host.Client(id)
		if !ok {
			continue // gone since the round began
		}
		pings = append(pings, &pluginv1.ClientPing{Client: c.ID, PingNs: int64(c.Ping),
			RttVarNs: int64(c.Link.RTTVariance), Loss: c.Link.Loss, Bandwidth: c.Link.Bandwidth,
			SendRate: c.Link.SendRate, QueueDelayNs: int64(c.Link.QueueDelay), Backlogged: c.Link.Backlogged})
	}
	return pings
}
