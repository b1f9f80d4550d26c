package movement

import (
	"math"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestWalkDirectionsAndTopSpeed(t *testing.T) {
	w := newArena(t, Params{})
	cases := []struct {
		name       string
		fwd, right float32
		yaw        float32
		dirX, dirZ float64
	}{
		{"forward at yaw 0 is +Z", 1, 0, 0, 0, 1},
		{"forward at yaw 90 is +X", 1, 0, 90, 1, 0},
		{"forward at yaw -90 is -X", 1, 0, -90, -1, 0},
		{"right at yaw 0 is +X", 0, 1, 0, 1, 0},
		{"back at yaw 180 is +Z", -1, 0, 180, 0, 1},
		{"right at yaw 90 is -Z", 0, 1, 90, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := State{Position: wire.Vec3{Z: -15}, Grounded: true} // open floor all around
			s = run(t, w, s, input(c.fwd, c.right, c.yaw, 0), 30)   // top speed after ~10 steps
			v := s.Velocity
			if !near(float64(v.X), c.dirX*DefaultWalkSpeed, 1e-3) || !near(float64(v.Z), c.dirZ*DefaultWalkSpeed, 1e-3) || v.Y != 0 {
				t.Fatalf("velocity %+v, want %v·(%v, 0, %v)", v, DefaultWalkSpeed, c.dirX, c.dirZ)
			}
			if !s.Grounded || s.Position.Y != 0 {
				t.Fatalf("left the floor: %+v", s)
			}
		})
	}
}

func TestDiagonalIsNotFaster(t *testing.T) {
	w := newArena(t, Params{})
	open := State{Position: wire.Vec3{X: -15, Z: -15}, Grounded: true}
	s := run(t, w, open, input(1, 1, 0, 0), 30)
	if sp := horizontalSpeed(s.Velocity); !near(sp, DefaultWalkSpeed, 1e-3) {
		t.Fatalf("diagonal speed %v, want %v", sp, DefaultWalkSpeed)
	}
	half := run(t, w, open, input(0.5, 0, 0, 0), 30)
	if sp := horizontalSpeed(half.Velocity); !near(sp, DefaultWalkSpeed/2, 1e-3) {
		t.Fatalf("half-stick speed %v, want %v", sp, DefaultWalkSpeed/2)
	}
}

func TestSprintAndCrouchSpeeds(t *testing.T) {
	w := newArena(t, Params{})
	s := run(t, w, State{Grounded: true}, input(1, 0, 0, gamemsg.ButtonSprint), 120)
	if sp := horizontalSpeed(s.Velocity); !near(sp, DefaultSprintSpeed, 1e-3) || !s.Sprinting {
		t.Fatalf("sprint: speed %v sprinting %v", sp, s.Sprinting)
	}
	s = run(t, w, State{Grounded: true}, input(1, 0, 0, gamemsg.ButtonCrouch|gamemsg.ButtonSprint), 120)
	if sp := horizontalSpeed(s.Velocity); !near(sp, DefaultCrouchSpeed, 1e-3) || !s.Crouching || s.Sprinting {
		t.Fatalf("crouch: speed %v crouching %v sprinting %v", sp, s.Crouching, s.Sprinting)
	}
	if s = mustStep(t, w, State{Grounded: true}, input(0, 0, 0, gamemsg.ButtonSprint)); s.Sprinting {
		t.Fatal("sprinting while standing still")
	}
}

func TestFrictionStopsCompletely(t *testing.T) {
	w := newArena(t, Params{})
	s := run(t, w, State{Grounded: true}, input(1, 0, 0, 0), 60)
	s = run(t, w, s, input(0, 0, 0, 0), 30) // StopSpeed makes the stop finite: 6/(2·6) s < 30 steps
	if s.Velocity != (wire.Vec3{}) {
		t.Fatalf("still moving after 0.5 s without input: %+v", s.Velocity)
	}
}

func TestFallLandJump(t *testing.T) {
	w := newArena(t, Params{})
	s := State{Position: wire.Vec3{Y: 10}}
	steps := 0
	for ; !s.Grounded && steps < 600; steps++ {
		s = mustStep(t, w, s, input(0, 0, 0, 0))
	}
	// Free fall from 10 units at g = 20 takes √(2·10/20) = 1 s = 60 steps.
	if !s.Grounded || s.Position.Y != 0 || s.Velocity.Y != 0 || steps < 58 || steps > 62 {
		t.Fatalf("after %d steps: %+v, want landed at y=0 after ~60 steps", steps, s)
	}
	// Jump: apex v²/2g = 49/40 = 1.225, airborne 2v/g = 0.7 s = 42 steps.
	s = mustStep(t, w, s, input(0, 0, 0, gamemsg.ButtonJump))
	apex := float64(s.Position.Y)
	steps = 1
	for ; !s.Grounded && steps < 600; steps++ {
		s = mustStep(t, w, s, input(0, 0, 0, 0))
		apex = max(apex, float64(s.Position.Y))
	}
	if !near(apex, 1.225, 0.07) || steps < 40 || steps > 44 || s.Position.Y != 0 {
		t.Fatalf("jump: apex %v after %d steps, end %+v", apex, steps, s)
	}
}

