package replicate

import (
	"fmt"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// viewer is one admitted client and what it was sent.
type viewer struct {
	id    uint32
	view  module.ClientView
	types uint64           // the Schemas version it has
	known map[uint32]known // the entities it was spawned
	auto  *entity          // its lowest-id owned entity, this tick
	phase uint64           // offset of its frames in the tick schedule
	// frames counts its frames; ticks[n % MaxRepeats] is the tick of its
	// frame n, lastTick the tick of the latest.
	frames   uint64
	ticks    [MaxRepeats]uint64
	lastTick uint64
}

// known is an entity a client was spawned.
type known struct {
	visible uint64 // the fields_mask of its EntitySpawn
	since   uint64 // the tick of the frame that carried the spawn
}

// SetClientView sets a client's party, spectator flag and focus.
func (r *Replicator) SetClientView(client uint32, v module.ClientView) error {
	vw, ok := r.viewers[client]
	if !ok {
		return fmt.Errorf("client %d: %w", client, ErrNoClient)
	}
	vw.view = v
	return nil
}

// visible returns the fields of e that v may see.
func (v *viewer) visible(e *entity) uint64 {
	t := e.t
	m := t.public
	if e.owner == v.id && v.id != 0 {
		m |= t.private | t.party
	}
	if e.party != 0 && e.party == v.view.Party {
		m |= t.party
	}
	if v.view.Spectator {
		m |= t.party | t.spectator
	}
	return m
}

// viewpoint returns the entity whose position is v's viewpoint, or nil.
func (r *Replicator) viewpoint(v *viewer) *entity {
	if v.view.Focus != 0 {
		if e, ok := r.byID[v.view.Focus]; ok {
			return e
		}
	}
	return v.auto
}

// relevant reports whether e is relevant to v, whose viewpoint is vp (nil:
// none); wasKnown selects the leave radius.
func (r *Replicator) relevant(v *viewer, e, vp *entity, wasKnown bool) bool {
	if e.global || e.owner == v.id || vp == nil || vp == e || r.radius2 == 0 {
		return true
	}
	d := dist2(e.pos, vp.pos)
	if wasKnown {
		return d <= r.leave2
	}
	return d <= r.radius2
}

func dist2(a, b wire.Vec3) float64 {
	dx, dy, dz := float64(a.X)-float64(b.X), float64(a.Y)-float64(b.Y), float64(a.Z)-float64(b.Z)
	return dx*dx + dy*dy + dz*dz
}

// viewEntity is viewpoint outside a frame, where auto may be stale.
func (r *Replicator) viewEntity(v *viewer) *entity {
	if e, ok := r.byID[v.view.Focus]; ok && v.view.Focus != 0 {
		return e
	}
	return r.ownedBy(v.id)
}

// ownedBy returns the lowest-id entity client owns, or nil.
func (r *Replicator) ownedBy(client uint32) *entity {
	for _, e := range r.list {
		if e.owner == client {
			return e
		}
	}
	return nil
}
