package maps

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// minimal is a valid map file that the table below breaks one way at a time.
const minimal = `
name = "tiny"
[bounds]
min = [-10, 0, -10]
max = [10, 5, 10]
[[obstacle]]
min = [-1, 0, -1]
max = [1, 2, 1]
[[spawn]]
position = [-5, 0, -5]
yaw = 45
`

func TestParseMinimal(t *testing.T) {
	m, err := Parse([]byte(minimal), "dir/tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Map{
		Name: "tiny", Source: "dir/tiny.toml",
		Bounds:    movement.Box{Min: wire.Vec3{X: -10, Z: -10}, Max: wire.Vec3{X: 10, Y: 5, Z: 10}},
		Obstacles: []movement.Box{{Min: wire.Vec3{X: -1, Z: -1}, Max: wire.Vec3{X: 1, Y: 2, Z: 1}}},
		Spawns:    []Spawn{{Position: wire.Vec3{X: -5, Z: -5}, Yaw: 45}},
		Waypoints: []wire.Vec3{},
	}
	if m.Name != want.Name || m.Source != want.Source || m.Bounds != want.Bounds ||
		!slices.Equal(m.Obstacles, want.Obstacles) || !slices.Equal(m.Spawns, want.Spawns) || len(m.Waypoints) != 0 {
		t.Fatalf("got %+v\nwant %+v", *m, want)
	}
	if _, err := m.World(movement.Params{}); err != nil {
		t.Fatalf("World: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	spawnOn := func(extra string) string { return minimal + extra }
	cases := []struct {
		name, file, text, want string
	}{
		{"syntax", "tiny.toml", "name = \n", "tiny.toml: line 1: syntax error"},
		{"unknown key", "tiny.toml", minimal + "colour = 1\n", `unknown key "spawn.colour"`},
		{"unknown top key", "tiny.toml", "gravity = 3\n" + minimal, `unknown key "gravity"`},
		{"wrong type", "tiny.toml", strings.Replace(minimal, "yaw = 45", `yaw = "north"`, 1), "incompatible types"},
		{"no name", "tiny.toml", strings.Replace(minimal, `name = "tiny"`, "", 1), `no name: add name = "tiny"`},
		{"name differs", "other.toml", minimal, `name "tiny" differs from the file name "other"`},
		{"bad name", "t y.toml", strings.Replace(minimal, `"tiny"`, `"t y"`, 1), `name "t y": use 1..64 letters`},
		{"no bounds", "tiny.toml", "name = \"tiny\"\n[[spawn]]\nposition = [0, 0, 0]\n", "no [bounds]"},
		{"short vector", "tiny.toml", strings.Replace(minimal, "max = [10, 5, 10]", "max = [10, 5]", 1), "bounds max: want three numbers [x, y, z], got 2"},
		{"nan", "tiny.toml", strings.Replace(minimal, "max = [1, 2, 1]", "max = [1, nan, 1]", 1), "obstacle 1 max: y is NaN, not a finite number"},
		{"inf", "tiny.toml", strings.Replace(minimal, "position = [-5, 0, -5]", "position = [-inf, 0, -5]", 1), "spawn 1 position: x is -Inf, not a finite number"},
		{"inf yaw", "tiny.toml", strings.Replace(minimal, "yaw = 45", "yaw = inf", 1), "spawn 1: yaw +Inf"},
		{"huge", "tiny.toml", strings.Replace(minimal, "max = [10, 5, 10]", "max = [1e9, 5, 10]", 1), "bounds max: x = 1e+09 is beyond ±16384"},
		{"inverted obstacle", "tiny.toml", strings.Replace(minimal, "max = [1, 2, 1]", "max = [1, 2, -3]", 1), "obstacle 1 is inverted or flat: min z = -1 is not below max z = -3"},
		{"flat obstacle", "tiny.toml", strings.Replace(minimal, "max = [1, 2, 1]", "max = [1, 0, 1]", 1), "obstacle 1 is inverted or flat: min y"},
		{"inverted bounds", "tiny.toml", strings.Replace(minimal, "min = [-10, 0, -10]", "min = [20, 0, -10]", 1), "bounds is inverted or flat"},
		{"half box", "tiny.toml", strings.Replace(minimal, "min = [-1, 0, -1]\n", "", 1), "obstacle 1: needs both min"},
		{"tiny bounds", "tiny.toml", strings.Replace(minimal, "max = [10, 5, 10]", "max = [10, 1, 10]", 1), "smaller than a player"},
		{"no spawns", "tiny.toml", strings.SplitAfter(minimal, "max = [1, 2, 1]\n")[0], "no spawn points"},
		{"spawn in obstacle", "tiny.toml", strings.Replace(minimal, "[-5, 0, -5]", "[0.5, 0, 0]", 1), "spawn 1 at (0.5, 0, 0): the player box overlaps obstacle 1 [(-1, 0, -1)..(1, 2, 1)]"},
		{"spawn grazing obstacle", "tiny.toml", strings.Replace(minimal, "[-5, 0, -5]", "[1.3, 0, 0]", 1), "overlaps obstacle 1"},
		{"spawn out of bounds", "tiny.toml", strings.Replace(minimal, "[-5, 0, -5]", "[9.9, 0, 0]", 1), "spawn 1 at (9.9, 0, 0): the player box [(9.5, 0, -0.4)..(10.299999, 1.8, 0.4)] leaves the bounds [(-10, 0, -10)..(10, 5, 10)]"},
		{"spawn under floor", "tiny.toml", strings.Replace(minimal, "[-5, 0, -5]", "[-5, -1, -5]", 1), "leaves the bounds"},
		{"spawn through ceiling", "tiny.toml", strings.Replace(minimal, "[-5, 0, -5]", "[-5, 4, -5]", 1), "leaves the bounds"},
		{"bad team", "tiny.toml", spawnOn("team = 3\n"), "spawn 1: team 3: use 0 (either team), 1 (red) or 2 (blue)"},
		{"negative team", "tiny.toml", spawnOn("team = -1\n"), "team -1"},
		{"one-sided teams", "tiny.toml", spawnOn("team = 1\n"), "team 2 (blue) has no spawn point"},
		{"waypoint in obstacle", "tiny.toml", minimal + "[[waypoint]]\nposition = [0, 0, 0]\n", "waypoint 1 at (0, 0, 0): the player box overlaps obstacle 1"},
		{"too many obstacles", "tiny.toml", minimal + strings.Repeat("[[obstacle]]\nmin = [5, 0, 5]\nmax = [6, 1, 6]\n", MaxObstacles), "1025 obstacles, above the limit of 1024"},
		{"too many spawns", "tiny.toml", minimal + strings.Repeat("[[spawn]]\nposition = [5, 0, 5]\n", MaxSpawns), "257 spawn points, above the limit of 256"},
		{"too big", "tiny.toml", minimal + "#" + strings.Repeat("x", MaxFileSize), "above the 1048576-byte limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), c.file)
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Fatalf("error %q\nwant it to contain %q", msg, c.want)
			}
			if !strings.HasPrefix(msg, c.file+": ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q is not one line starting with the file name", msg)
			}
			if !errors.Is(err, ErrInvalidMap) {
				t.Fatalf("error %q does not match ErrInvalidMap", msg)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	cases := []struct{ name, text string }{
		{"spawn standing on an obstacle", strings.Replace(minimal, "[-5, 0, -5]", "[0, 2, 0]", 1)},
		{"spawn touching an obstacle's side", strings.Replace(minimal, "[-5, 0, -5]", "[1.4, 0, 0]", 1)},
		{"spawn touching the bounds", strings.Replace(minimal, "[-5, 0, -5]", "[9.6, 0, -9.6]", 1)},
		{"obstacle sticking out of the bounds", minimal + "[[obstacle]]\nmin = [8, 0, 8]\nmax = [12, 1, 12]\n"},
		{"team spawns with an untagged one", minimal + "[[spawn]]\nposition = [5, 0, 5]\nteam = 2\n"},
		{"both teams tagged", strings.Replace(minimal, "yaw = 45", "yaw = 45\nteam = 1", 1) + "[[spawn]]\nposition = [5, 0, 5]\nteam = 2\n"},
		{"no obstacles", strings.SplitAfter(minimal, "max = [10, 5, 10]\n")[0] + "[[spawn]]\nposition = [0, 0, 0]\n"},
		{"integers and floats", strings.Replace(minimal, "yaw = 45", "yaw = -720.5", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse([]byte(c.text), "tiny.toml"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBuiltinMatchesDefaultRotation: the shipped maps load, and every map of
// config.toml's default rotation is among them, so `sparkhost run --module
// deathmatch` works out of the box.
func TestBuiltinMatchesDefaultRotation(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rotation := config.Default().Match.MapRotation
	if err := c.Require(rotation...); err != nil {
		t.Fatal(err)
	}
	if got := c.Names(); !slices.Equal(got, []string{"arena", "courtyard", "warehouse"}) {
		t.Fatalf("built-in maps %v", got)
	}
	for _, name := range rotation {
		m, _ := c.Get(name)
		if _, err := m.World(movement.Params{}); err != nil {
			t.Errorf("%s: World: %v", name, err)
		}
		if len(m.Spawns) < 8 {
			t.Errorf("%s: %d spawns; a match of 8 wants at least 8", name, len(m.Spawns))
		}
		// Every spawn sees at least one other place of the map, and bots
		// can reach a waypoint from it in a straight line more often than not.
		for i, s := range m.Spawns {
			eye := wire.Vec3{X: s.Position.X, Y: s.Position.Y + 1.6, Z: s.Position.Z}
			seen := 0
			for _, w := range m.Waypoints {
				if m.LineOfSight(eye, wire.Vec3{X: w.X, Y: w.Y + 1.6, Z: w.Z}) {
					seen++
				}
			}
			if seen == 0 {
				t.Errorf("%s: spawn %d sees no waypoint", name, i+1)
			}
		}
	}
	// The shipped files are data/ next to this package: LoadDir of it
	// gives the same maps.
	dir, err := LoadDir("data")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dir.Names(), c.Names()) {
		t.Fatalf("data/ has %v, the embedded copy %v", dir.Names(), c.Names())
	}
}

func TestLoadDir(t *testing.T) {
	write := func(t *testing.T, dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("loads toml files only", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "tiny.toml", minimal)
		write(t, dir, "small.toml", strings.Replace(minimal, `"tiny"`, `"small"`, 1))
		write(t, dir, "README.md", "not a map")
		if err := os.Mkdir(filepath.Join(dir, "sub.toml"), 0o755); err != nil {
			t.Fatal(err)
		}
		c, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Names(), []string{"small", "tiny"}) || c.Origin() != dir {
			t.Fatalf("names %v origin %q", c.Names(), c.Origin())
		}
		m, ok := c.Get("small")
		if !ok || m.Source != filepath.Join(dir, "small.toml") {
			t.Fatalf("Get small: %v %+v", ok, m)
		}
		if _, ok := c.Get("arena"); ok {
			t.Fatal("Get arena found a map that is not there")
		}
		err = c.Require("tiny", "arena")
		if err == nil || !strings.Contains(err.Error(), `map "arena" is not in `+dir+` (it has small, tiny)`) {
			t.Fatalf("Require: %v", err)
		}
	})
	t.Run("one bad file fails the load", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "tiny.toml", minimal)
		write(t, dir, "bad.toml", strings.Replace(minimal, `"tiny"`, `"bad"`, 1)+"team = 7\n")
		_, err := LoadDir(dir)
		if err == nil || err.Error() != filepath.Join(dir, "bad.toml")+": spawn 1: team 7: use 0 (either team), 1 (red) or 2 (blue)" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no NAME.toml map file") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestGeometry(t *testing.T) {
	m, err := Parse([]byte(minimal), "tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	v := func(x, y, z float32) wire.Vec3 { return wire.Vec3{X: x, Y: y, Z: z} }
	t.Run("RayBlock", func(t *testing.T) {
		cases := []struct {
			name        string
			origin, dir wire.Vec3
			max, want   float32
		}{
			{"stops at the obstacle", v(-5, 1, 0), v(1, 0, 0), 20, 4},
			{"clear", v(-5, 3, 0), v(1, 0, 0), 20, 20},
			{"short of it", v(-5, 1, 0), v(1, 0, 0), 3, 3},
			{"away from it", v(-5, 1, 0), v(-1, 0, 0), 20, 20},
			{"inside", v(0, 1, 0), v(1, 0, 0), 20, 0},
			{"unnormalised dir", v(-5, 1, 0), v(7, 0, 0), 20, 4},
			{"zero dir", v(-5, 1, 0), v(0, 0, 0), 20, 0},
			{"nan origin", v(float32(nan()), 1, 0), v(1, 0, 0), 20, 0},
			{"bad max", v(-5, 1, 0), v(1, 0, 0), 0, 0},
		}
		for _, c := range cases {
			if got := m.RayBlock(c.origin, c.dir, c.max); got != c.want {
				t.Errorf("%s: RayBlock = %v, want %v", c.name, got, c.want)
			}
		}
	})
	t.Run("LineOfSight", func(t *testing.T) {
		cases := []struct {
			a, b wire.Vec3
			want bool
		}{
			{v(-5, 1, 0), v(5, 1, 0), false},
			{v(-5, 3, 0), v(5, 3, 0), true},
			{v(-5, 1, 0), v(-2, 1, 0), true},
			{v(-5, 2, 0), v(5, 2, 0), false}, // grazing the top face
			{v(3, 1, 3), v(3, 1, 3), true},
		}
		for _, c := range cases {
			if got := m.LineOfSight(c.a, c.b); got != c.want {
				t.Errorf("LineOfSight(%v, %v) = %v", c.a, c.b, got)
			}
		}
	})
	t.Run("SpawnsFor", func(t *testing.T) {
		m := &Map{Spawns: []Spawn{{Team: AnyTeam}, {Team: TeamRed}, {Team: TeamBlue}, {Team: TeamRed}}}
		for team, want := range map[uint8][]int{AnyTeam: {0, 1, 2, 3}, TeamRed: {0, 1, 3}, TeamBlue: {0, 2}} {
			if got := m.SpawnsFor(team, nil); !slices.Equal(got, want) {
				t.Errorf("SpawnsFor(%d) = %v, want %v", team, got, want)
			}
		}
	})
}

func nan() float64 { var z float64; return z / z }

// FuzzParse: no content makes Parse panic, and what it accepts is a map the
// movement package accepts too.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	for _, name := range []string{"arena", "warehouse", "courtyard"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "maps", name+".toml")); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name = \"tiny\"\n[bounds]\nmin = [nan, 0, 0]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "tiny.toml")
		if err != nil {
			return
		}
		if _, err := m.World(movement.Params{}); err != nil {
			t.Fatalf("accepted a map movement refuses: %v", err)
		}
	})
}

// TestRayBlockSkipsOnlyMissedObstacles: RayBlock, which tests only the
// obstacles near the ray's segment, answers as testing every obstacle does,
// for rays of every length from all over the built-in maps and from
// obstacles' faces and corners (grazing counts as blocked).
func TestRayBlockSkipsOnlyMissedObstacles(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	f := func(lo, hi float32) float32 { return lo + rng.Float32()*(hi-lo) }
	for _, name := range cat.Names() {
		m, _ := cat.Get(name)
		for i := range 20000 {
			b := m.Bounds
			origin := wire.Vec3{X: f(b.Min.X, b.Max.X), Y: f(b.Min.Y, b.Max.Y), Z: f(b.Min.Z, b.Max.Z)}
			if o := m.Obstacles[i%len(m.Obstacles)]; i%2 == 0 { // on a face, edge or corner
				origin = wire.Vec3{X: pick(rng, o.Min.X, o.Max.X), Y: pick(rng, o.Min.Y, o.Max.Y), Z: f(o.Min.Z, o.Max.Z)}
			}
			dir := wire.Vec3{X: f(-1, 1), Y: f(-1, 1) * float32(i%3), Z: f(-1, 1)}
			if i%5 == 0 {
				dir = wire.Vec3{X: float32(i%3 - 1)} // along an axis
			}
			maxDist := []float32{0.7, 2, 50, 500}[i%4]
			want := maxDist
			for _, o := range m.Obstacles {
				if d, ok := lagcomp.AABB(o).RayDistance(origin, dir, want); ok && d < want {
					want = d
				}
			}
			if (dir == wire.Vec3{}) {
				want = 0
			}
			if got := m.RayBlock(origin, dir, maxDist); got != want {
				t.Fatalf("%s: RayBlock(%+v, %+v, %v) = %v, every obstacle tested: %v", name, origin, dir, maxDist, got, want)
			}
		}
	}
}

func pick(rng *rand.Rand, a, b float32) float32 {
	if rng.IntN(2) == 0 {
		return a
	}
	return b
}
