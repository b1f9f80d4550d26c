// Package bot is the headless deathmatch player: a Brain turns what a bot
// knows — its own (predicted) movement state and where the enemies are —
// into one ClientInput per tick. It wanders between the map's waypoints and
// spawn points, steers or jumps around obstacles in its way, turns towards
// the nearest enemy it can see at a bounded rate, strafes while fighting,
// and holds the fire button when its aim is within a tolerance of the
// target and the target is within range.
//
// It is pure logic: no clock, no network, no goroutine. A Brain is
// deterministic (the same Config, seed included, and the same calls give the
// same inputs), allocates nothing per Think once its buffers have grown, and
// is not safe for concurrent use: one Brain per bot.
package bot

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// Defaults of Config.
const (
	DefaultTickRate     = 60
	DefaultTurnRate     = 12  // degrees per tick
	DefaultAimTolerance = 2.5 // degrees
	// ChestHeight is where above an enemy's feet a bot aims, in units.
	ChestHeight = 0.9
)

// ErrInvalidConfig is what New's errors match.
var ErrInvalidConfig = errors.New("bot: invalid config")

// Config configures a Brain.
type Config struct {
	// Seed makes the bot's choices (waypoints, strafing, aim error) repeatable.
	Seed uint64
	// Map gives the waypoints and the obstacles. Required.
	Map *maps.Map
	// Params are the movement Params the server plays with (eye height,
	// player size); zero fields mean the defaults.
	Params movement.Params
	// Weapon gives the range a bot fires within; zero means game.DefaultWeapon().
	Weapon game.Weapon
	// TickRate in Hz: one Think per tick; it sets the inputs' dt. 0 means 60.
	TickRate int
	// TurnRate bounds how far the bot turns per tick, in degrees; 0 means 12.
	TurnRate float32
	// AimTolerance: the bot fires when its yaw and pitch are within this
	// many degrees of its aim point; 0 means 2.5.
	AimTolerance float32
	// AimError, in degrees, offsets each aim point at random (drawn anew
	// every second or so); 0 aims true.
	AimError float32
}

// Enemy is an enemy a bot knows about.
type Enemy struct {
	ID       uint32
	Position wire.Vec3 // feet, as movement.State.Position
}

// Brain is one bot's decision making. Create it with New.
type Brain struct {
	cfg    Config
	params movement.Params
	rng    *rand.Rand
	dt     float32

	m         *maps.Map
	waypoints []wire.Vec3
	goal      int // index into waypoints

	ticks      uint64
	yaw, pitch float32
	started    bool
	last       wire.Vec3 // position at the previous Think

	target    uint32
	hasTarget bool
	strafe    float32 // -1 or 1
	strafeFor int     // ticks until the strafe direction is drawn again
	errYaw    float32 // current aim error
	errPitch  float32
	errFor    int

	avoid      float32 // degrees added to the heading while avoiding
	avoidFor   int
	stuckFrom  wire.Vec3
	stuckTicks int

	near []candidate // scratch
}

type candidate struct {
	e    Enemy
	dist float32
}

// New returns a Brain for cfg.
func New(cfg Config) (*Brain, error) {
	if cfg.Map == nil {
		return nil, fmt.Errorf("%w: no map", ErrInvalidConfig)
	}
	if cfg.TickRate == 0 {
		cfg.TickRate = DefaultTickRate
	}
	if cfg.TurnRate == 0 {
		cfg.TurnRate = DefaultTurnRate
	}
	if cfg.AimTolerance == 0 {
		cfg.AimTolerance = DefaultAimTolerance
	}
	if cfg.Weapon == (game.Weapon{}) {
		cfg.Weapon = game.DefaultWeapon()
	}
	switch {
	case cfg.TickRate < 1 || cfg.TickRate > movement.MaxTickRate:
		return nil, fmt.Errorf("%w: TickRate %d outside 1..%d", ErrInvalidConfig, cfg.TickRate, movement.MaxTickRate)
	case !(cfg.TurnRate > 0 && cfg.TurnRate <= 180):
		return nil, fmt.Errorf("%w: TurnRate %v outside (0, 180]", ErrInvalidConfig, cfg.TurnRate)
	case !(cfg.AimTolerance > 0 && cfg.AimTolerance <= 90):
		return nil, fmt.Errorf("%w: AimTolerance %v outside (0, 90]", ErrInvalidConfig, cfg.AimTolerance)
	case !(cfg.AimError >= 0 && cfg.AimError <= 45):
		return nil, fmt.Errorf("%w: AimError %v outside [0, 45]", ErrInvalidConfig, cfg.AimError)
	}
	// The World fills in and checks the Params.
	w, err := cfg.Map.World(cfg.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	b := &Brain{
		cfg: cfg, params: w.Params(),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5851f42d4c957f2d)),
		dt:     1 / float32(cfg.TickRate),
		strafe: 1,
	}
	b.SetMap(cfg.Map)
	return b, nil
}

