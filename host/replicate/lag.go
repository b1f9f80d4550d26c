package replicate

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Lag compensation. Each block whose module declared a type with a Box has
// its own lagcomp.History: a module's rays meet only its own entities, the
// same rule a plugin's SDK applies to the history it keeps of the positions
// it set (see package plugin).

// record stores every block's hitboxes at server time now.
func (r *Replicator) record(now time.Duration) {
	for b := range r.blocks {
		bs := &r.blocks[b]
		if bs.hist == nil {
			continue
		}
		bs.scratch = bs.scratch[:0]
		if bs.count > 0 {
			for _, e := range r.list {
				if BlockOf(e.id) == Block(b) && e.t.hasBox {
					bs.scratch = append(bs.scratch, lagcomp.Entity{ID: e.id, Box: e.t.Box.At(e.pos), Teleported: e.teleported})
				}
			}
		}
		if err := bs.hist.Record(now, bs.scratch); err != nil {
			r.cfg.Log.Warn("lag compensation: snapshot not recorded", "module", bs.owner, "err", err)
		}
	}
	for _, e := range r.list {
		e.teleported = false
	}
}

// Raycast validates a hitscan shot of client shooter against block b's
// hitboxes as they were when the shooter fired: rewound to the current
// tick's time minus half the shooter's RTT (lagcomp.RewindTime), or the
// newest snapshot when that is more recent than the last one recorded. The
// shooter's viewpoint entity (its focus, else the lowest-id entity it owns)
// is never hit. A miss is a Hit with Entity 0; a refusal is an error:
// ErrNoClient, ErrNoHitboxes, or lagcomp's ErrInvalidRay, ErrTooOld (the
// shooter's latency is beyond the window) and ErrNoHistory.
func (r *Replicator) Raycast(b Block, shooter uint32, origin, dir wire.Vec3, maxDist float32) (module.Hit, error) {
	bs, err := r.block(b)
	if err != nil {
		return module.Hit{}, err
	}
	if bs.hist == nil {
		return module.Hit{}, fmt.Errorf("raycast: %w", ErrNoHitboxes)
	}
	v, ok := r.viewers[shooter]
	if !ok {
		return module.Hit{}, fmt.Errorf("raycast by %d: %w", shooter, ErrNoClient)
	}
	var rtt time.Duration
	if r.cfg.RTT != nil {
		if rtt, ok = r.cfg.RTT(shooter); !ok {
			return module.Hit{}, fmt.Errorf("raycast by %d: %w", shooter, ErrNoClient)
		}
	}
	exclude := lagcomp.NoEntity
	if e := r.viewEntity(v); e != nil {
		exclude = e.id
	}
	return bs.hist.Shot(r.now, rtt, origin, dir, maxDist, exclude)
}
