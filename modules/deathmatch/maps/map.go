package maps

import (
	"math"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// Limits of a map file.
const (
	MaxObstacles = 1024
	MaxSpawns    = 256
	MaxWaypoints = 1024
	// MaxFileSize bounds a map file, in bytes.
	MaxFileSize = 1 << 20
	// MaxNameLen bounds a map name, in bytes (MatchStart's map field).
	MaxNameLen = gamemsg.MaxMapLen
)

// Teams a spawn point may be reserved for.
const (
	AnyTeam  uint8 = 0
	TeamRed  uint8 = 1
	TeamBlue uint8 = 2
)

// Spawn is a spawn point.
type Spawn struct {
	Position wire.Vec3 // bottom centre of the player's box
	Yaw      float32   // degrees, as in movement.State
	Team     uint8     // AnyTeam, TeamRed or TeamBlue
}

// Map is one validated map. Treat it as read-only: it is shared.
type Map struct {
	Name      string
	Source    string // the file it was loaded from, for messages
	Bounds    movement.Box
	Obstacles []movement.Box
	Spawns    []Spawn
	Waypoints []wire.Vec3 // besides the spawns; may be empty
}

// World returns the movement World of the map with the given Params.
func (m *Map) World(p movement.Params) (*movement.World, error) {
	return movement.NewWorld(p, m.Bounds, m.Obstacles)
}

// SpawnsFor appends to dst the indices of the spawns a player of team may use:
// with teams (team 1 or 2), its own and AnyTeam's; without (team 0), all.
func (m *Map) SpawnsFor(team uint8, dst []int) []int {
	for i, s := range m.Spawns {
		if team == AnyTeam || s.Team == AnyTeam || s.Team == team {
			dst = append(dst, i)
		}
	}
	return dst
}

// RayBlock returns how far the ray from origin along dir (any non-zero
// length) travels before it enters an obstacle, up to maxDist: maxDist when
// nothing is in the way, 0 when origin is inside one. The bounds do not
// block. An invalid ray (non-finite, zero dir, maxDist not finite and > 0)
// returns 0.
func (m *Map) RayBlock(origin, dir wire.Vec3, maxDist float32) float32 {
	if !origin.IsFinite() || !dir.IsFinite() || !(maxDist > 0) || math.IsInf(float64(maxDist), 0) ||
		(dir == wire.Vec3{}) {
		return 0
	}
	best := maxDist
	reach := segmentBox(origin, dir, maxDist)
	for _, o := range m.Obstacles {
		if !touches(reach, o) {
			continue // the ray cannot enter it: most obstacles of a map, for a bot's short probes
		}
		if t, ok := lagcomp.AABB(o).RayDistance(origin, dir, best); ok && t < best {
			best = t
		}
	}
	return best
}

// segmentBox is a box around the ray's segment from origin to maxDist along
// dir, widened by a margin far above the rounding of the exact test
// (lagcomp's, in float64), so that no obstacle the ray enters is outside
// it.
func segmentBox(origin, dir wire.Vec3, maxDist float32) movement.Box {
	d := [3]float64{float64(dir.X), float64(dir.Y), float64(dir.Z)}
	l := math.Sqrt(d[0]*d[0] + d[1]*d[1] + d[2]*d[2])
	o := [3]float64{float64(origin.X), float64(origin.Y), float64(origin.Z)}
	var lo, hi [3]float32
	for i := range 3 {
		end := o[i] + d[i]/l*float64(maxDist)
		margin := 1e-3 * (1 + math.Abs(o[i]) + math.Abs(end))
		lo[i], hi[i] = float32(min(o[i], end)-margin), float32(max(o[i], end)+margin)
	}
	return movement.Box{Min: wire.Vec3{X: lo[0], Y: lo[1], Z: lo[2]}, Max: wire.Vec3{X: hi[0], Y: hi[1], Z: hi[2]}}
}

// touches reports whether the closed boxes a and b share a point.
func touches(a, b movement.Box) bool {
	return a.Min.X <= b.Max.X && b.Min.X <= a.Max.X &&
		a.Min.Y <= b.Max.Y && b.Min.Y <= a.Max.Y &&
		a.Min.Z <= b.Max.Z && b.Min.Z <= a.Max.Z
}

// LineOfSight reports whether the segment from a to b meets no obstacle
// (grazing a face counts as blocked). Equal points see each other.
func (m *Map) LineOfSight(a, b wire.Vec3) bool {
	d := wire.Vec3{X: b.X - a.X, Y: b.Y - a.Y, Z: b.Z - a.Z}
	dist := float32(math.Sqrt(float64(d.X)*float64(d.X) + float64(d.Y)*float64(d.Y) + float64(d.Z)*float64(d.Z)))
	if dist == 0 {
		return true
	}
	return m.RayBlock(a, d, dist) >= dist
}

// playerBox is the default player box standing at pos.
func playerBox(pos wire.Vec3) movement.Box {
	const hw, h = movement.DefaultHalfWidth, movement.DefaultHeight
	return movement.Box{
		Min: wire.Vec3{X: pos.X - hw, Y: pos.Y, Z: pos.Z - hw},
		Max: wire.Vec3{X: pos.X + hw, Y: pos.Y + h, Z: pos.Z + hw},
	}
}

// contactTolerance lets a box rest on or against another's face without
// counting as overlapping it (the movement package's skin).
const contactTolerance = 1.0 / 256

// overlaps reports whether a and b overlap by more than the tolerance on
// every axis.
func overlaps(a, b movement.Box) bool {
	return a.Min.X < b.Max.X-contactTolerance && a.Max.X > b.Min.X+contactTolerance &&
		a.Min.Y < b.Max.Y-contactTolerance && a.Max.Y > b.Min.Y+contactTolerance &&
		a.Min.Z < b.Max.Z-contactTolerance && a.Max.Z > b.Min.Z+contactTolerance
}

// inside reports whether a lies within b, with the tolerance.
func inside(a, b movement.Box) bool {
	return a.Min.X >= b.Min.X-contactTolerance && a.Max.X <= b.Max.X+contactTolerance &&
		a.Min.Y >= b.Min.Y-contactTolerance && a.Max.Y <= b.Max.Y+contactTolerance &&
		a.Min.Z >= b.Min.Z-contactTolerance && a.Max.Z <= b.Max.Z+contactTolerance
}
