package deathmatch

import (
	"fmt"
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

// msg is a message the fake host delivered.
type msg struct {
	to      uint32
	t       wire.MessageType
	payload []byte
}

// openMaps writes maps named arena and warehouse that are open fields with
// two spawns 20 units apart, so that players see each other.
func openMaps(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"arena", "warehouse"} {
		text := "name = \"" + name + "\"\n[bounds]\nmin = [-30, 0, -30]\nmax = [30, 10, 30]\n" +
			"[[spawn]]\nposition = [-10, 0, 0]\nyaw = 90\n[[spawn]]\nposition = [10, 0, 0]\nyaw = 270\n"
		if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loaded returns a module loaded on a fake host (open maps, a live round
// with score limit 3) with clients 1 and 2 (alice and bob) admitted and
// spawned, and the messages it sends from then on.
func loaded(t *testing.T, mode gamemsg.GameMode) (*Module, *fakeHost, *[]msg) {
	t.Helper()
	h := newFakeHost(t, mode, match.Config{Maps: []string{"arena", "warehouse"}, ScoreLimit: 3, TimeLimit: time.Hour})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	cfg := DefaultConfig()
	cfg.MapsDir = openMaps(t)
	m := NewWith(Options{Seed: 1, Config: &cfg})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	h.admit(m, 1, "alice")
	h.admit(m, 2, "bob")
	step(h, m)
	step(h, m)
	got = got[:0]
	return m, h, &got
}

func step(h *fakeHost, m *Module) {
	h.beginTick()
	h.deliverLate(m)
	m.OnTick(module.Tick{Now: h.now})
	h.endTick()
}

func of(msgs []msg, t wire.MessageType) []msg {
	var out []msg
	for _, x := range msgs {
		if x.t == t {
			out = append(out, x)
		}
	}
	return out
}

func TestManifest(t *testing.T) {
	man := New().Manifest()
	if !man.Inputs || man.Name != "deathmatch" || man.Version == "" || len(man.Messages) != 4 || len(man.Commands) != 3 {
		t.Fatalf("manifest %+v", man)
	}
	reg := gamemsg.NewRegistry()
	for _, s := range man.Messages {
		if err := reg.Register(man.Name, s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	f := Frag{Killer: 7, Victim: 9, Flags: FragTeamKill}
	if got, err := ParseFrag(AppendFrag(nil, f)); err != nil || got != f {
		t.Fatalf("Frag: %+v %v", got, err)
	}
	hit := Hit{Attacker: 1, Victim: 2, Damage: 25, Health: 75}
	if got, err := ParseHit(AppendHit(nil, hit)); err != nil || got != hit {
		t.Fatalf("Hit: %+v %v", got, err)
	}
	if c, team, err := ParseTeam(AppendTeam(nil, 5, 2)); err != nil || c != 5 || team != 2 {
		t.Fatalf("Team: %d %d %v", c, team, err)
	}
	if _, err := ParseFrag(AppendFrag(nil, f)[:8]); err == nil {
		t.Fatal("short Frag accepted")
	}
	if _, err := ParseHit(append(AppendHit(nil, hit), 0)); err == nil {
		t.Fatal("long Hit accepted")
	}
}

func TestConfigFile(t *testing.T) {
	c, err := LoadConfig("")
	if err != nil || c != DefaultConfig() {
		t.Fatalf("no dir: %+v %v", c, err)
	}
	dir := t.TempDir()
	if c, err := LoadConfig(dir); err != nil || c != DefaultConfig() {
		t.Fatalf("no file: %+v %v", c, err)
	}
	text := "maps_dir = \"x\"\nfriendly_fire = true\nauto_balance_teams = false\nrespawn_seconds = 1.5\n[weapon]\ndamage = 50\nrange = 30\n"
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.MapsDir != "x" || !c.FriendlyFire || c.AutoBalanceTeams || c.RespawnSeconds != 1.5 || c.Weapon.Damage != 50 ||
		c.Weapon.Range != 30 || c.Weapon.Name != "rifle" || c.Weapon.FireIntervalSeconds != 0.25 {
		t.Fatalf("config %+v", c)
	}
	gc := c.gameConfig(60, true, 1)
	if gc.RespawnDelay != 1500*time.Millisecond || gc.Weapon.FireInterval != 250*time.Millisecond || !gc.FriendlyFire || gc.AutoBalance {
		t.Fatalf("game config %+v", gc)
	}
	for _, bad := range []struct{ text, want string }{
		{"colour = 1", `f.toml:1: unknown key "colour"`},
		{"[weapon]\nspeed = 1", `f.toml:2: unknown key "weapon.speed"`},
		{"respawn_seconds = 0", "f.toml:1: respawn_seconds = 0: want 0.001..3600"},
		{"respawn_seconds = nan", "respawn_seconds = NaN"},
		{"lag_window_seconds = 1", `unknown key "lag_window_seconds"`}, // the server's window now
		{"[weapon]\ndamage = 0", "f.toml:2: weapon.damage = 0"},
		{"[weapon]\nfire_interval_seconds = 0", "weapon.fire_interval_seconds"},
		{"[weapon]\nrange = inf", "weapon.range = +Inf"},
		{"friendly_fire = 1", "f.toml: line 1"},
	} {
		_, err := ParseConfig([]byte(bad.text), "f.toml")
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line containing %q", bad.text, err, bad.want)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"courtyard"}})
		m := New().(*Module)
		if err := m.Load(h); err != nil {
			t.Fatal(err)
		}
		if m.Game().Map().Name != "courtyard" || m.Game().Config().Teams || m.Game().Phase() != game.PhaseWarmup {
			t.Fatalf("map %s config %+v", m.Game().Map().Name, m.Game().Config())
		}
	})
	t.Run("team mode from the server", func(t *testing.T) {
		h := newFakeHost(t, gamemsg.ModeTeamDeathmatch, match.Config{Maps: []string{"arena"}})
		m := New().(*Module)
		if err := m.Load(h); err != nil {
			t.Fatal(err)
		}
		if c := m.Game().Config(); !c.Teams || !c.AutoBalance || c.FriendlyFire {
			t.Fatalf("config %+v", c)
		}
	})
	t.Run("config file and maps dir", func(t *testing.T) {
		h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"box"}})
		maps := t.TempDir()
		box := "name = \"box\"\n[bounds]\nmin = [-5, 0, -5]\nmax = [5, 3, 5]\n[[spawn]]\nposition = [0, 0, 0]\n"
		if err := os.WriteFile(filepath.Join(maps, "box.toml"), []byte(box), 0o644); err != nil {
			t.Fatal(err)
		}
		conf := "maps_dir = " + strconvQuote(maps) + "\nfriendly_fire = true\n"
		if err := os.WriteFile(filepath.Join(h.server.DataDir, ConfigFile), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		m := New().(*Module)
		if err := m.Load(h); err != nil {
			t.Fatal(err)
		}
		if m.Game().Map().Name != "box" || !m.Game().Config().FriendlyFire {
			t.Fatalf("map %s config %+v", m.Game().Map().Name, m.Game().Config())
		}
	})
	t.Run("refusals", func(t *testing.T) {
		cases := []struct {
			name, conf, want string
			maps             []string
		}{
			{"map not shipped", "", `map "quake" is not in maps (built in) (it has arena, courtyard, warehouse)`, []string{"quake"}},
			{"bad config", "teams = 3", `unknown key "teams"`, []string{"arena"}},
			{"bad maps dir", "maps_dir = \"/nonexistent/maps\"", "maps directory", []string{"arena"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: c.maps})
				if c.conf != "" {
					if err := os.WriteFile(filepath.Join(h.server.DataDir, ConfigFile), []byte(c.conf), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				err := New().Load(h)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Load: %v, want %q", err, c.want)
				}
			})
		}
	})
	t.Run("restart mid-match", func(t *testing.T) {
		h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"arena"}})
		h.match.PlayerJoined(1, h.now)
		h.beginTick()
		if h.server.MatchState != gamemsg.MatchInProgress {
			t.Fatalf("match state %v", h.server.MatchState)
		}
		m := New().(*Module)
		if err := m.Load(h); err != nil {
			t.Fatal(err)
		}
		if m.Game().Phase() != game.PhaseLive {
			t.Fatalf("phase %v", m.Game().Phase())
		}
	})
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestSpawnAndInputAck(t *testing.T) {
	h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"arena"}})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	m := NewWith(Options{Seed: 1})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	h.admit(m, 1, "alice")
	if len(got) != 1 || got[0].t != TypeMap || got[0].to != 1 {
		t.Fatalf("sent %+v at the admission: want the Map only", got)
	}
	if name, err := ParseMap(got[0].payload); err != nil || name != "arena" {
		t.Fatalf("Map %q %v", name, err)
	}
	got = nil
	step(h, m)
	resp := of(got, gamemsg.TypePlayerRespawn)
	if len(resp) != 1 || len(of(got, gamemsg.TypeInputAck)) != 0 {
		t.Fatalf("sent %+v: want one PlayerRespawn and no ack before any input", got)
	}
	r, err := gamemsg.ParsePlayerRespawn(resp[0].payload)
	p, _ := m.Game().Player(1)
	if err != nil || r.Client != 1 || r.EntityID == 0 || r.Position != p.State.Position || r.Yaw != p.State.Yaw {
		t.Fatalf("PlayerRespawn %+v %v, player %+v", r, err, p)
	}
	got = nil
	in := gamemsg.ClientInput{InputSeq: 5, MoveForward: 1, LookYaw: 30, DT: 1.0 / 60}
	m.OnInput(h.clients[1], in)
	m.OnInput(h.clients[1], in) // stale: counted, not acked twice
	step(h, m)
	acks := of(got, gamemsg.TypeInputAck)
	if len(acks) != 1 || acks[0].to != 1 {
		t.Fatalf("acks %+v", acks)
	}
	ack, _ := gamemsg.ParseInputAck(acks[0].payload)
	p, _ = m.Game().Player(1)
	if ack != p.State.Ack(5) {
		t.Fatalf("ack %+v, want the game's state %+v", ack, p.State)
	}
	if m.refused.stale != 1 {
		t.Fatalf("refused %+v", m.refused)
	}
	m.OnInput(module.ClientInfo{ID: 99}, in)
	bad := in
	bad.InputSeq, bad.LookPitch = 6, 120
	m.OnInput(h.clients[1], bad)
	if m.refused.unknown != 1 || m.refused.invalid != 1 {
		t.Fatalf("refused %+v", m.refused)
	}
}