// SetMap switches the bot to map m (a map change): new waypoints, and the
// bot forgets its target and its way.
func (b *Brain) SetMap(m *maps.Map) {
	b.m = m
	b.waypoints = append(b.waypoints[:0], m.Waypoints...)
	for _, s := range m.Spawns {
		b.waypoints = append(b.waypoints, s.Position)
	}
	b.started = false
	b.hasTarget = false
}

// Target returns the enemy the bot is fighting, if any.
func (b *Brain) Target() (uint32, bool) { return b.target, b.hasTarget }

// Think returns the bot's input for the next tick, given its own state
// (predicted, or the server's) and the enemies it knows of; it picks the
// nearest one it can see (line of sight on the map, within range). The
// input's InputSeq is left 0 for the caller (a predict.Predictor numbers
// inputs); its ClientTime counts the Brain's ticks.
func (b *Brain) Think(self movement.State, enemies []Enemy) gamemsg.ClientInput {
	b.ticks++
	if !b.started || dist2(self.Position, b.last) > 9 { // first call or a respawn
		b.restart(self)
	}
	b.last = self.Position
	in := gamemsg.ClientInput{DT: b.dt, ClientTime: float32(float64(b.ticks) / float64(b.cfg.TickRate))}
	eye := game.Eye(self, b.params)
	if e, d, ok := b.pickTarget(eye, enemies); ok {
		b.fight(&in, self, eye, e, d)
	} else {
		b.hasTarget = false
		b.wander(&in, self)
	}
	in.LookYaw, in.LookPitch = b.yaw, b.pitch
	return in
}

// restart begins afresh from s: look where s looks, head for a waypoint.
func (b *Brain) restart(s movement.State) {
	b.started = true
	b.yaw, b.pitch = s.Yaw, 0
	b.hasTarget = false
	b.goal = b.rng.IntN(len(b.waypoints))
	b.stuckFrom, b.stuckTicks, b.avoidFor = s.Position, 0, 0
}