func TestLandsOnObstacleAndWalksOff(t *testing.T) {
	w := newArena(t, Params{})
	s := State{Position: wire.Vec3{X: -2, Y: 5, Z: 9}} // above the crate (top y=1)
	s = run(t, w, s, input(0, 0, 0, 0), 120)
	if !s.Grounded || !near(float64(s.Position.Y), 1, 1e-6) {
		t.Fatalf("did not land on the crate: %+v", s)
	}
	s = run(t, w, s, input(-1, 0, 0, 0), 120) // walk back (-Z) off the crate
	if !s.Grounded || s.Position.Y != 0 || s.Position.Z > 7 {
		t.Fatalf("did not walk off the crate onto the floor: %+v", s)
	}
}

func TestWallSlide(t *testing.T) {
	w := newArena(t, Params{})
	// Yaw 45 aims at +X+Z; the wall spans x 5..6, so X stops at 5-0.4 while Z goes on.
	s := State{Position: wire.Vec3{X: 3, Z: -5}, Grounded: true}
	s = run(t, w, s, input(1, 0, 45, 0), 120)
	if !near(float64(s.Position.X), 5-DefaultHalfWidth, 1e-5) || s.Velocity.X != 0 {
		t.Fatalf("not stopped at the wall: %+v", s)
	}
	if s.Position.Z < 0 || s.Velocity.Z <= 0 {
		t.Fatalf("did not slide along the wall: %+v", s)
	}
}

func TestNoTunnellingAtAnySpeed(t *testing.T) {
	thin := []Box{{Min: wire.Vec3{X: 2, Y: 0, Z: -5}, Max: wire.Vec3{X: 2.001, Y: 5, Z: 5}}}
	w, err := NewWorld(Params{WalkSpeed: 9000, MaxSpeed: 9000, Accel: 9000}, arenaBounds, thin)
	if err != nil {
		t.Fatal(err)
	}
	s := State{Grounded: true}
	for range 30 { // 150 units per step against a 0.001-unit wall
		s = mustStep(t, w, s, input(0, 1, 0, 0))
		if float64(s.Position.X)+DefaultHalfWidth > 2+skin {
			t.Fatalf("passed through the wall: %+v", s)
		}
	}
	if !near(float64(s.Position.X), 2-DefaultHalfWidth, 1e-5) {
		t.Fatalf("stopped at %v, want at the wall", s.Position.X)
	}
}

func TestCrouchUnderLowCeiling(t *testing.T) {
	w := newArena(t, Params{})
	// Under the ceiling (y 1.5..2 over x,z -10..-6) only the 1.2 crouching box fits.
	s := State{Position: wire.Vec3{X: -8, Z: -8}, Grounded: true, Crouching: true}
	s = mustStep(t, w, s, input(0, 0, 0, 0)) // crouch released
	if !s.Crouching {
		t.Fatal("stood up into the ceiling")
	}
	s = run(t, w, s, input(0, 1, 0, 0), 90) // walk out towards +X
	if s.Crouching || s.Position.X < -5 {
		t.Fatalf("did not stand up after leaving the ceiling: %+v", s)
	}
	// Walking in standing up is blocked by the ceiling's side.
	s = State{Position: wire.Vec3{X: -4, Z: -8}, Grounded: true}
	s = run(t, w, s, input(0, -1, 0, 0), 90)
	if !near(float64(s.Position.X), -6+DefaultHalfWidth, 1e-5) {
		t.Fatalf("standing player entered the crawl space: %+v", s)
	}
}

