package movement

import (
	"fmt"
	"math"
)

// Defaults of Params, in the units of its fields.
const (
	DefaultTickRate     = 60
	DefaultWalkSpeed    = 6.0
	DefaultSprintSpeed  = 9.0
	DefaultCrouchSpeed  = 3.0
	DefaultAccel        = 10.0
	DefaultAirAccel     = 1.0
	DefaultFriction     = 6.0
	DefaultStopSpeed    = 2.0
	DefaultGravity      = 20.0
	DefaultJumpSpeed    = 7.0
	DefaultMaxFallSpeed = 50.0
	DefaultMaxSpeed     = 30.0
	DefaultHalfWidth    = 0.4
	DefaultHeight       = 1.8
	DefaultCrouchHeight = 1.2

	// MaxTickRate bounds Params.TickRate.
	MaxTickRate = 1000
	// maxParam bounds every float parameter: far beyond any game's needs, small
	// enough that no product of two parameters and a step can overflow.
	maxParam = 1e4
)

// Params are the movement constants. The server and every predicting client
// must use the same Params (and the same World) or prediction diverges. The
// zero value of each field means its documented default, so a field cannot be
// set to zero: use a tiny value instead.
type Params struct {
	// TickRate in Hz: every ClientInput is simulated over exactly 1/TickRate
	// seconds, whatever its dt field says (see World.Step). 0 means 60.
	TickRate int

	WalkSpeed   float64 // units/s; 0 means 6
	SprintSpeed float64 // units/s with ButtonSprint; 0 means 9
	CrouchSpeed float64 // units/s with ButtonCrouch; 0 means 3

	// Accel is the ground acceleration in 1/s: each step adds up to
	// Accel·wishSpeed·dt towards the wished velocity (Quake's rule). 0 means 10.
	Accel float64
	// AirAccel is Accel while airborne, in 1/s. 0 means 1.
	AirAccel float64
	// Friction in 1/s: on the ground, the horizontal speed loses
	// max(speed, StopSpeed)·Friction·dt per step. 0 means 6.
	Friction float64
	// StopSpeed in units/s: below it friction acts as if the speed were
	// StopSpeed, so a player comes to a full stop. 0 means 2.
	StopSpeed float64

	Gravity      float64 // units/s²; 0 means 20
	JumpSpeed    float64 // upward units/s given by ButtonJump on the ground; 0 means 7
	MaxFallSpeed float64 // units/s, the terminal downward speed; 0 means 50
	// MaxSpeed in units/s caps each velocity component, so that no sequence of
	// inputs can grow a velocity without bound. 0 means 30.
	MaxSpeed float64

	HalfWidth    float64 // half the player box's X and Z extent, units; 0 means 0.4
	Height       float64 // standing box height, units; 0 means 1.8
	CrouchHeight float64 // crouching box height, units, ≤ Height; 0 means 1.2
}

// populate replaces every zero field with its default.
func (p *Params) populate() {
	if p.TickRate == 0 {
		p.TickRate = DefaultTickRate
	}
	def := func(f *float64, d float64) {
		if *f == 0 {
			*f = d
		}
	}
	def(&p.WalkSpeed, DefaultWalkSpeed)
	def(&p.SprintSpeed, DefaultSprintSpeed)
	def(&p.CrouchSpeed, DefaultCrouchSpeed)
	def(&p.Accel, DefaultAccel)
	def(&p.AirAccel, DefaultAirAccel)
	def(&p.Friction, DefaultFriction)
	def(&p.StopSpeed, DefaultStopSpeed)
	def(&p.Gravity, DefaultGravity)
	def(&p.JumpSpeed, DefaultJumpSpeed)
	def(&p.MaxFallSpeed, DefaultMaxFallSpeed)
	def(&p.MaxSpeed, DefaultMaxSpeed)
	def(&p.HalfWidth, DefaultHalfWidth)
	def(&p.Height, DefaultHeight)
	def(&p.CrouchHeight, DefaultCrouchHeight)
}

// validate checks populated Params.
func (p *Params) validate() error {
	if p.TickRate < 1 || p.TickRate > MaxTickRate {
		return fmt.Errorf("%w: TickRate %d Hz outside 1..%d", ErrInvalidParams, p.TickRate, MaxTickRate)
	}
	fields := [...]struct {
		name string
		v    float64
	}{
		{"WalkSpeed", p.WalkSpeed}, {"SprintSpeed", p.SprintSpeed}, {"CrouchSpeed", p.CrouchSpeed},
		{"Accel", p.Accel}, {"AirAccel", p.AirAccel}, {"Friction", p.Friction},
		{"StopSpeed", p.StopSpeed}, {"Gravity", p.Gravity}, {"JumpSpeed", p.JumpSpeed},
		{"MaxFallSpeed", p.MaxFallSpeed}, {"MaxSpeed", p.MaxSpeed},
		{"HalfWidth", p.HalfWidth}, {"Height", p.Height}, {"CrouchHeight", p.CrouchHeight},
	}
	for _, f := range fields {
		if math.IsNaN(f.v) || f.v <= 0 || f.v > maxParam {
			return fmt.Errorf("%w: %s = %v, want a value in (0, %g]", ErrInvalidParams, f.name, f.v, float64(maxParam))
		}
	}
	if p.CrouchHeight > p.Height {
		return fmt.Errorf("%w: CrouchHeight %v above Height %v", ErrInvalidParams, p.CrouchHeight, p.Height)
	}
	return nil
}
