package movement

import (
	"fmt"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// MaxCoordinate bounds every coordinate of a World (bounds and obstacles):
// |c| ≤ 16384 units. Up there a float32 position is exact to 2⁻¹⁰ units,
// comfortably under the contact tolerance (skin), so rounding a position to
// float32 can never carry a player through a face it rests on.
const MaxCoordinate = 16384

// World is what a Step moves in: the Params, the map bounds and the box
// obstacles. It is immutable after NewWorld and safe for concurrent use.
type World struct {
	p         Params
	dt        float64
	bounds    box64
	obstacles []box64
}

// NewWorld returns a World of the given Params (zero fields mean their
// defaults), map bounds and obstacles. The bounds must be a box at least as
// large as the standing player box; every box must be finite, within
// ±MaxCoordinate and have Min ≤ Max. An obstacle may overlap others or stick
// out of the bounds. obstacles is copied.
//
// A Step costs O(len(obstacles)); maps of a few thousand boxes are fine.
func NewWorld(p Params, bounds Box, obstacles []Box) (*World, error) {
	p.populate()
	if err := p.validate(); err != nil {
		return nil, err
	}
	w := &World{p: p, dt: 1 / float64(p.TickRate), bounds: bounds.box64()}
	if err := checkBox(w.bounds); err != nil {
		return nil, fmt.Errorf("%w: bounds: %v", ErrInvalidWorld, err)
	}
	for a := range 3 {
		need := 2 * p.HalfWidth
		if a == 1 {
			need = p.Height
		}
		if w.bounds.max[a]-w.bounds.min[a] < need {
			return nil, fmt.Errorf("%w: bounds are smaller than the player box on axis %c", ErrInvalidWorld, "XYZ"[a])
		}
	}
	w.obstacles = make([]box64, len(obstacles))
	for i, o := range obstacles {
		w.obstacles[i] = o.box64()
		if err := checkBox(w.obstacles[i]); err != nil {
			return nil, fmt.Errorf("%w: obstacle %d: %v", ErrInvalidWorld, i, err)
		}
	}
	return w, nil
}

func checkBox(b box64) error {
	for a := range 3 {
		lo, hi := b.min[a], b.max[a]
		if !(math.Abs(lo) <= MaxCoordinate && math.Abs(hi) <= MaxCoordinate) { // false for NaN
			return fmt.Errorf("axis %c: [%v, %v] not finite or beyond ±%d", "XYZ"[a], lo, hi, MaxCoordinate)
		}
		if lo > hi {
			return fmt.Errorf("axis %c: min %v above max %v", "XYZ"[a], lo, hi)
		}
	}
	return nil
}

// Params returns the World's Params with defaults filled in.
func (w *World) Params() Params { return w.p }

// StepDuration returns the time one Step simulates, 1/TickRate, rounded down
// to the nanosecond (Step itself uses the exact float64 1/TickRate).
func (w *World) StepDuration() time.Duration { return time.Second / time.Duration(w.p.TickRate) }

// PlayerBox returns the box a player in state s occupies (crouching or not).
func (w *World) PlayerBox(s State) Box {
	h := w.p.Height
	if s.Crouching {
		h = w.p.CrouchHeight
	}
	return w.playerBox(vec64(s.Position), h).wire()
}

func (b box64) wire() Box { return Box{b.min.wire(), b.max.wire()} }

// Step advances s by one input over the fixed step 1/TickRate.
//
// The input's dt field is validated (§9.1) but not simulated: the server
// simulates every input over its own tick, so a client cannot move faster by
// claiming a long dt; a client sends one input per tick. Rate-limiting how
// many inputs a client may have applied per tick is the server's business.
//
// A malformed input (ErrInvalidInput) or a non-finite s (ErrInvalidState) is
// refused: Step returns s unchanged with the error. Otherwise the result is
// finite, inside the bounds, and a pure function of (World, s, in).
func (w *World) Step(s State, in gamemsg.ClientInput) (State, error) {
	if err := ValidateInput(in); err != nil {
		return s, err
	}
	if !s.IsFinite() {
		return s, ErrInvalidState
	}
	p := &w.p
	dt := w.dt
	pos, vel := vec64(s.Position), vec64(s.Velocity)
	next := State{Yaw: normalizeYaw(in.LookYaw), Pitch: in.LookPitch}

	// Letting go of crouch under a low ceiling keeps the player crouched.
	next.Crouching = in.Buttons&gamemsg.ButtonCrouch != 0 ||
		(s.Crouching && !w.fits(w.playerBox(pos, p.Height)))

	wish, wishLen := wishDir(next.Yaw, float64(in.MoveForward), float64(in.MoveRight))
	speed := p.WalkSpeed
	switch {
	case next.Crouching:
		speed = p.CrouchSpeed
	case in.Buttons&gamemsg.ButtonSprint != 0 && wishLen > 0:
		speed = p.SprintSpeed
		next.Sprinting = true
	}
	wishSpeed := float64(speed * min(wishLen, 1))

	grounded := s.Grounded
	if grounded && in.Buttons&gamemsg.ButtonJump != 0 {
		vel[1] = p.JumpSpeed
		grounded = false
	}
	if grounded {
		friction(&vel, p.Friction, p.StopSpeed, dt)
		accelerate(&vel, wish, wishSpeed, p.Accel, dt)
	} else {
		accelerate(&vel, wish, wishSpeed, p.AirAccel, dt)
	}
	vel[1] -= float64(p.Gravity * dt)
	vel[1] = max(vel[1], -p.MaxFallSpeed)
	for a := range vel {
		vel[a] = min(max(vel[a], -p.MaxSpeed), p.MaxSpeed)
	}

	height := p.Height
	if next.Crouching {
		height = p.CrouchHeight
	}
	for _, a := range [...]int{1, 0, 2} {
		d := float64(vel[a] * dt)
		moved := w.sweep(w.playerBox(pos, height), a, d)
		pos[a] += moved
		if moved != d {
			if a == 1 && d < 0 {
				next.Grounded = true
			}
			vel[a] = 0
		}
	}
	w.clampToBounds(&pos, height)
	next.Position, next.Velocity = pos.wire(), vel.wire()
	return next, nil
}

// wishDir returns the unit horizontal direction the move axes ask for, and the
// length of the axes vector (0 when standing still, up to √2 diagonally).
func wishDir(yaw float32, fwd, right float64) (vec, float64) {
	sin, cos := sinCosDeg(float64(yaw))
	// forward = (sin, 0, cos), right = (cos, 0, -sin)
	x := float64(sin*fwd) + float64(cos*right)
	z := float64(cos*fwd) - float64(sin*right)
	l := math.Sqrt(float64(x*x) + float64(z*z))
	if l == 0 {
		return vec{}, 0
	}
	return vec{x / l, 0, z / l}, l
}

// friction slows the horizontal velocity (Quake's ground friction).
func friction(v *vec, friction, stopSpeed, dt float64) {
	speed := math.Sqrt(float64(v[0]*v[0]) + float64(v[2]*v[2]))
	if speed == 0 {
		return
	}
	drop := float64(float64(max(speed, stopSpeed)*friction) * dt)
	scale := max(speed-drop, 0) / speed
	v[0] = float64(v[0] * scale)
	v[2] = float64(v[2] * scale)
}

// accelerate adds up to accel·wishSpeed·dt along wish, never pushing the speed
// along wish above wishSpeed (Quake's rule).
func accelerate(v *vec, wish vec, wishSpeed, accel, dt float64) {
	cur := float64(v[0]*wish[0]) + float64(v[2]*wish[2])
	add := wishSpeed - cur
	if add <= 0 {
		return
	}
	acc := min(float64(float64(accel*wishSpeed)*dt), add)
	v[0] += float64(acc * wish[0])
	v[2] += float64(acc * wish[2])
}
