package deathmatch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestPlayerType: the manifest declares the body type with a hitbox and
// the documented visibilities (the real server accepting it is
// TestMatchOnRealServer's business).
func TestPlayerType(t *testing.T) {
	pt := PlayerType()
	if pt.Box != PlayerBox || pt.PositionField != "pos" || len(pt.Fields) != playerFields {
		t.Fatalf("type %+v", pt)
	}
	if got := New().Manifest().EntityTypes; len(got) != 1 || got[0].ID != PlayerEntityType || got[0].Name != PlayerEntityName {
		t.Fatalf("manifest entity types %+v", got)
	}
	want := map[int]gamemsg.Visibility{FieldPos: gamemsg.VisibilityPublic, FieldTeam: gamemsg.VisibilityPublic, FieldHealth: gamemsg.VisibilityParty}
	for i, v := range want {
		if pt.Fields[i].Visibility != v {
			t.Errorf("field %s: %s, want %s", pt.Fields[i].Name, pt.Fields[i].Visibility, v)
		}
	}
}

// respawns returns the PlayerRespawns in msgs sent to client to.
func respawns(t *testing.T, msgs []msg, to uint32) []gamemsg.PlayerRespawn {
	t.Helper()
	var out []gamemsg.PlayerRespawn
	for _, x := range of(msgs, gamemsg.TypePlayerRespawn) {
		if x.to != to {
			continue
		}
		r, err := gamemsg.ParsePlayerRespawn(x.payload)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestBodies: a body per living player, owned by it, its viewpoint, moved
// with it, destroyed at its death and when it leaves; PlayerRespawn
// carries the body's id.
func TestBodies(t *testing.T) {
	h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"arena", "warehouse"}, ScoreLimit: 3, TimeLimit: time.Hour})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	cfg := DefaultConfig()
	cfg.MapsDir, cfg.RespawnSeconds = openMaps(t), 0.5
	m := NewWith(Options{Seed: 1, Config: &cfg})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	h.admit(m, 1, "alice")
	h.admit(m, 2, "bob")
	step(h, m)
	step(h, m)
	e := h.ents()
	for _, id := range []uint32{1, 2} {
		b, ok := h.body(id)
		r := respawns(t, got, 1)
		if !ok || len(r) != 2 {
			t.Fatalf("client %d: body %v, respawns %+v", id, ok, r)
		}
		i := slices.IndexFunc(r, func(r gamemsg.PlayerRespawn) bool { return r.Client == id })
		p, _ := m.Game().Player(id)
		if i < 0 || r[i].EntityID != b.id || b.pos != p.State.Position || b.party != 0 ||
			b.fields[FieldHealth].Int != 100 || b.fields[FieldTeam].Uint != 0 || b.fields[FieldYaw].Float != p.State.Yaw {
			t.Fatalf("client %d: body %+v, respawns %+v, player %+v", id, b, r, p)
		}
		if v := e.views[id]; v.Focus != b.id || v.Party != 0 || v.Spectator {
			t.Fatalf("client %d: view %+v, body %d", id, v, b.id)
		}
	}

	// Moving moves the body, and only what changed is handed to the SDK.
	alice, _ := h.body(1)
	before := alice.pos
	m.OnInput(h.clients[1], gamemsg.ClientInput{InputSeq: 1, MoveForward: 1, LookYaw: 45, DT: 1.0 / 60})
	step(h, m)
	p, _ := m.Game().Player(1)
	if alice.pos == before || alice.pos != p.State.Position || alice.fields[FieldYaw].Float != 45 {
		t.Fatalf("body %+v after moving to %+v", alice, p.State)
	}

	// A death destroys the body; the respawn brings a new one.
	got = nil
	shootUntilKill(t, h, m, 2, 1)
	if _, ok := h.body(1); ok || e.live[alice.id] != nil {
		t.Fatal("the dead player's body is still there")
	}
	if v := e.views[1]; v.Focus != 0 {
		t.Fatalf("the dead player's view %+v", v)
	}
	for range 60 {
		step(h, m)
	}
	again, ok := h.body(1)
	r := respawns(t, got, 2)
	if !ok || again.id == alice.id || len(r) != 1 || r[0].Client != 1 || r[0].EntityID != again.id || e.views[1].Focus != again.id {
		t.Fatalf("after the respawn: body %+v (old %d), respawns %+v, view %+v", again, alice.id, r, e.views[1])
	}
	if again.fields[FieldHealth].Int != 100 {
		t.Fatalf("respawned with health %d", again.fields[FieldHealth].Int)
	}

	// A new map teleports the bodies (a respawn without a death) and
	// tells everybody the map first.
	got = nil
	m.OnMapChange("warehouse", 1)
	step(h, m)
	if b, _ := h.body(1); b.id != again.id {
		t.Fatalf("map change: body %d, want %d teleported", b.id, again.id)
	}
	if len(got) == 0 || got[0].t != TypeMap || len(respawns(t, got, 1)) != 2 {
		t.Fatalf("map change sent %+v", got)
	}

	// Leaving removes the body.
	h.leave(m, 2)
	step(h, m)
	if _, ok := h.body(2); ok {
		t.Fatal("bob's body outlived him")
	}
	if out, _ := m.Command("dm_status", nil); !strings.Contains(out, "bodies 1;") {
		t.Fatalf("dm_status:\n%s", out)
	}
}

