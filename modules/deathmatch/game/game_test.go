package game

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

func TestConfig(t *testing.T) {
	m := mustMap(t, duel, "duel")
	lc, _ := NewLagComp(lagcompConfig(), nil)
	g, err := New(Config{}, m, lc)
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config()
	if c.TickRate != 60 || c.MaxHealth != 100 || c.RespawnDelay != 3*time.Second || c.Weapon != DefaultWeapon() || c.Movement.TickRate != 60 {
		t.Fatalf("defaults %+v", c)
	}
	bad := []struct {
		name string
		cfg  Config
		want string
	}{
		{"tick rate", Config{TickRate: 1001}, "TickRate 1001"},
		{"negative respawn", Config{RespawnDelay: -1}, "RespawnDelay"},
		{"health", Config{MaxHealth: -5}, "MaxHealth -5"},
		{"damage", Config{Weapon: Weapon{Name: "pea", Damage: 0, FireInterval: time.Second, Range: 10}}, `weapon "pea": Damage 0`},
		{"interval", Config{Weapon: Weapon{Name: "pea", Damage: 1, Range: 10}}, "FireInterval 0s"},
		{"range", Config{Weapon: Weapon{Name: "pea", Damage: 1, FireInterval: time.Second, Range: float32(math.NaN())}}, "Range NaN"},
		{"movement", Config{Movement: movement.Params{Height: -1}}, "Height"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := New(b.cfg, m, lc)
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("err %v, want %q", err, b.want)
			}
		})
	}
	if _, err := New(Config{}, nil, lc); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil map: %v", err)
	}
	if _, err := New(Config{}, m, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil raycaster: %v", err)
	}
	if got := ticks(250*time.Millisecond, 60); got != 15 {
		t.Fatalf("ticks(250ms) = %d", got)
	}
	if got := ticks(time.Nanosecond, 60); got != 1 {
		t.Fatalf("ticks(1ns) = %d", got)
	}
}

func TestJoinSpawnLeave(t *testing.T) {
	g, _ := newGame(t, Config{Seed: 1})
	if err := g.Join(0); !errors.Is(err, ErrInvalidPlayer) {
		t.Fatalf("Join(0): %v", err)
	}
	if err := g.Join(7); err != nil {
		t.Fatal(err)
	}
	if err := g.Join(7); !errors.Is(err, ErrPlayerExists) {
		t.Fatalf("second Join: %v", err)
	}
	if err := g.Join(3); err != nil {
		t.Fatal(err)
	}
	if p, _ := g.Player(7); p.Alive {
		t.Fatal("alive before the first Tick")
	}
	g.Tick()
	evs := g.DrainEvents(nil)
	if !slices.Equal(kinds(evs), []EventKind{EventSpawn, EventSpawn}) || evs[0].Player != 3 || evs[1].Player != 7 {
		t.Fatalf("events %+v", evs)
	}
	a, _ := g.Player(3)
	b, _ := g.Player(7)
	if !a.Alive || a.Health != 100 || a.Team != NoTeam || a.State.Position == b.State.Position {
		t.Fatalf("players %+v %+v", a, b)
	}
	if a.State.Position != evs[0].Position || a.State.Yaw != evs[0].Yaw {
		t.Fatalf("spawn event %+v, player %+v", evs[0], a)
	}
	if got := g.AppendPlayers(nil); len(got) != 2 || got[0].ID != 3 || got[1].ID != 7 || g.Len() != 2 {
		t.Fatalf("AppendPlayers %+v", got)
	}
	g.Leave(3)
	g.Leave(99)
	if _, ok := g.Player(3); ok || g.Len() != 1 {
		t.Fatal("player 3 still there")
	}
	if len(g.DrainEvents(nil)) != 0 {
		t.Fatal("events not drained")
	}
}

