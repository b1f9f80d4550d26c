package movement

// skin is the contact tolerance, in units. A box within skin of a face counts
// as touching it: resting on a floor, or sliding along a wall, does not count
// as overlapping it. It absorbs the rounding of positions to float32 (at most
// 2⁻¹¹ units within MaxCoordinate), so a player stored a hair inside a face
// still meets that face on its next Step instead of passing through it.
const skin = 1.0 / 256

// playerBox returns the player box with its bottom centre at pos.
func (w *World) playerBox(pos vec, height float64) box64 {
	hw := w.p.HalfWidth
	return box64{
		min: vec{pos[0] - hw, pos[1], pos[2] - hw},
		max: vec{pos[0] + hw, pos[1] + height, pos[2] + hw},
	}
}

// overlapsOn reports whether b and o overlap by more than skin on axis a.
func overlapsOn(b, o box64, a int) bool {
	return b.min[a] < o.max[a]-skin && b.max[a] > o.min[a]+skin
}

// sweep returns how far b can move along axis a towards d: d itself when
// nothing is in the way, else the distance to the nearest obstacle face or
// bounds face ahead. An obstacle b already overlaps by more than skin is not
// in the way (a player spawned inside a box can walk out). The result may
// have the opposite sign of d by up to skin, pushing a box that rounding left
// inside a face back onto it.
func (w *World) sweep(b box64, a int, d float64) float64 {
	if d == 0 {
		return 0
	}
	u, v := (a+1)%3, (a+2)%3
	allowed := d
	for _, o := range w.obstacles {
		if !overlapsOn(b, o, u) || !overlapsOn(b, o, v) {
			continue
		}
		if d > 0 && b.max[a] <= o.min[a]+skin {
			allowed = min(allowed, o.min[a]-b.max[a])
		} else if d < 0 && b.min[a] >= o.max[a]-skin {
			allowed = max(allowed, o.max[a]-b.min[a])
		}
	}
	if d > 0 {
		allowed = min(allowed, w.bounds.max[a]-b.max[a])
	} else {
		allowed = max(allowed, w.bounds.min[a]-b.min[a])
	}
	return allowed
}

// fits reports whether b overlaps no obstacle and lies inside the bounds, both
// with the skin tolerance.
func (w *World) fits(b box64) bool {
	for a := range 3 {
		if b.min[a] < w.bounds.min[a]-skin || b.max[a] > w.bounds.max[a]+skin {
			return false
		}
	}
	for _, o := range w.obstacles {
		if overlapsOn(b, o, 0) && overlapsOn(b, o, 1) && overlapsOn(b, o, 2) {
			return false
		}
	}
	return true
}

// clampToBounds keeps the player box of the given height inside the bounds;
// NewWorld guarantees the bounds can hold it.
func (w *World) clampToBounds(pos *vec, height float64) {
	hw := w.p.HalfWidth
	lo := vec{w.bounds.min[0] + hw, w.bounds.min[1], w.bounds.min[2] + hw}
	hi := vec{w.bounds.max[0] - hw, w.bounds.max[1] - height, w.bounds.max[2] - hw}
	for a := range pos {
		pos[a] = min(max(pos[a], lo[a]), hi[a])
	}
}