// shootUntilKill has alice shoot bob until he dies, aiming at him
// wherever he is.
func shootUntilKill(t *testing.T, h *fakeHost, m *Module, shooter, victim uint32) {
	t.Helper()
	seq := uint32(1000)
	for range 600 {
		a, _ := m.Game().Player(shooter)
		v, _ := m.Game().Player(victim)
		if !v.Alive && v.Deaths > 0 {
			return
		}
		chest := v.State.Position
		chest.Y += 0.9
		yaw, pitch, _ := game.AimAngles(game.Eye(a.State, m.Game().World().Params()), chest)
		seq++
		m.OnInput(h.clients[shooter], gamemsg.ClientInput{InputSeq: seq, LookYaw: yaw, LookPitch: pitch, Buttons: gamemsg.ButtonFire, DT: 1.0 / 60})
		step(h, m)
	}
	t.Fatal("no kill in 10 s of shooting")
}

func TestKillScoresAndMessages(t *testing.T) {
	m, h, got := loaded(t, gamemsg.ModeDeathmatch)
	if m.Game().Phase() != game.PhaseLive {
		t.Fatalf("phase %v", m.Game().Phase())
	}
	shootUntilKill(t, h, m, 1, 2)
	hits := of(*got, TypeHit)
	if len(hits) != 8 { // four hits, each to both
		t.Fatalf("%d Hit messages", len(hits))
	}
	last, _ := ParseHit(hits[len(hits)-1].payload)
	if last != (Hit{Attacker: 1, Victim: 2, Damage: 25, Health: 0}) {
		t.Fatalf("last hit %+v", last)
	}
	frags := of(*got, TypeFrag)
	if len(frags) != 2 { // broadcast to both
		t.Fatalf("%d Frag messages", len(frags))
	}
	if f, _ := ParseFrag(frags[0].payload); f != (Frag{Killer: 1, Victim: 2}) {
		t.Fatalf("frag %+v", f)
	}
	board := h.match.Scores()
	if len(board) != 2 || board[0] != (gamemsg.ScoreEntry{Client: 1, Score: 1, Kills: 1}) || board[1] != (gamemsg.ScoreEntry{Client: 2, Deaths: 1}) {
		t.Fatalf("host scoreboard %+v", board)
	}
	if h.scoreCalls != 2 {
		t.Fatalf("%d AddScore calls", h.scoreCalls)
	}
	// dm_kill is a suicide.
	if out, err := m.Command("dm_kill", []string{"alice"}); err != nil || out != "killed alice" {
		t.Fatalf("dm_kill: %q %v", out, err)
	}
	step(h, m)
	if board := h.match.Scores(); board[0] != (gamemsg.ScoreEntry{Client: 1, Score: 0, Kills: 1, Deaths: 1}) {
		t.Fatalf("after the suicide %+v", board)
	}
	if f, _ := ParseFrag(of(*got, TypeFrag)[2].payload); f != (Frag{Killer: 1, Victim: 1, Flags: FragSuicide}) {
		t.Fatalf("suicide frag %+v", f)
	}
}