func TestInputRules(t *testing.T) {
	g, _ := newGame(t, Config{})
	join(t, g, 1)
	start, _ := g.Player(1)
	walk := func(seq uint32) gamemsg.ClientInput {
		return gamemsg.ClientInput{InputSeq: seq, MoveForward: 1, LookYaw: 0, DT: 1.0 / 60}
	}
	t.Run("moves one step per input", func(t *testing.T) {
		mustInput(t, g, 1, walk(1))
		p, _ := g.Player(1)
		want, _ := g.World().Step(start.State, walk(1))
		if p.State != want || p.LastInput != 1 || !p.HasInput {
			t.Fatalf("state %+v, want %+v", p, want)
		}
	})
	t.Run("stale and duplicate", func(t *testing.T) {
		for _, seq := range []uint32{1, 0, math.MaxUint32} {
			if err := g.Input(1, walk(seq)); !errors.Is(err, ErrStaleInput) {
				t.Fatalf("seq %d: %v", seq, err)
			}
		}
	})
	t.Run("malformed", func(t *testing.T) {
		in := walk(2)
		in.LookPitch = 90
		if err := g.Input(1, in); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("err %v", err)
		}
		if p, _ := g.Player(1); p.LastInput != 1 {
			t.Fatalf("a refused input moved the sequence to %d", p.LastInput)
		}
	})
	t.Run("unknown player", func(t *testing.T) {
		if err := g.Input(42, walk(1)); !errors.Is(err, ErrUnknownPlayer) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("burst budget", func(t *testing.T) {
		g, _ := newGame(t, Config{})
		join(t, g, 1)
		var err error
		n := 0
		for seq := uint32(1); err == nil; seq++ {
			if err = g.Input(1, walk(seq)); err == nil {
				n++
			}
		}
		if !errors.Is(err, ErrInputFlood) || n != MaxInputBurst {
			t.Fatalf("%d inputs before %v; want %d before ErrInputFlood", n, err, MaxInputBurst)
		}
		g.Tick()
		if err := g.Input(1, walk(100)); err != nil {
			t.Fatalf("after a Tick: %v", err)
		}
		if err := g.Input(1, walk(101)); !errors.Is(err, ErrInputFlood) {
			t.Fatalf("second input of the tick: %v", err)
		}
	})
}

// duelists joins 1 and 2 in a live round, placed 10 units apart on x with a
// clear line between them.
func duelists(t *testing.T, cfg Config) (*Game, seqs) {
	t.Helper()
	g, _ := newGame(t, cfg)
	join(t, g, 1, 2)
	g.StartRound(gamemsg.MatchStart{Round: 1})
	g.Tick()
	place(t, g, 1, wire.Vec3{X: -5})
	place(t, g, 2, wire.Vec3{X: 5})
	g.Tick()
	g.DrainEvents(nil)
	return g, seqs{}
}

func TestHitscan(t *testing.T) {
	t.Run("four hits kill", func(t *testing.T) {
		g, s := duelists(t, Config{})
		var evs []Event
		for range 4 * 15 {
			mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
			g.Tick()
			evs = g.DrainEvents(evs)
		}
		shots, dmg, kills := only(evs, EventShot), only(evs, EventDamage), only(evs, EventKill)
		if len(shots) != 4 || len(dmg) != 4 || len(kills) != 1 {
			t.Fatalf("%d shots, %d damage, %d kills: %v", len(shots), len(dmg), len(kills), kinds(evs))
		}
		for i, d := range dmg {
			if d.Player != 2 || d.Other != 1 || d.Amount != 25 || d.Health != 75-25*i {
				t.Fatalf("damage %d: %+v", i, d)
			}
		}
		if shots[0].Other != 2 || shots[0].Position.X > 4.6 || shots[0].Position.X < 4.5 {
			t.Fatalf("shot %+v: want a hit on the near face of 2's box (x 4.6)", shots[0])
		}
		k := kills[0]
		if k.Player != 2 || k.Other != 1 || k.TeamKill {
			t.Fatalf("kill %+v", k)
		}
		a, _ := g.Player(1)
		b, _ := g.Player(2)
		if a.Kills != 1 || a.Score != 1 || a.Deaths != 0 || b.Deaths != 1 || b.Alive || b.Health != 0 {
			t.Fatalf("after the kill: %+v %+v", a, b)
		}
	})
	t.Run("fire interval", func(t *testing.T) {
		g, s := duelists(t, Config{MaxHealth: 10000})
		var evs []Event
		for range 60 {
			mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
			g.Tick()
			evs = g.DrainEvents(evs)
		}
		if n := len(only(evs, EventShot)); n != 4 {
			t.Fatalf("%d shots in 1 s at 4/s", n)
		}
	})
	t.Run("out of range", func(t *testing.T) {
		g, s := duelists(t, Config{Weapon: Weapon{Name: "knife", Damage: 50, FireInterval: time.Second, Range: 9}})
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
		evs := g.DrainEvents(nil)
		if len(evs) != 1 || evs[0].Kind != EventShot || evs[0].Other != 0 {
			t.Fatalf("events %+v", evs)
		}
	})
	t.Run("wall stops the shot", func(t *testing.T) {
		g, s := duelists(t, Config{})
		place(t, g, 1, wire.Vec3{X: -5, Z: 10})
		place(t, g, 2, wire.Vec3{X: 5, Z: 10})
		g.Tick()
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
		evs := g.DrainEvents(nil)
		if len(evs) != 1 || evs[0].Other != 0 || evs[0].Position.X > -1 || evs[0].Position.X < -1.01 {
			t.Fatalf("events %+v: want a shot stopped at the wall's face x = -1", evs)
		}
	})
	t.Run("missing", func(t *testing.T) {
		g, s := duelists(t, Config{})
		in := s.aimInput(g, 1, 2, gamemsg.ButtonFire)
		in.LookYaw += 30
		mustInput(t, g, 1, in)
		if evs := g.DrainEvents(nil); len(evs) != 1 || evs[0].Other != 0 {
			t.Fatalf("events %+v", evs)
		}
	})
	t.Run("no damage outside a round", func(t *testing.T) {
		g, s := duelists(t, Config{})
		g.EndMatch()
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
		if evs := g.DrainEvents(nil); len(evs) != 1 || evs[0].Kind != EventShot || evs[0].Other != 2 {
			t.Fatalf("events %+v: want one shot that hits without damage", evs)
		}
	})
	t.Run("a dead player neither moves nor fires", func(t *testing.T) {
		g, s := duelists(t, Config{})
		if err := g.Suicide(2); err != nil {
			t.Fatal(err)
		}
		before, _ := g.Player(2)
		in := s.aimInput(g, 2, 1, gamemsg.ButtonFire)
		in.MoveForward = 1
		mustInput(t, g, 2, in)
		after, _ := g.Player(2)
		if after.State != before.State || after.LastInput != in.InputSeq {
			t.Fatalf("dead player: %+v → %+v", before, after)
		}
		if evs := g.DrainEvents(nil); len(only(evs, EventShot)) != 0 {
			t.Fatalf("a dead player fired: %+v", evs)
		}
	})
}

func TestTeamsAndFriendlyFire(t *testing.T) {
	// 1 and 3 are red, 2 blue.
	setup := func(t *testing.T, ff bool) (*Game, seqs) {
		g, _ := newGame(t, Config{Teams: true, FriendlyFire: ff})
		join(t, g, 1, 2, 3)
		g.StartRound(gamemsg.MatchStart{Round: 1})
		g.Tick()
		place(t, g, 1, wire.Vec3{X: -5})
		place(t, g, 3, wire.Vec3{X: 5})
		place(t, g, 2, wire.Vec3{X: 5, Z: -8})
		g.Tick()
		g.DrainEvents(nil)
		return g, seqs{}
	}
	t.Run("assignment", func(t *testing.T) {
		g, _ := setup(t, false)
		want := map[uint32]uint8{1: TeamRed, 2: TeamBlue, 3: TeamRed}
		for id, team := range want {
			if p, _ := g.Player(id); p.Team != team {
				t.Errorf("player %d on team %d, want %d", id, p.Team, team)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		g, s := setup(t, false)
		mustInput(t, g, 1, s.aimInput(g, 1, 3, gamemsg.ButtonFire))
		if evs := g.DrainEvents(nil); len(evs) != 1 || evs[0].Other != 3 {
			t.Fatalf("events %+v: want a hit without damage", evs)
		}
	})
	t.Run("on: a team kill costs a point", func(t *testing.T) {
		g, s := setup(t, true)
		var evs []Event
		for range 4 * 15 {
			mustInput(t, g, 1, s.aimInput(g, 1, 3, gamemsg.ButtonFire))
			g.Tick()
			evs = g.DrainEvents(evs)
		}
		kills := only(evs, EventKill)
		if len(kills) != 1 || !kills[0].TeamKill || kills[0].Other != 1 || kills[0].Player != 3 {
			t.Fatalf("kills %+v", kills)
		}
		a, _ := g.Player(1)
		if a.Score != -1 || a.Kills != 0 {
			t.Fatalf("team killer %+v", a)
		}
		if ts := g.TeamScores(); ts != [3]int{0, -1, 0} {
			t.Fatalf("team scores %v", ts)
		}
	})
}

func TestRespawn(t *testing.T) {
	g, s := duelists(t, Config{RespawnDelay: time.Second})
	place(t, g, 1, wire.Vec3{X: 9, Z: -1}) // next to spawn 2 (10, 0, 0)
	g.Tick()
	for range 4 * 15 {
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
		if p, _ := g.Player(2); !p.Alive {
			break
		}
		g.Tick()
	}
	died := g.TickNumber()
	g.DrainEvents(nil)
	for g.TickNumber() < died+59 {
		g.Tick()
		if p, _ := g.Player(2); p.Alive {
			t.Fatalf("respawned %d ticks after death", g.TickNumber()-died)
		}
	}
	g.Tick()
	evs := g.DrainEvents(nil)
	if len(evs) != 1 || evs[0].Kind != EventSpawn || evs[0].Player != 2 {
		t.Fatalf("events 60 ticks after death: %+v", evs)
	}
	// The enemy stands on spawn 2; the far one is spawn 1.
	if evs[0].Position != (wire.Vec3{X: -10}) || evs[0].Yaw != 90 {
		t.Fatalf("respawned at %v yaw %v, want the spawn far from the enemy", evs[0].Position, evs[0].Yaw)
	}
	if p, _ := g.Player(2); p.Health != 100 || p.Deaths != 1 {
		t.Fatalf("after respawn %+v", p)
	}
}

func TestSpawnSpreads(t *testing.T) {
	// Eight spawns in a row; without teams each joiner lands on the free
	// point farthest from everyone already in.
	var b strings.Builder
	b.WriteString("name = \"row\"\n[bounds]\nmin = [-50, 0, -5]\nmax = [50, 5, 5]\n")
	for i := range 8 {
		b.WriteString("[[spawn]]\nposition = [" + strconv.Itoa(-35+10*i) + ", 0, 0]\n")
	}
	lc, _ := NewLagComp(lagcompConfig(), nil)
	g, err := New(Config{Seed: 3}, mustMap(t, b.String(), "row"), lc)
	if err != nil {
		t.Fatal(err)
	}
	join(t, g, 1)
	first, _ := g.Player(1)
	join(t, g, 2)
	second, _ := g.Player(2)
	if d := math.Abs(float64(first.State.Position.X - second.State.Position.X)); d < 35 {
		t.Fatalf("second spawn %v only %v from the first %v", second.State.Position, d, first.State.Position)
	}
	for id := uint32(3); id <= 8; id++ {
		join(t, g, id)
	}
	seen := map[wire.Vec3]bool{}
	for _, p := range g.AppendPlayers(nil) {
		if seen[p.State.Position] {
			t.Fatalf("two players spawned on %v", p.State.Position)
		}
		seen[p.State.Position] = true
	}
}

func TestSuicide(t *testing.T) {
	g, _ := newGame(t, Config{})
	join(t, g, 1)
	g.DrainEvents(nil)
	if err := g.Suicide(1); err != nil {
		t.Fatal(err)
	}
	if evs := g.DrainEvents(nil); len(evs) != 0 {
		t.Fatalf("suicide in warmup: %+v", evs)
	}
	g.Tick()
	if p, _ := g.Player(1); !p.Alive || p.Deaths != 0 {
		t.Fatalf("warmup suicide: %+v", p)
	}
	g.StartRound(gamemsg.MatchStart{Round: 1})
	g.Tick()
	g.DrainEvents(nil)
	if err := g.Suicide(1); err != nil {
		t.Fatal(err)
	}
	evs := g.DrainEvents(nil)
	if len(evs) != 1 || evs[0].Kind != EventKill || evs[0].Player != 1 || evs[0].Other != 1 {
		t.Fatalf("events %+v", evs)
	}
	if p, _ := g.Player(1); p.Score != -1 || p.Deaths != 1 || p.Kills != 0 {
		t.Fatalf("after suicide %+v", p)
	}
	if err := g.Suicide(1); err != nil {
		t.Fatalf("suicide of a dead player: %v", err)
	}
	if err := g.Suicide(9); !errors.Is(err, ErrUnknownPlayer) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestAutoBalance(t *testing.T) {
	g, _ := newGame(t, Config{Teams: true, AutoBalance: true})
	join(t, g, 1, 2, 3, 4, 5, 6) // red 1 3 5, blue 2 4 6
	g.DrainEvents(nil)
	g.Leave(2)
	g.Leave(4)
	g.Tick() // red 3 against blue 1: the latest red joiner, 5, moves
	evs := g.DrainEvents(nil)
	if len(evs) != 2 || evs[0].Kind != EventTeamChange || evs[0].Player != 5 || evs[0].Team != TeamBlue || evs[1].Kind != EventSpawn || evs[1].Player != 5 {
		t.Fatalf("events %+v", evs)
	}
	// A dead player is moved before a more recent living one.
	g.StartRound(gamemsg.MatchStart{Round: 1})
	g.Tick()
	join(t, g, 7, 8) // 7 → red? counts: red 1 3, blue 5 6: 7 red, 8 blue
	g.Leave(5)
	g.Leave(6) // red 1 3 7, blue 8
	if err := g.Suicide(3); err != nil {
		t.Fatal(err)
	}
	g.DrainEvents(nil)
	g.Tick()
	evs = only(g.DrainEvents(nil), EventTeamChange)
	if len(evs) != 1 || evs[0].Player != 3 {
		t.Fatalf("team changes %+v: want the dead player 3 moved", evs)
	}
	// Without AutoBalance, nobody moves.
	g2, _ := newGame(t, Config{Teams: true})
	join(t, g2, 1, 2, 3, 4)
	g2.Leave(2)
	g2.Leave(4)
	g2.Tick()
	if evs := only(g2.DrainEvents(nil), EventTeamChange); len(evs) != 0 {
		t.Fatalf("moved without AutoBalance: %+v", evs)
	}
}

func TestMatchFlow(t *testing.T) {
	g, s := duelists(t, Config{})
	for range 15 {
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire))
		g.Tick()
	}
	if p, _ := g.Player(1); p.Score != 0 {
		t.Fatalf("score %d before any kill", p.Score)
	}
	if err := g.Suicide(2); err != nil {
		t.Fatal(err)
	}
	t.Run("round 2 keeps the scores", func(t *testing.T) {
		g.StartRound(gamemsg.MatchStart{Round: 2})
		if p, _ := g.Player(2); p.Deaths != 1 || p.Alive {
			t.Fatalf("%+v", p)
		}
		g.Tick()
		if p, _ := g.Player(2); !p.Alive || p.Health != 100 {
			t.Fatalf("not respawned at the round's start: %+v", p)
		}
	})
	t.Run("end then map change", func(t *testing.T) {
		g.EndMatch()
		if g.Phase() != PhaseOver {
			t.Fatal(g.Phase())
		}
		g.DrainEvents(nil)
		other := mustMap(t, strings.Replace(duel, `"duel"`, `"other"`, 1), "other")
		if err := g.ChangeMap(other); err != nil {
			t.Fatal(err)
		}
		if g.Phase() != PhaseWarmup || g.Map() != other {
			t.Fatalf("phase %v map %s", g.Phase(), g.Map().Name)
		}
		if p, _ := g.Player(2); p.Deaths != 0 || p.Alive {
			t.Fatalf("after the map change %+v", p)
		}
		g.Tick()
		evs := only(g.DrainEvents(nil), EventSpawn)
		if len(evs) != 2 {
			t.Fatalf("spawns %+v", evs)
		}
	})
	t.Run("round 1 clears the scores", func(t *testing.T) {
		g.StartRound(gamemsg.MatchStart{Round: 1})
		if p, _ := g.Player(2); p.Deaths != 0 {
			t.Fatalf("%+v", p)
		}
	})
}

func TestAim(t *testing.T) {
	cases := []struct {
		yaw, pitch float32
		dir        wire.Vec3
	}{
		{0, 0, wire.Vec3{Z: 1}},
		{90, 0, wire.Vec3{X: 1}},
		{180, 0, wire.Vec3{Z: -1}},
		{270, 0, wire.Vec3{X: -1}},
		{0, 89, wire.Vec3{Y: 1}},
	}
	for _, c := range cases {
		d := AimDirection(c.yaw, c.pitch)
		if math.Abs(float64(d.X-c.dir.X)) > 0.02 || math.Abs(float64(d.Y-c.dir.Y)) > 0.02 || math.Abs(float64(d.Z-c.dir.Z)) > 0.02 {
			t.Errorf("AimDirection(%v, %v) = %v, want ≈ %v", c.yaw, c.pitch, d, c.dir)
		}
	}
	// AimAngles and AimDirection agree with movement: walking forward at the
	// yaw AimAngles gives moves towards the target.
	from, to := wire.Vec3{X: 1, Y: 2, Z: 3}, wire.Vec3{X: -4, Y: 5, Z: 7}
	yaw, pitch, dist := AimAngles(from, to)
	d := AimDirection(yaw, pitch)
	got := wire.Vec3{X: from.X + d.X*dist, Y: from.Y + d.Y*dist, Z: from.Z + d.Z*dist}
	if math.Abs(float64(got.X-to.X)) > 1e-4 || math.Abs(float64(got.Y-to.Y)) > 1e-4 || math.Abs(float64(got.Z-to.Z)) > 1e-4 {
		t.Fatalf("AimAngles → AimDirection lands at %v, want %v", got, to)
	}
	if yaw < 0 || yaw >= 360 {
		t.Fatalf("yaw %v", yaw)
	}
	if _, p, _ := AimAngles(wire.Vec3{}, wire.Vec3{Y: 5}); p != 89 {
		t.Fatalf("straight up: pitch %v", p)
	}
	if y, p, dd := AimAngles(from, from); y != 0 || p != 0 || dd != 0 {
		t.Fatal("equal points")
	}
	w, _ := movement.NewWorld(movement.Params{}, movement.Box{Min: wire.Vec3{X: -50, Z: -50}, Max: wire.Vec3{X: 50, Y: 10, Z: 50}}, nil)
	yaw, _, _ = AimAngles(wire.Vec3{}, wire.Vec3{X: 3, Z: -4})
	st := movement.State{Grounded: true}
	for range 30 {
		st, _ = w.Step(st, gamemsg.ClientInput{MoveForward: 1, LookYaw: yaw, DT: 1.0 / 60})
	}
	if r := st.Position.X / -st.Position.Z; math.Abs(float64(r)-0.75) > 1e-3 {
		t.Fatalf("walked to %v, not towards (3, 0, -4)", st.Position)
	}
	if e := Eye(movement.State{Crouching: true}, w.Params()); e.Y != 1.0 {
		t.Fatalf("crouching eye %v", e)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() []Event {
		g, _ := newGame(t, Config{Seed: 42, Teams: true, AutoBalance: true})
		s := seqs{}
		var evs []Event
		join(t, g, 1, 2, 3, 4)
		g.StartRound(gamemsg.MatchStart{Round: 1})
		for i := range 300 {
			for id := uint32(1); id <= 4; id++ {
				target := id%4 + 1
				in := s.aimInput(g, id, target, gamemsg.ButtonFire)
				in.MoveRight = float32(i%7)/7 - 0.5
				_ = g.Input(id, in)
			}
			if i == 100 {
				g.Leave(2)
				_ = g.Join(9)
			}
			g.Tick()
			evs = g.DrainEvents(evs)
		}
		return evs
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	if len(only(a, EventKill)) == 0 {
		t.Fatal("no kill in 5 s of everybody shooting: the test proves little")
	}
}

func TestTickAndInputAllocateNothing(t *testing.T) {
	g, _ := newGame(t, Config{MaxHealth: 10000, Seed: 9})
	const n = 16
	for id := uint32(1); id <= n; id++ {
		if err := g.Join(id); err != nil {
			t.Fatal(err)
		}
	}
	g.StartRound(gamemsg.MatchStart{Round: 1})
	s := seqs{}
	var evs []Event
	step := func() {
		for id := uint32(1); id <= n; id++ {
			_ = g.Input(id, s.aimInput(g, id, id%n+1, gamemsg.ButtonFire))
		}
		g.Tick()
		evs = g.DrainEvents(evs[:0])
	}
	for range 120 {
		step()
	}
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Fatalf("%v allocations per tick of %d players", a, n)
	}
}

// TestRoundLimits: the Game stops counting when the host's match would:
// at the score limit (even for a kill later in the same tick) and after the
// time limit.
func TestRoundLimits(t *testing.T) {
	t.Run("score", func(t *testing.T) {
		g, _ := newGame(t, Config{Weapon: Weapon{Name: "gun", Damage: 100, FireInterval: tick, Range: 50}})
		s := seqs{}
		join(t, g, 1, 2, 3)
		g.StartRound(gamemsg.MatchStart{Round: 1, ScoreLimit: 1})
		g.Tick()
		place(t, g, 1, wire.Vec3{X: -5})
		place(t, g, 2, wire.Vec3{X: 5, Z: -8})
		place(t, g, 3, wire.Vec3{X: 5})
		g.Tick()
		g.DrainEvents(nil)
		// In one tick, 1 kills 3 (the limit) and then 2 kills 1: the second
		// kill is after the round's end, as the host sees it.
		mustInput(t, g, 1, s.aimInput(g, 1, 3, gamemsg.ButtonFire))
		mustInput(t, g, 2, s.aimInput(g, 2, 1, gamemsg.ButtonFire))
		evs := g.DrainEvents(nil)
		if k := only(evs, EventKill); len(k) != 1 || k[0].Player != 3 || g.Phase() != PhaseOver {
			t.Fatalf("kills %+v, phase %v: want only 1's kill of 3, then the round over", k, g.Phase())
		}
		if len(only(evs, EventShot)) != 2 || len(only(evs, EventDamage)) != 1 {
			t.Fatalf("events %v", kinds(evs))
		}
		// Round 2 counts again; its limit is its own points.
		g.StartRound(gamemsg.MatchStart{Round: 2, ScoreLimit: 1})
		if p, _ := g.Player(1); g.Phase() != PhaseLive || p.Score != 1 {
			t.Fatalf("round 2: phase %v, score %d", g.Phase(), p.Score)
		}
	})
	t.Run("time", func(t *testing.T) {
		g, s := duelists(t, Config{})
		g.StartRound(gamemsg.MatchStart{Round: 1, TimeLimit: 0.5})
		g.Tick()
		place(t, g, 1, wire.Vec3{X: -5})
		place(t, g, 2, wire.Vec3{X: 5})
		for range 28 {
			g.Tick()
		}
		g.DrainEvents(nil)
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire)) // 29 ticks in: counts
		if n := len(only(g.DrainEvents(nil), EventDamage)); n != 1 || g.Phase() != PhaseLive {
			t.Fatalf("%d damage before the limit, phase %v", n, g.Phase())
		}
		for range 16 {
			g.Tick()
		}
		mustInput(t, g, 1, s.aimInput(g, 1, 2, gamemsg.ButtonFire)) // 45 ticks in: over
		if n := len(only(g.DrainEvents(nil), EventDamage)); n != 0 || g.Phase() != PhaseOver {
			t.Fatalf("%d damage after the limit, phase %v", n, g.Phase())
		}
	})
}
