package movement

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// arena is a 40×20×40 map with a floor at y=0, a wall, a low ceiling and a
// crate: enough to exercise every collision path.
var (
	arenaBounds    = Box{Min: wire.Vec3{X: -20, Y: 0, Z: -20}, Max: wire.Vec3{X: 20, Y: 20, Z: 20}}
	arenaObstacles = []Box{
		{Min: wire.Vec3{X: 5, Y: 0, Z: -10}, Max: wire.Vec3{X: 6, Y: 4, Z: 10}},      // wall across +X
		{Min: wire.Vec3{X: -10, Y: 1.5, Z: -10}, Max: wire.Vec3{X: -6, Y: 2, Z: -6}}, // low ceiling
		{Min: wire.Vec3{X: -3, Y: 0, Z: 8}, Max: wire.Vec3{X: -1, Y: 1, Z: 10}},      // crate
	}
)

func newArena(t testing.TB, p Params) *World {
	t.Helper()
	w, err := NewWorld(p, arenaBounds, arenaObstacles)
	if err != nil {
		t.Fatalf("NewWorld: %v", err)
	}
	return w
}

// input returns a valid ClientInput.
func input(fwd, right, yaw float32, b gamemsg.Buttons) gamemsg.ClientInput {
	return gamemsg.ClientInput{MoveForward: fwd, MoveRight: right, LookYaw: yaw, Buttons: b, DT: 1.0 / 60}
}

// mustStep steps and fails the test on an error.
func mustStep(t testing.TB, w *World, s State, in gamemsg.ClientInput) State {
	t.Helper()
	n, err := w.Step(s, in)
	if err != nil {
		t.Fatalf("Step(%+v, %+v): %v", s, in, err)
	}
	return n
}

// run applies in n times.
func run(t testing.TB, w *World, s State, in gamemsg.ClientInput, n int) State {
	t.Helper()
	for range n {
		s = mustStep(t, w, s, in)
	}
	return s
}

// randomInput draws a valid input, biased towards the extremes and buttons.
func randomInput(r *rand.Rand, seq uint32) gamemsg.ClientInput {
	axis := func() float32 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return 1
		case 2:
			return -1
		}
		return r.Float32()*2 - 1
	}
	return gamemsg.ClientInput{
		InputSeq:    seq,
		MoveForward: axis(),
		MoveRight:   axis(),
		LookYaw:     r.Float32()*1440 - 720,
		LookPitch:   r.Float32()*178 - 89,
		Buttons:     gamemsg.Buttons(r.IntN(32)) &^ gamemsg.ButtonFire,
		DT:          1.0 / 60,
		ClientTime:  float32(seq) / 60,
	}
}

func horizontalSpeed(v wire.Vec3) float64 { return math.Hypot(float64(v.X), float64(v.Z)) }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
