package bot

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

func builtin(t testing.TB, name string) *maps.Map {
	t.Helper()
	c, err := maps.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := c.Get(name)
	if !ok {
		t.Fatalf("no map %s", name)
	}
	return m
}

func newBrain(t testing.TB, cfg Config) *Brain {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConfig(t *testing.T) {
	m := builtin(t, "arena")
	for _, c := range []Config{
		{},
		{Map: m, TickRate: -1},
		{Map: m, TurnRate: 200},
		{Map: m, AimTolerance: -1},
		{Map: m, AimError: 50},
		{Map: m, Params: movement.Params{Height: -1}},
	} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v", c, err)
		}
	}
}

// walk runs a bot on m for n ticks against enemies standing still, stepping
// its own movement with the server's code, and returns its inputs.
func walk(t testing.TB, b *Brain, m *maps.Map, start movement.State, enemies []Enemy, n int) ([]gamemsg.ClientInput, movement.State) {
	t.Helper()
	w, err := m.World(movement.Params{})
	if err != nil {
		t.Fatal(err)
	}
	s := start
	var ins []gamemsg.ClientInput
	for range n {
		in := b.Think(s, enemies)
		in.InputSeq = uint32(len(ins) + 1)
		if err := movement.ValidateInput(in); err != nil {
			t.Fatalf("tick %d: invalid input %+v: %v", len(ins), in, err)
		}
		ins = append(ins, in)
		if s, err = w.Step(s, in); err != nil {
			t.Fatal(err)
		}
	}
	return ins, s
}

func spawnState(m *maps.Map, i int) movement.State {
	return movement.State{Position: m.Spawns[i].Position, Yaw: m.Spawns[i].Yaw}
}

func TestDeterministic(t *testing.T) {
	m := builtin(t, "warehouse")
	enemies := []Enemy{{ID: 5, Position: wire.Vec3{X: 20}}}
	a, _ := walk(t, newBrain(t, Config{Seed: 7, Map: m, AimError: 2}), m, spawnState(m, 0), enemies, 1200)
	b, _ := walk(t, newBrain(t, Config{Seed: 7, Map: m, AimError: 2}), m, spawnState(m, 0), enemies, 1200)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different inputs")
	}
	c, _ := walk(t, newBrain(t, Config{Seed: 8, Map: m, AimError: 2}), m, spawnState(m, 0), enemies, 1200)
	if slices.Equal(a, c) {
		t.Fatal("another seed, the same inputs")
	}
}

// TestWandersTheMap: alone, a bot covers the map: in a minute it reaches
// many different waypoints and never stays stuck.
func TestWandersTheMap(t *testing.T) {
	for _, name := range []string{"arena", "warehouse", "courtyard"} {
		t.Run(name, func(t *testing.T) {
			m := builtin(t, name)
			b := newBrain(t, Config{Seed: 1, Map: m})
			w, _ := m.World(movement.Params{})
			s := spawnState(m, 0)
			reached := map[int]bool{}
			still := 0
			for i := range 3600 {
				in := b.Think(s, nil)
				in.InputSeq = uint32(i + 1)
				next, err := w.Step(s, in)
				if err != nil {
					t.Fatal(err)
				}
				if flatDist2(next.Position, s.Position) < 1e-6 {
					still++
				} else {
					still = 0
				}
				if still > 120 {
					t.Fatalf("stuck for 2 s at %v", s.Position)
				}
				s = next
				for j, wp := range b.waypoints {
					if flatDist2(s.Position, wp) < 1.5*1.5 {
						reached[j] = true
					}
				}
			}
			t.Logf("%s: reached %d of %d waypoints in a minute", name, len(reached), len(b.waypoints))
			if len(reached) < 8 {
				t.Fatalf("reached %d waypoints in a minute", len(reached))
			}
		})
	}
}