// TestBodiesInTeams: a body's party is its team, and so is its owner's
// view party, so that teammates see each other's health (Party).
func TestBodiesInTeams(t *testing.T) {
	m, h, _ := loaded(t, gamemsg.ModeTeamDeathmatch)
	e := h.ents()
	for _, id := range []uint32{1, 2} {
		p, _ := m.Game().Player(id)
		b, ok := h.body(id)
		if !ok || p.Team == 0 || b.party != uint32(p.Team) || b.fields[FieldTeam].Uint != uint32(p.Team) || e.views[id].Party != uint32(p.Team) {
			t.Fatalf("client %d on team %d: body %+v, view %+v", id, p.Team, b, e.views[id])
		}
	}
	// Auto-balance moves a player: its body and view follow.
	h.admit(m, 3, "carol")
	h.admit(m, 4, "dave")
	step(h, m)
	h.leave(m, 2)
	h.leave(m, 4)
	step(h, m)
	for _, id := range []uint32{1, 3} {
		p, _ := m.Game().Player(id)
		b, _ := h.body(id)
		if b.party != uint32(p.Team) || b.fields[FieldTeam].Uint != uint32(p.Team) || e.views[id].Party != uint32(p.Team) {
			t.Fatalf("after the balance, client %d on team %d: body %+v, view %+v", id, p.Team, b, e.views[id])
		}
	}
	if a, _ := m.Game().Player(1); a.Team == func() uint8 { c, _ := m.Game().Player(3); return c.Team }() {
		t.Fatal("no balance happened")
	}
}

// fire has shooter fire once at the point aim (input seq), and steps.
func fire(h *fakeHost, m *Module, shooter uint32, seq uint32, aim wire.Vec3) {
	a, _ := m.Game().Player(shooter)
	yaw, pitch, _ := game.AimAngles(game.Eye(a.State, m.Game().World().Params()), aim)
	m.OnInput(h.clients[shooter], gamemsg.ClientInput{InputSeq: seq, LookYaw: yaw, LookPitch: pitch, Buttons: gamemsg.ButtonFire, DT: 1.0 / 60})
}

// TestShotsLagCompensated: shots are validated by Host.Raycast, rewound by
// half the shooter's ping: aiming where the shooter saw a moving target
// hits, aiming where it is now misses, a ping beyond the window is
// refused.
func TestShotsLagCompensated(t *testing.T) {
	m, h, got := loaded(t, gamemsg.ModeDeathmatch)
	const ping = 300 * time.Millisecond // the shot rewinds 150 ms: 9 ticks
	c := h.clients[1]
	c.Ping = ping
	h.clients[1] = c
	// Bob walks across the line of fire (along +Z; the spawns are on the X
	// axis); remember where he was after each tick.
	var seen []wire.Vec3
	seq := uint32(100)
	strafe := func() {
		seq++
		m.OnInput(h.clients[2], gamemsg.ClientInput{InputSeq: seq, MoveForward: 1, DT: 1.0 / 60})
	}
	for range 60 {
		strafe()
		step(h, m)
		b, _ := h.body(2)
		seen = append(seen, b.pos)
	}
	chest := func(p wire.Vec3) wire.Vec3 { p.Y += 0.9; return p }
	hits := func() int { return len(of(*got, TypeHit)) }

	*got = (*got)[:0]
	strafe()
	fire(h, m, 1, 1, chest(seen[len(seen)-1])) // where bob is now
	step(h, m)
	seen = append(seen, must(h.body(2)).pos)
	if hits() != 0 {
		t.Fatal("a shot at where the target is now hit, 150 ms after it left")
	}
	for range 30 { // the weapon's interval
		strafe()
		step(h, m)
		seen = append(seen, must(h.body(2)).pos)
	}
	strafe()
	fire(h, m, 1, 2, chest(seen[len(seen)-9])) // where the shooter saw him
	step(h, m)
	if hits() != 2 {
		t.Fatalf("a shot at where the shooter saw the target: %d Hit messages, want 2", hits())
	}

	// Beyond the lag window (1 s here): refused, counted.
	c.Ping = 3 * time.Second
	h.clients[1] = c
	for range 30 {
		step(h, m)
	}
	fire(h, m, 1, 3, chest(must(h.body(2)).pos))
	step(h, m)
	if out, _ := m.Command("dm_status", nil); hits() != 2 || !strings.Contains(out, "shots refused by lag compensation: 1") {
		t.Fatalf("%d hits; dm_status:\n%s", hits(), out)
	}
}

func must(e *fakeEntity, ok bool) *fakeEntity {
	if !ok {
		panic("no body")
	}
	return e
}

// TestWallsStopShots: a shot at a player behind an obstacle never reaches
// him, whatever lag compensation says.
func TestWallsStopShots(t *testing.T) {
	dir := t.TempDir()
	text := "name = \"wall\"\n[bounds]\nmin = [-30, 0, -30]\nmax = [30, 10, 30]\n" +
		"[[obstacle]]\nmin = [-1, 0, -5]\nmax = [1, 4, 5]\n" +
		"[[spawn]]\nposition = [-10, 0, 0]\nyaw = 90\n[[spawn]]\nposition = [10, 0, 0]\nyaw = 270\n"
	if err := os.WriteFile(filepath.Join(dir, "wall.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"wall"}, ScoreLimit: 3, TimeLimit: time.Hour})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	cfg := DefaultConfig()
	cfg.MapsDir = dir
	m := NewWith(Options{Seed: 1, Config: &cfg})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	h.admit(m, 1, "alice")
	h.admit(m, 2, "bob")
	for range 3 {
		step(h, m)
	}
	if m.Game().Phase() != game.PhaseLive {
		t.Fatalf("phase %v", m.Game().Phase())
	}
	for i := range 40 {
		b, _ := m.Game().Player(2)
		fire(h, m, 1, uint32(i+1), wire.Vec3{X: b.State.Position.X, Y: 1, Z: b.State.Position.Z})
		step(h, m)
	}
	if n := len(of(got, TypeHit)); n != 0 {
		t.Fatalf("%d Hit messages through a wall", n)
	}
}

var _ module.Host = (*fakeHost)(nil)
