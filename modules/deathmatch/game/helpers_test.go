package game

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// duel is an open 40×40 floor with a wall at z 8..12 and two spawns facing
// each other across x.
const duel = `
name = "duel"
[bounds]
min = [-20, 0, -20]
max = [20, 10, 20]
[[obstacle]]
min = [-1, 0, 8]
max = [1, 4, 12]
[[spawn]]
position = [-10, 0, 0]
yaw = 90
[[spawn]]
position = [10, 0, 0]
yaw = 270
`

func mustMap(t testing.TB, text, name string) *maps.Map {
	t.Helper()
	m, err := maps.Parse([]byte(text), name+".toml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newGame(t testing.TB, cfg Config) (*Game, *LagComp) {
	t.Helper()
	lc, err := NewLagComp(lagcomp.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, mustMap(t, duel, "duel"), lc)
	if err != nil {
		t.Fatal(err)
	}
	return g, lc
}

// join adds players and ticks once so that they spawn.
func join(t testing.TB, g *Game, ids ...uint32) {
	t.Helper()
	for _, id := range ids {
		if err := g.Join(id); err != nil {
			t.Fatal(err)
		}
	}
	g.Tick()
}

// place puts a living player at pos, as if it had walked there, and ticks
// so that the lag-compensation history sees it.
func place(t testing.TB, g *Game, id uint32, pos wire.Vec3) {
	t.Helper()
	p := g.get(id)
	if p == nil || !p.alive {
		t.Fatalf("player %d absent or dead", id)
	}
	p.state.Position = pos
	p.state.Velocity = wire.Vec3{}
}

// seqs numbers each player's inputs.
type seqs map[uint32]uint32

// aimInput returns id's next input looking from its eye at target's chest,
// with the given buttons and no movement.
func (s seqs) aimInput(g *Game, id, target uint32, b gamemsg.Buttons) gamemsg.ClientInput {
	p, _ := g.Player(id)
	v, _ := g.Player(target)
	chest := v.State.Position
	chest.Y += 0.9
	yaw, pitch, _ := AimAngles(Eye(p.State, g.World().Params()), chest)
	s[id]++
	return gamemsg.ClientInput{InputSeq: s[id], LookYaw: yaw, LookPitch: pitch, Buttons: b, DT: 1.0 / 60}
}

// idle returns id's next input that does nothing.
func (s seqs) idle(id uint32) gamemsg.ClientInput {
	s[id]++
	return gamemsg.ClientInput{InputSeq: s[id], DT: 1.0 / 60}
}

func mustInput(t testing.TB, g *Game, id uint32, in gamemsg.ClientInput) {
	t.Helper()
	if err := g.Input(id, in); err != nil {
		t.Fatalf("Input(%d, %+v): %v", id, in, err)
	}
}

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func only(evs []Event, k EventKind) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

const tick = time.Second / 60
