package lagcomp

import (
	"fmt"
	"sort"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// RewindTime returns the server time a shot is validated at: now − rtt/2,
// where now is the server time at which the server received the input that
// fired (or the tick that processes it, at up to one tick's error), and rtt
// is the shooter's round-trip time as the server measures it (its ping, §11).
//
// The model: the shooter aimed at the world as it was one
// one-way trip before its shot reached the server. The ClientInput's
// client_time is deliberately not used: it runs on the client's clock, which
// the server can only map to its own by trusting the client, and a forged
// client_time would buy a cheater any rewind up to the window. Server-side
// measurements bound the rewind by the real latency, and Rewind and Raycast
// refuse anything beyond the window whatever rtt claims. A client that renders
// remote entities with an interpolation delay saw them older still: subtract
// that delay (the module knows it) from the result. A negative rtt counts as 0.
func RewindTime(now, rtt time.Duration) time.Duration {
	return now - max(rtt, 0)/2
}

// bracket is the pair of snapshots around a time and the weight of the later
// one. a == b when the time is a snapshot's own.
type bracket struct {
	a, b *snapshot
	f    float64
}

// bracketAt finds the snapshots around at, refusing a time outside
// [newest − Window, newest] or older than the oldest snapshot held.
func (h *History) bracketAt(at time.Duration) (bracket, error) {
	if h.n == 0 {
		return bracket{}, ErrNoHistory
	}
	oldest, newest := h.get(0).at, h.get(h.n-1).at
	switch {
	case at > newest:
		return bracket{}, fmt.Errorf("%w: %v, newest snapshot %v", ErrFuture, at, newest)
	case at < newest-h.window || at < oldest:
		return bracket{}, fmt.Errorf("%w: %v, history spans %v..%v (window %v)", ErrTooOld, at, max(oldest, newest-h.window), newest, h.window)
	}
	i := sort.Search(h.n, func(i int) bool { return h.get(i).at >= at })
	b := h.get(i)
	if b.at == at {
		return bracket{a: b, b: b}, nil
	}
	a := h.get(i - 1) // i > 0: at > oldest here
	return bracket{a: a, b: b, f: float64(at-a.at) / float64(b.at-a.at)}, nil
}

// cursor walks the entities present at a bracket's time in id order: those
// of both snapshots, or all of an exact snapshot. An entity in only one of two
// different snapshots was spawned or destroyed between them: it is absent,
// since it did not exist for the whole interval.
type cursor struct {
	br   bracket
	i, j int
}

// span is one entity present at the cursor's time: its box is from itself
// when to is nil, else interpolated from towards to by the bracket's weight.
type span struct {
	id       uint32
	from, to *AABB
}

func (c *cursor) next() (span, bool) {
	a, b := c.br.a.entities, c.br.b.entities
	if c.br.a == c.br.b {
		if c.i == len(a) {
			return span{}, false
		}
		c.i++
		return span{id: a[c.i-1].ID, from: &a[c.i-1].Box}, true
	}
	for c.i < len(a) && c.j < len(b) {
		ea, eb := &a[c.i], &b[c.j]
		switch {
		case ea.ID < eb.ID:
			c.i++
		case ea.ID > eb.ID:
			c.j++
		default:
			c.i++
			c.j++
			if eb.Teleported {
				return span{id: ea.ID, from: &ea.Box}, true
			}
			return span{id: ea.ID, from: &ea.Box, to: &eb.Box}, true
		}
	}
	return span{}, false
}

// box returns the span's box at weight f.
func (s *span) box(f float64) AABB {
	if s.to == nil {
		return *s.from
	}
	return lerpBox(s.from, s.to, f)
}

// bound returns a box that contains the span's box at every weight: a cheap
// first test for a ray, which misses most entities.
func (s *span) bound() AABB {
	if s.to == nil {
		return *s.from
	}
	a, b := s.from, s.to
	return AABB{
		Min: wire.Vec3{X: min(a.Min.X, b.Min.X), Y: min(a.Min.Y, b.Min.Y), Z: min(a.Min.Z, b.Min.Z)},
		Max: wire.Vec3{X: max(a.Max.X, b.Max.X), Y: max(a.Max.Y, b.Max.Y), Z: max(a.Max.Z, b.Max.Z)},
	}
}

func lerpBox(a, b *AABB, f float64) AABB {
	return AABB{Min: lerp(vec64(a.Min), vec64(b.Min), f), Max: lerp(vec64(a.Max), vec64(b.Max), f)}
}

func lerp(a, b vec, f float64) wire.Vec3 {
	return vec{a[0] + (b[0]-a[0])*f, a[1] + (b[1]-a[1])*f, a[2] + (b[2]-a[2])*f}.wire()
}

// Rewind appends to dst every entity that existed at server time at, with its
// box interpolated linearly between the two snapshots that bracket at (or the
// snapshot's own box when at is a snapshot time), in id order, and returns
// the extended slice. It refuses (ErrTooOld, ErrFuture, ErrNoHistory) a time
// outside the history. Reusing dst makes it allocation-free.
func (h *History) Rewind(at time.Duration, dst []Entity) ([]Entity, error) {
	br, err := h.bracketAt(at)
	if err != nil {
		return dst, err
	}
	c := cursor{br: br}
	for e, ok := c.next(); ok; e, ok = c.next() {
		dst = append(dst, Entity{ID: e.id, Box: e.box(br.f)})
	}
	return dst, nil
}

// Hit is the first entity a Raycast meets.
type Hit struct {
	Entity   uint32
	Point    wire.Vec3 // where the ray enters the entity's rewound box
	Distance float32   // from the ray's origin to Point
}

// Raycast traces the ray from origin along dir (any non-zero length) up to
// maxDist against the boxes rewound to server time at, skipping the entity
// exclude (the shooter; NoEntity skips none), and returns the nearest entity
// hit. ok is false when nothing is hit. The boxes are closed (grazing a face
// or an edge hits), an origin inside a box hits it at distance 0, and of two
// entities hit at the same distance the lower id wins. It refuses an invalid
// ray (ErrInvalidRay) and a time outside the history (ErrTooOld, ErrFuture,
// ErrNoHistory). It does not know the map: stop the ray at walls first (see
// AABB.RayDistance).
func (h *History) Raycast(origin, dir wire.Vec3, maxDist float32, at time.Duration, exclude uint32) (hit Hit, ok bool, err error) {
	r, valid := newRay(origin, dir, maxDist)
	if !valid {
		return Hit{}, false, ErrInvalidRay
	}
	br, err := h.bracketAt(at)
	if err != nil {
		return Hit{}, false, err
	}
	best := r.maxDist
	c := cursor{br: br}
	for e, more := c.next(); more; e, more = c.next() {
		if e.id == exclude { // never NoEntity: Record refuses id 0
			continue
		}
		if bound := e.bound(); e.to != nil {
			if t, in := r.hit(&bound); !in || (ok && t > best) {
				continue
			}
		}
		box := e.box(br.f)
		if t, in := r.hit(&box); in && (!ok || t < best) {
			best, ok = t, true
			hit.Entity = e.id
		}
	}
	if ok {
		hit.Point, hit.Distance = r.at(best).wire(), float32(best)
	}
	return hit, ok, nil
}
