package predict

import (
	"math/rand/v2"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

const tickRate = 50 // Hz: 20 ms ticks, so a 100 ms link is exactly 5 ticks

// newWorld returns the map both sides simulate: 40×40 bounds with a few
// boxes to collide with.
func newWorld(t testing.TB) *movement.World {
	t.Helper()
	v := func(x, y, z float32) wire.Vec3 { return wire.Vec3{X: x, Y: y, Z: z} }
	w, err := movement.NewWorld(movement.Params{TickRate: tickRate},
		movement.Box{Min: v(-20, 0, -20), Max: v(20, 10, 20)},
		[]movement.Box{
			{Min: v(4, 0, -8), Max: v(5, 3, 8)},
			{Min: v(-9, 0, 3), Max: v(-3, 1, 6)},
			{Min: v(-12, 1.5, -12), Max: v(-6, 2, -6)},
		})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var spawn = movement.State{Position: wire.Vec3{X: 0, Y: 0, Z: -15}, Grounded: true}

func newPredictor(t testing.TB, cfg Config) *Predictor {
	t.Helper()
	p, err := New(newWorld(t), spawn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// script is a player's deterministic controls: runs of held inputs, turning,
// with jumps, sprints and crouches.
type script struct {
	r    *rand.Rand
	held gamemsg.ClientInput
	left int
}

func newScript(seed uint64) *script { return &script{r: rand.New(rand.NewPCG(seed, 99))} }

func (s *script) next(tick int) gamemsg.ClientInput {
	if s.left == 0 {
		axis := []float32{-1, -0.5, 0, 0.5, 1}
		s.held = gamemsg.ClientInput{
			MoveForward: axis[s.r.IntN(5)],
			MoveRight:   axis[s.r.IntN(5)],
			LookYaw:     s.held.LookYaw,
			LookPitch:   float32(s.r.IntN(179) - 89),
			Buttons:     gamemsg.Buttons(s.r.IntN(32)) & (gamemsg.ButtonJump | gamemsg.ButtonSprint | gamemsg.ButtonCrouch | gamemsg.ButtonFire),
		}
		s.left = 5 + s.r.IntN(40)
	}
	s.left--
	in := s.held
	in.LookYaw += float32(tick%7) * 3
	s.held.LookYaw = in.LookYaw
	in.DT = 1.0 / tickRate
	in.ClientTime = float32(tick) / tickRate
	return in
}

// authority is the server side of the tests: it applies each input sequence
// once, in order, with the same movement code.
type authority struct {
	world *movement.World
	state movement.State
	last  uint32
	has   bool
	gaps  int // sequences skipped (never received)
}

// apply applies in unless it was applied already; it reports whether it did.
func (a *authority) apply(t testing.TB, in gamemsg.ClientInput) bool {
	if a.has && !serialAfter(in.InputSeq, a.last) {
		return false
	}
	if a.has && in.InputSeq != a.last+1 {
		a.gaps++
	}
	next, err := a.world.Step(a.state, in)
	if err != nil {
		t.Fatalf("server Step: %v", err)
	}
	a.state, a.last, a.has = next, in.InputSeq, true
	return true
}
