package game

import (
	"math"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// EyeBelowTop is how far below the top of the player's box the eye is, in
// units: shots start there.
const EyeBelowTop = 0.2

// Eye returns where a player in state s looks from: EyeBelowTop under the
// top of its box (standing or crouching). p is the World's Params
// (World.Params, defaults filled in).
func Eye(s movement.State, p movement.Params) wire.Vec3 {
	h := p.Height
	if s.Crouching {
		h = p.CrouchHeight
	}
	return wire.Vec3{X: s.Position.X, Y: s.Position.Y + float32(h-EyeBelowTop), Z: s.Position.Z}
}

// AimDirection returns the unit vector a player looking at yaw and pitch (in
// degrees) faces: yaw 0 is +Z, yaw 90 is +X (sim/movement's convention),
// positive pitch looks up.
func AimDirection(yaw, pitch float32) wire.Vec3 {
	y, p := float64(yaw)*math.Pi/180, float64(pitch)*math.Pi/180
	sy, cy := math.Sincos(y)
	sp, cp := math.Sincos(p)
	return wire.Vec3{X: float32(sy * cp), Y: float32(sp), Z: float32(cy * cp)}
}

// AimAngles returns the yaw in [0, 360) and the pitch in [-89, 89] (degrees)
// that look from from towards to, and the distance between them. Equal
// points give yaw 0, pitch 0.
func AimAngles(from, to wire.Vec3) (yaw, pitch, dist float32) {
	dx, dy, dz := float64(to.X-from.X), float64(to.Y-from.Y), float64(to.Z-from.Z)
	flat := math.Hypot(dx, dz)
	d := math.Hypot(flat, dy)
	if d == 0 {
		return 0, 0, 0
	}
	yd := math.Atan2(dx, dz) * 180 / math.Pi
	if yd < 0 {
		yd += 360
	}
	pd := math.Atan2(dy, flat) * 180 / math.Pi
	yaw = float32(yd)
	if yaw >= 360 {
		yaw = 0
	}
	return yaw, float32(min(max(pd, -89), 89)), float32(d)
}