func TestBoundsAreWalls(t *testing.T) {
	w := newArena(t, Params{})
	s := run(t, w, State{Position: wire.Vec3{Z: 15}, Grounded: true}, input(1, 0, 0, gamemsg.ButtonSprint), 120)
	if !near(float64(s.Position.Z), 20-DefaultHalfWidth, 1e-5) || s.Velocity.Z != 0 {
		t.Fatalf("not stopped by the bounds: %+v", s)
	}
	// Jump against the bounds ceiling: the bounds are 20 high, start just under it.
	s = State{Position: wire.Vec3{Y: 17.9}, Velocity: wire.Vec3{Y: 20}}
	s = mustStep(t, w, s, input(0, 0, 0, 0))
	if !near(float64(s.Position.Y), 20-DefaultHeight, 1e-5) || s.Velocity.Y != 0 {
		t.Fatalf("not stopped by the bounds ceiling: %+v", s)
	}
}

func TestHugeValuesStayFiniteAndInBounds(t *testing.T) {
	w := newArena(t, Params{})
	big := float32(math.MaxFloat32)
	states := []State{
		{Position: wire.Vec3{X: big, Y: -big, Z: big}},
		{Velocity: wire.Vec3{X: big, Y: big, Z: -big}, Grounded: true},
		{Position: wire.Vec3{X: 1e30}, Velocity: wire.Vec3{Z: 1e30}, Yaw: big, Pitch: -big},
		{Position: wire.Vec3{X: math.SmallestNonzeroFloat32}, Velocity: wire.Vec3{Y: -math.SmallestNonzeroFloat32}},
	}
	inputs := []gamemsg.ClientInput{
		input(1, 1, big, gamemsg.ButtonJump|gamemsg.ButtonSprint),
		input(-1, -1, -big, gamemsg.ButtonCrouch),
		input(math.SmallestNonzeroFloat32, 0, 1e-45, 0),
	}
	for _, s := range states {
		for _, in := range inputs {
			n := mustStep(t, w, s, in)
			assertSane(t, w, n)
			if n.Yaw < 0 || n.Yaw >= 360 {
				t.Fatalf("yaw %v not normalised", n.Yaw)
			}
		}
	}
}

// assertSane checks the invariants every Step result must keep.
func assertSane(t testing.TB, w *World, s State) {
	t.Helper()
	if !s.IsFinite() {
		t.Fatalf("non-finite state %+v", s)
	}
	b := w.PlayerBox(s).box64()
	for a := range 3 {
		if b.min[a] < w.bounds.min[a] || b.max[a] > w.bounds.max[a] {
			t.Fatalf("player box %+v outside the bounds on axis %d", b, a)
		}
	}
	for a := range vec64(s.Velocity) {
		if math.Abs(vec64(s.Velocity)[a]) > w.p.MaxSpeed {
			t.Fatalf("velocity %+v above MaxSpeed", s.Velocity)
		}
	}
}

func TestAckRoundTripIsLossless(t *testing.T) {
	w := newArena(t, Params{})
	s := run(t, w, State{Position: wire.Vec3{X: 1.1, Y: 3.3, Z: -2.7}}, input(0.3, -0.7, 33.3, gamemsg.ButtonCrouch|gamemsg.ButtonSprint), 7)
	s.Sprinting = true // every flag must survive
	a := s.Ack(42)
	parsed, err := gamemsg.ParseInputAck(gamemsg.AppendInputAck(nil, &a))
	if err != nil {
		t.Fatal(err)
	}
	if got := StateFromAck(parsed); got != s || parsed.LastInputSeq != 42 {
		t.Fatalf("round trip: %+v, want %+v", got, s)
	}
}

func TestPlayerBox(t *testing.T) {
	w := newArena(t, Params{})
	b := w.PlayerBox(State{Position: wire.Vec3{X: 1, Y: 2, Z: 3}})
	want := Box{Min: wire.Vec3{X: 0.6, Y: 2, Z: 2.6}, Max: wire.Vec3{X: 1.4, Y: 3.8, Z: 3.4}}
	if b != want {
		t.Fatalf("PlayerBox %+v, want %+v", b, want)
	}
	if c := w.PlayerBox(State{Crouching: true}); c.Max.Y != 1.2 {
		t.Fatalf("crouching box %+v", c)
	}
}

func TestStepAllocatesNothing(t *testing.T) {
	w := newArena(t, Params{})
	s := State{Grounded: true}
	in := input(1, 0.5, 30, gamemsg.ButtonSprint)
	if n := testing.AllocsPerRun(1000, func() { s, _ = w.Step(s, in) }); n != 0 {
		t.Fatalf("Step allocates %v times", n)
	}
}

func BenchmarkStep(b *testing.B) {
	w := newArena(b, Params{})
	s := State{Grounded: true}
	in := input(1, 0.5, 30, gamemsg.ButtonSprint)
	b.ReportAllocs()
	for b.Loop() {
		s, _ = w.Step(s, in)
	}
}