// pickTarget returns the nearest enemy in range that the bot can see,
// preferring its current target while it stays visible.
func (b *Brain) pickTarget(eye wire.Vec3, enemies []Enemy) (Enemy, float32, bool) {
	rng := b.cfg.Weapon.Range
	b.near = b.near[:0]
	for _, e := range enemies {
		d := float32(math.Sqrt(dist2(eye, chest(e.Position))))
		if d <= rng {
			b.near = append(b.near, candidate{e, d})
		}
	}
	if b.hasTarget {
		for _, c := range b.near {
			if c.e.ID == b.target && b.m.LineOfSight(eye, chest(c.e.Position)) {
				return c.e, c.dist, true
			}
		}
	}
	slices.SortFunc(b.near, func(x, y candidate) int {
		if x.dist != y.dist {
			if x.dist < y.dist {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.e.ID, y.e.ID)
	})
	for i, c := range b.near {
		if i == 8 { // line of sight is the costly part; far ones can wait
			break
		}
		if b.m.LineOfSight(eye, chest(c.e.Position)) {
			return c.e, c.dist, true
		}
	}
	return Enemy{}, 0, false
}

func chest(feet wire.Vec3) wire.Vec3 { return wire.Vec3{X: feet.X, Y: feet.Y + ChestHeight, Z: feet.Z} }

// fight aims at e, fires when aligned and strafes.
func (b *Brain) fight(in *gamemsg.ClientInput, self movement.State, eye wire.Vec3, e Enemy, d float32) {
	if !b.hasTarget || b.target != e.ID {
		b.target, b.hasTarget = e.ID, true
		b.errFor = 0
	}
	if b.errFor--; b.errFor <= 0 {
		b.errFor = 30 + b.rng.IntN(60)
		b.errYaw = (b.rng.Float32()*2 - 1) * b.cfg.AimError
		b.errPitch = (b.rng.Float32()*2 - 1) * b.cfg.AimError / 2
	}
	yaw, pitch, _ := game.AimAngles(eye, chest(e.Position))
	yaw += b.errYaw
	pitch = min(max(pitch+b.errPitch, -89), 89)
	b.turn(yaw, pitch)
	if abs(angleDiff(b.yaw, yaw)) <= b.cfg.AimTolerance && abs(b.pitch-pitch) <= b.cfg.AimTolerance {
		in.Buttons |= gamemsg.ButtonFire
	}
	if b.strafeFor--; b.strafeFor <= 0 {
		b.strafeFor = 30 + b.rng.IntN(60)
		if b.rng.IntN(2) == 0 {
			b.strafe = -b.strafe
		}
	}
	switch {
	case d > 15:
		in.MoveForward = 1
	case d < 6:
		in.MoveForward = -1
	}
	in.MoveRight = b.strafe
	// Do not walk into walls while fighting: give up the blocked direction.
	if in.MoveForward != 0 && b.blocked(self, b.yaw+90-90*in.MoveForward) {
		in.MoveForward = 0
	}
	if b.blocked(self, b.yaw+90*b.strafe) {
		b.strafe = -b.strafe
		in.MoveRight = b.strafe
	}
	b.stuckTicks = 0
}

// wander walks towards the current waypoint, around obstacles.
func (b *Brain) wander(in *gamemsg.ClientInput, self movement.State) {
	goal := b.waypoints[b.goal]
	if flatDist2(self.Position, goal) < 1.5*1.5 {
		b.nextGoal()
		goal = b.waypoints[b.goal]
	}
	heading, _, _ := game.AimAngles(self.Position, wire.Vec3{X: goal.X, Y: self.Position.Y, Z: goal.Z})
	if b.avoidFor > 0 {
		b.avoidFor--
		heading += b.avoid
	}
	b.turn(heading, 0)
	in.MoveForward = 1
	if abs(angleDiff(b.yaw, heading)) > 60 {
		in.MoveForward = 0.3
	}
	if b.blocked(self, b.yaw) {
		if b.jumpable(self, b.yaw) && self.Grounded {
			in.Buttons |= gamemsg.ButtonJump
		} else if b.avoidFor == 0 {
			b.avoid = 70
			if b.rng.IntN(2) == 0 {
				b.avoid = -70
			}
			b.avoidFor = 20 + b.rng.IntN(20)
		}
	}
	b.checkStuck(in, self)
}

// checkStuck gives up a waypoint the bot has not got closer to for a while.
func (b *Brain) checkStuck(in *gamemsg.ClientInput, self movement.State) {
	if b.stuckTicks++; b.stuckTicks < 45 {
		return
	}
	if flatDist2(self.Position, b.stuckFrom) < 0.5*0.5 {
		b.nextGoal()
		if self.Grounded {
			in.Buttons |= gamemsg.ButtonJump
		}
		b.avoid, b.avoidFor = float32(b.rng.IntN(2)*2-1)*90, 30
	}
	b.stuckFrom, b.stuckTicks = self.Position, 0
}

func (b *Brain) nextGoal() {
	if len(b.waypoints) < 2 {
		return
	}
	n := b.rng.IntN(len(b.waypoints) - 1)
	if n >= b.goal {
		n++
	}
	b.goal = n
}

// probe is how far ahead a bot looks for obstacles, in units.
const probe = 1.2

// blocked reports whether an obstacle stands within probe of the bot's box
// in direction yaw, at knee height.
func (b *Brain) blocked(s movement.State, yaw float32) bool {
	return b.hitAhead(s, yaw, 0.3)
}

// jumpable reports whether what blocks the way is low enough to jump onto.
func (b *Brain) jumpable(s movement.State, yaw float32) bool {
	return !b.hitAhead(s, yaw, 1.25)
}

func (b *Brain) hitAhead(s movement.State, yaw, height float32) bool {
	dir := game.AimDirection(yaw, 0)
	o := wire.Vec3{X: s.Position.X, Y: s.Position.Y + height, Z: s.Position.Z}
	reach := float32(b.params.HalfWidth) + probe
	// Three rays, the centre and the box's two sides, so that a corner
	// does not slip between them.
	side := wire.Vec3{X: dir.Z * float32(b.params.HalfWidth), Z: -dir.X * float32(b.params.HalfWidth)}
	for _, k := range [...]float32{0, 1, -1} {
		p := wire.Vec3{X: o.X + side.X*k, Y: o.Y, Z: o.Z + side.Z*k}
		if b.m.RayBlock(p, dir, reach) < reach {
			return true
		}
	}
	return false
}

// turn moves the look towards (yaw, pitch) by at most TurnRate degrees on
// each axis.
func (b *Brain) turn(yaw, pitch float32) {
	r := b.cfg.TurnRate
	d := angleDiff(b.yaw, yaw)
	b.yaw = normalize(b.yaw + min(max(d, -r), r))
	b.pitch += min(max(pitch-b.pitch, -r), r)
	b.pitch = min(max(b.pitch, -89), 89)
}

// angleDiff returns to − from in (−180, 180].
func angleDiff(from, to float32) float32 {
	d := math.Mod(float64(to-from), 360)
	switch {
	case d > 180:
		d -= 360
	case d <= -180:
		d += 360
	}
	return float32(d)
}

func normalize(yaw float32) float32 {
	y := math.Mod(float64(yaw), 360)
	if y < 0 {
		y += 360
	}
	if float32(y) >= 360 {
		return 0
	}
	return float32(y)
}

func abs(f float32) float32 { return float32(math.Abs(float64(f))) }

func dist2(a, b wire.Vec3) float64 {
	dx, dy, dz := float64(a.X-b.X), float64(a.Y-b.Y), float64(a.Z-b.Z)
	return dx*dx + dy*dy + dz*dz
}

func flatDist2(a, b wire.Vec3) float64 {
	dx, dz := float64(a.X-b.X), float64(a.Z-b.Z)
	return dx*dx + dz*dz
}
