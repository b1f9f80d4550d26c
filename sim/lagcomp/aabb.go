package lagcomp

import (
	"math"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// AABB is an axis-aligned box, Min ≤ Max on every axis. It has the layout of
// movement.Box, so lagcomp.AABB(playerBox) converts one.
type AABB struct {
	Min, Max wire.Vec3
}

// valid reports whether b is finite with Min ≤ Max.
func (b AABB) valid() bool {
	return b.Min.IsFinite() && b.Max.IsFinite() &&
		b.Min.X <= b.Max.X && b.Min.Y <= b.Max.Y && b.Min.Z <= b.Max.Z
}

// vec is a float64 vector indexed by axis.
type vec [3]float64

func vec64(v wire.Vec3) vec { return vec{float64(v.X), float64(v.Y), float64(v.Z)} }

func (v vec) wire() wire.Vec3 { return wire.Vec3{X: float32(v[0]), Y: float32(v[1]), Z: float32(v[2])} }

func finite64(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ray is a validated ray: a finite origin, a unit direction and a finite
// positive length.
type ray struct {
	origin, dir vec
	maxDist     float64
}

// newRay validates and normalises a ray; ok is false for a non-finite origin
// or direction, a zero direction, or a maxDist that is not finite and > 0.
func newRay(origin, dir wire.Vec3, maxDist float32) (ray, bool) {
	o, d, m := vec64(origin), vec64(dir), float64(maxDist)
	if !origin.IsFinite() || !dir.IsFinite() || !finite64(m) || m <= 0 {
		return ray{}, false
	}
	// Float32 components squared cannot overflow a float64.
	l := math.Sqrt(d[0]*d[0] + d[1]*d[1] + d[2]*d[2])
	if l == 0 {
		return ray{}, false
	}
	return ray{origin: o, dir: vec{d[0] / l, d[1] / l, d[2] / l}, maxDist: m}, true
}

// at returns the point at distance t along r.
func (r *ray) at(t float64) vec {
	return vec{r.origin[0] + r.dir[0]*t, r.origin[1] + r.dir[1]*t, r.origin[2] + r.dir[2]*t}
}

// hit returns the distance along r at which it enters b, by the slab method.
// The box is closed: a ray that grazes a face or an edge hits it. An origin
// inside b hits at distance 0. A direction component of zero is handled
// without division (the ray is parallel to that slab: it is inside the slab
// or misses), so no Inf·0 NaN can arise.
func (r *ray) hit(b *AABB) (float64, bool) {
	lo, hi := vec64(b.Min), vec64(b.Max)
	tmin, tmax := 0.0, r.maxDist
	for a := range 3 {
		if r.dir[a] == 0 {
			if r.origin[a] < lo[a] || r.origin[a] > hi[a] {
				return 0, false
			}
			continue
		}
		inv := 1 / r.dir[a]
		t1, t2 := (lo[a]-r.origin[a])*inv, (hi[a]-r.origin[a])*inv
		if t1 > t2 {
			t1, t2 = t2, t1
		}
		tmin, tmax = max(tmin, t1), min(tmax, t2)
		if tmin > tmax {
			return 0, false
		}
	}
	return tmin, true
}

// RayDistance returns the distance along dir from origin at which the ray
// enters b, if it does within maxDist: 0 when origin is inside b (or on its
// surface). dir need not be unit length. An invalid ray (non-finite values, a
// zero dir, maxDist not finite and > 0) or an invalid box never hits. A module
// uses it to stop a shot at the map's walls before asking Raycast.
func (b AABB) RayDistance(origin, dir wire.Vec3, maxDist float32) (float32, bool) {
	r, ok := newRay(origin, dir, maxDist)
	if !ok || !b.valid() {
		return 0, false
	}
	t, ok := r.hit(&b)
	return float32(t), ok
}