// TestAimsAndFires: the bot picks the nearest enemy it can see, turns to it
// at its turn rate and fires once aligned.
func TestAimsAndFires(t *testing.T) {
	m := builtin(t, "arena")
	self := movement.State{Position: wire.Vec3{X: -8, Z: -20}, Yaw: 0, Grounded: true}
	hidden := Enemy{ID: 1, Position: wire.Vec3{X: 0, Z: -7}}    // behind the south cover wall, nearer
	visible := Enemy{ID: 2, Position: wire.Vec3{X: -20, Z: -8}} // in the open
	far := Enemy{ID: 3, Position: wire.Vec3{X: -8, Z: 200}}     // out of range
	b := newBrain(t, Config{Seed: 2, Map: m})
	var fired int
	var firstFire int
	for i := range 60 {
		in := b.Think(self, []Enemy{far, hidden, visible})
		if id, ok := b.Target(); !ok || id != 2 {
			t.Fatalf("tick %d: target %d %v, want 2", i, id, ok)
		}
		if in.Buttons&gamemsg.ButtonFire != 0 {
			if fired == 0 {
				firstFire = i
			}
			fired++
		}
		self.Yaw, self.Pitch = in.LookYaw, in.LookPitch
	}
	want, _, _ := game.AimAngles(game.Eye(self, movement.Params{Height: 1.8, CrouchHeight: 1.2}), chest(visible.Position))
	if math.Abs(float64(angleDiff(self.Yaw, want))) > 0.01 {
		t.Fatalf("yaw %v, want %v", self.Yaw, want)
	}
	// From yaw 0 to about 315: 45° at 12°/tick is 4 ticks of turning.
	if firstFire < 2 || firstFire > 5 || fired < 55 {
		t.Fatalf("first fire at tick %d, %d ticks firing", firstFire, fired)
	}
	// Nobody visible: no target, no fire.
	b2 := newBrain(t, Config{Seed: 2, Map: m})
	for range 30 {
		in := b2.Think(self, []Enemy{hidden, far})
		if in.Buttons&gamemsg.ButtonFire != 0 {
			t.Fatal("fired at nobody")
		}
		if _, ok := b2.Target(); ok {
			t.Fatal("has a target it cannot see")
		}
	}
}

func TestSetMapAndRespawn(t *testing.T) {
	a, w := builtin(t, "arena"), builtin(t, "warehouse")
	b := newBrain(t, Config{Seed: 3, Map: a})
	b.Think(spawnState(a, 0), nil)
	b.SetMap(w)
	if len(b.waypoints) != len(w.Waypoints)+len(w.Spawns) {
		t.Fatalf("%d waypoints after SetMap", len(b.waypoints))
	}
	// A jump of position is a respawn: the bot looks where the spawn faces.
	in := b.Think(spawnState(w, 4), nil)
	if angleDiff(in.LookYaw, w.Spawns[4].Yaw) > DefaultTurnRate {
		t.Fatalf("yaw %v after respawn facing %v", in.LookYaw, w.Spawns[4].Yaw)
	}
}

// TestInputsAlwaysValid: whatever states and enemies it is shown, a bot's
// input passes §9.1.
func TestInputsAlwaysValid(t *testing.T) {
	m := builtin(t, "courtyard")
	b := newBrain(t, Config{Seed: 4, Map: m, AimError: 45, TurnRate: 180})
	r := rand.New(rand.NewPCG(1, 2))
	coord := func() float32 { return float32(r.Float64()*60 - 30) }
	for i := range 5000 {
		s := movement.State{Position: wire.Vec3{X: coord(), Y: float32(r.Float64() * 10), Z: coord()},
			Yaw: float32(r.Float64()*1e4 - 5e3), Pitch: float32(r.Float64()*178 - 89), Grounded: r.IntN(2) == 0}
		var enemies []Enemy
		for range r.IntN(5) {
			enemies = append(enemies, Enemy{ID: uint32(r.IntN(10) + 1), Position: wire.Vec3{X: coord(), Y: float32(r.Float64() * 20), Z: coord()}})
		}
		if err := movement.ValidateInput(b.Think(s, enemies)); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}
}

func TestThinkAllocatesNothing(t *testing.T) {
	m := builtin(t, "arena")
	b := newBrain(t, Config{Seed: 5, Map: m})
	enemies := make([]Enemy, 63)
	for i := range enemies {
		enemies[i] = Enemy{ID: uint32(i + 1), Position: wire.Vec3{X: float32(i%16)*2 - 16, Z: float32(i/16)*8 - 16}}
	}
	s := spawnState(m, 0)
	b.Think(s, enemies)
	if a := testing.AllocsPerRun(100, func() { b.Think(s, enemies) }); a != 0 {
		t.Fatalf("%v allocations per Think", a)
	}
}

func BenchmarkThink(b *testing.B) {
	m := builtin(b, "arena")
	br := newBrain(b, Config{Seed: 5, Map: m})
	enemies := make([]Enemy, 63)
	for i := range enemies {
		enemies[i] = Enemy{ID: uint32(i + 1), Position: wire.Vec3{X: float32(i%16)*2 - 16, Z: float32(i/16)*8 - 16}}
	}
	s := spawnState(m, 0)
	b.ReportAllocs()
	for b.Loop() {
		br.Think(s, enemies)
	}
}
