package lagcomp

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// At returns the box placed at position p (the box is relative to it): the
// hitbox an entity at p occupies.
func (b AABB) At(p wire.Vec3) AABB {
	return AABB{
		Min: wire.Vec3{X: p.X + b.Min.X, Y: p.Y + b.Min.Y, Z: p.Z + b.Min.Z},
		Max: wire.Vec3{X: p.X + b.Max.X, Y: p.Y + b.Max.Y, Z: p.Z + b.Max.Z},
	}
}

// Shot validates a hitscan shot fired by a client whose round trip is rtt,
// at server time now: the boxes are rewound to RewindTime(now, rtt), or to
// the newest snapshot when that is more recent than the last one recorded
// (the shot is newer than the history). exclude is the shooter's own entity
// (NoEntity for none). A miss is a Hit with Entity 0; the errors are
// Raycast's. The server's replication and the plugin SDK both validate
// shots with it, each on the history it records.
func (h *History) Shot(now, rtt time.Duration, origin, dir wire.Vec3, maxDist float32, exclude uint32) (Hit, error) {
	at := RewindTime(now, rtt)
	if _, newest, ok := h.Span(); ok && at > newest {
		at = newest
	}
	hit, ok, err := h.Raycast(origin, dir, maxDist, at, exclude)
	if err != nil || !ok {
		return Hit{}, err
	}
	return hit, nil
}