func TestTeamMessages(t *testing.T) {
	h := newFakeHost(t, gamemsg.ModeTeamDeathmatch, match.Config{Maps: []string{"warehouse"}})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	m := NewWith(Options{Seed: 1})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	for id := uint32(1); id <= 3; id++ {
		h.admit(m, id, "p")
	}
	// Player 3 (red) learns about 1 (red) and 2 (blue), and everybody of 3.
	var to3 []string
	for _, x := range of(got, TypeTeam) {
		if x.to == 3 {
			c, team, _ := ParseTeam(x.payload)
			to3 = append(to3, fmt.Sprint(c, team))
		}
	}
	if !slices.Equal(to3, []string{"1 1", "2 2", "3 1"}) {
		t.Fatalf("Team messages to 3: %v", to3)
	}
	// Blue leaves twice over: 3 moves to blue, and everybody is told.
	got = nil
	h.leave(m, 2)
	h.admit(m, 4, "q") // blue
	h.leave(m, 4)
	got = nil
	step(h, m)
	var moved []string
	for _, x := range of(got, TypeTeam) {
		c, team, _ := ParseTeam(x.payload)
		moved = append(moved, fmt.Sprint(x.to, c, team))
	}
	slices.Sort(moved)
	if !slices.Equal(moved, []string{"1 3 2", "3 3 2"}) {
		t.Fatalf("Team messages after the balance: %v", moved)
	}
}

