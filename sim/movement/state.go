package movement

import (
	"math"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// State is one player's movement state: exactly the fields of InputAck (§9.1),
// in the same float32 precision, so that an InputAck carries it losslessly.
type State struct {
	Position wire.Vec3 // centre of the bottom face of the player's box, units
	Velocity wire.Vec3 // units/s
	Yaw      float32   // degrees, [0, 360) after a Step
	Pitch    float32   // degrees, [-89, 89] after a Step

	Grounded  bool // standing on an obstacle or the bounds floor (ack flag bit 0)
	Crouching bool // ack flag bit 1
	Sprinting bool // ack flag bit 2
}

// StateFromAck returns the authoritative State an InputAck carries.
func StateFromAck(a gamemsg.InputAck) State {
	return State{
		Position:  a.Position,
		Velocity:  a.Velocity,
		Yaw:       a.Yaw,
		Pitch:     a.Pitch,
		Grounded:  a.Flags&gamemsg.FlagGrounded != 0,
		Crouching: a.Flags&gamemsg.FlagCrouching != 0,
		Sprinting: a.Flags&gamemsg.FlagSprinting != 0,
	}
}

// Ack returns the InputAck that reports s as the state after input seq.
func (s State) Ack(seq uint32) gamemsg.InputAck {
	var f gamemsg.InputFlags
	if s.Grounded {
		f |= gamemsg.FlagGrounded
	}
	if s.Crouching {
		f |= gamemsg.FlagCrouching
	}
	if s.Sprinting {
		f |= gamemsg.FlagSprinting
	}
	return gamemsg.InputAck{
		LastInputSeq: seq, Position: s.Position, Velocity: s.Velocity,
		Yaw: s.Yaw, Pitch: s.Pitch, Flags: f,
	}
}

// IsFinite reports whether every float of s is finite.
func (s State) IsFinite() bool {
	return s.Position.IsFinite() && s.Velocity.IsFinite() && finite(s.Yaw) && finite(s.Pitch)
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// Box is an axis-aligned box, Min ≤ Max on every axis. lagcomp.AABB has the
// same layout, so lagcomp.AABB(b) converts one.
type Box struct {
	Min, Max wire.Vec3
}

// vec is a float64 vector indexed by axis (0 X, 1 Y, 2 Z).
type vec [3]float64

func vec64(v wire.Vec3) vec { return vec{float64(v.X), float64(v.Y), float64(v.Z)} }

func (v vec) wire() wire.Vec3 { return wire.Vec3{X: float32(v[0]), Y: float32(v[1]), Z: float32(v[2])} }

// box64 is a Box in float64, the form collision works in.
type box64 struct{ min, max vec }

func (b Box) box64() box64 { return box64{vec64(b.Min), vec64(b.Max)} }