func TestMapChangeAndCommands(t *testing.T) {
	m, h, _ := loaded(t, gamemsg.ModeDeathmatch)
	out, err := m.Command("dm_status", nil)
	if err != nil || !strings.Contains(out, "map arena, live, free-for-all") || !strings.Contains(out, "alice") ||
		!strings.Contains(out, "bob") || !strings.Contains(out, "inputs refused: 0 stale") {
		t.Fatalf("dm_status: %v\n%s", err, out)
	}
	if out, err := m.Command("dm_maps", nil); err != nil || !strings.HasSuffix(out, ": arena, warehouse (playing arena)") {
		t.Fatalf("dm_maps: %q %v", out, err)
	}
	if _, err := m.Command("dm_kill", nil); err == nil {
		t.Fatal("dm_kill without a player")
	}
	if _, err := m.Command("dm_kill", []string{"carol"}); err == nil {
		t.Fatal("dm_kill of nobody")
	}
	if _, err := m.Command("dm_kill", []string{"2"}); err != nil {
		t.Fatalf("dm_kill by id: %v", err)
	}
	if _, err := m.Command("dm_dance", nil); err == nil {
		t.Fatal("unknown command")
	}
	m.OnMapChange("warehouse", 1)
	if m.Game().Map().Name != "warehouse" || m.Game().Phase() != game.PhaseWarmup {
		t.Fatalf("after the map change: %s %v", m.Game().Map().Name, m.Game().Phase())
	}
	h.expectFaults = true
	m.OnMapChange("quake", 2)
	if len(h.faults) != 1 || !strings.Contains(h.faults[0].Error(), `map "quake" is not in`) || m.Game().Map().Name != "warehouse" {
		t.Fatalf("faults %v, map %s", h.faults, m.Game().Map().Name)
	}
	m.OnMatchEnd(gamemsg.MatchEnd{})
	if m.Game().Phase() != game.PhaseOver {
		t.Fatal(m.Game().Phase())
	}
	h.leave(m, 1)
	if _, ok := m.Game().Player(1); ok {
		t.Fatal("alice still in the game")
	}
}
