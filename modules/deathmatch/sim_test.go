package deathmatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client/predict"
	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/deathmatch/bot"
	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// sim plays a match in process: the module on a fake host driven by the
// host's own match package, and bots that each run the bot brain and a
// client-side Predictor, fed by the InputAcks and PlayerRespawns the module
// sends. No network: messages arrive at once.
type sim struct {
	tb      testing.TB
	host    *fakeHost
	mod     *Module
	catalog *maps.Catalog
	bots    []*simBot
	byID    map[uint32]*simBot
	players []game.PlayerView
	enemies []bot.Enemy
	ticks   int

	sent   map[wire.MessageType]int
	frags  []Frag
	record func(tick int, id uint32, in gamemsg.ClientInput) // optional
}

type simBot struct {
	id       uint32
	brain    *bot.Brain
	pred     *predict.Predictor
	mapName  string
	seq      uint32 // last input sequence sent
	firstSeq uint32 // the current Predictor's first
	corr     float32
}

type simConfig struct {
	bots  int
	mode  gamemsg.GameMode
	match match.Config
	seed  uint64
	cfg   func(*Config) // module config changes
}

func newSim(tb testing.TB, sc simConfig) *sim {
	tb.Helper()
	if sc.match.Maps == nil {
		sc.match.Maps = []string{"arena", "warehouse", "courtyard"}
	}
	h := newFakeHost(tb, sc.mode, sc.match)
	s := &sim{tb: tb, host: h, byID: make(map[uint32]*simBot), sent: make(map[wire.MessageType]int)}
	var err error
	if s.catalog, err = maps.Builtin(); err != nil {
		tb.Fatal(err)
	}
	c := DefaultConfig()
	if sc.cfg != nil {
		sc.cfg(&c)
	}
	s.mod = NewWith(Options{Seed: sc.seed, Config: &c})
	if err := s.mod.Load(h); err != nil {
		tb.Fatal(err)
	}
	h.onSend = s.deliver
	for i := range sc.bots {
		id := uint32(i + 1)
		m := s.currentMap()
		br, err := bot.New(bot.Config{Seed: sc.seed*1000 + uint64(id), Map: m, AimError: 1.5})
		if err != nil {
			tb.Fatal(err)
		}
		b := &simBot{id: id, brain: br}
		s.bots = append(s.bots, b)
		s.byID[id] = b
		h.admit(s.mod, id, fmt.Sprintf("bot%d", id))
	}
	return s
}

func (s *sim) currentMap() *maps.Map {
	m, ok := s.catalog.Get(s.host.server.Map)
	if !ok {
		s.tb.Fatalf("no map %q", s.host.server.Map)
	}
	return m
}

// deliver is a message reaching a bot's client.
func (s *sim) deliver(client uint32, t wire.MessageType, payload []byte) {
	s.sent[t]++
	b := s.byID[client]
	switch t {
	case gamemsg.TypeInputAck:
		ack, err := gamemsg.ParseInputAck(payload)
		if err != nil {
			s.tb.Fatalf("InputAck: %v", err)
		}
		// An ack of an input sent before the map change reaches the new
		// Predictor, which never sent it: ignore it, as a client does.
		if b.pred != nil && int32(ack.LastInputSeq-b.firstSeq) >= 0 {
			if _, err := b.pred.Reconcile(ack); err != nil {
				s.tb.Fatalf("bot %d: Reconcile: %v", client, err)
			}
			b.corr = max(b.corr, b.pred.LastCorrection())
		}
	case gamemsg.TypePlayerRespawn:
		r, err := gamemsg.ParsePlayerRespawn(payload)
		if err != nil {
			s.tb.Fatalf("PlayerRespawn: %v", err)
		}
		if r.Client == client {
			s.respawn(b, r)
		}
	case TypeFrag:
		if client == 1 { // broadcast: count it once
			f, err := ParseFrag(payload)
			if err != nil {
				s.tb.Fatalf("Frag: %v", err)
			}
			s.frags = append(s.frags, f)
		}
	}
}

// respawn restarts a bot's prediction at its spawn, on a new map if the
// map changed (a client learns it from MatchStart or GameStateSync).
func (s *sim) respawn(b *simBot, r gamemsg.PlayerRespawn) {
	st := movement.State{Position: r.Position, Yaw: r.Yaw}
	m := s.currentMap()
	if b.pred == nil || b.mapName != m.Name {
		w, err := m.World(movement.Params{})
		if err != nil {
			s.tb.Fatal(err)
		}
		b.firstSeq = b.seq + 1
		if b.pred, err = predict.New(w, st, predict.Config{FirstSeq: b.firstSeq}); err != nil {
			s.tb.Fatal(err)
		}
		if b.mapName != "" {
			b.brain.SetMap(m)
		}
		b.mapName = m.Name
		return
	}
	if err := b.pred.Reset(st); err != nil {
		s.tb.Fatal(err)
	}
}

// step runs one server tick: match events, every bot's input, the module's tick.
func (s *sim) step() {
	s.host.beginTick()
	s.players = s.mod.Game().AppendPlayers(s.players[:0])
	teams := s.mod.Game().Config().Teams
	for _, b := range s.bots {
		if b.pred == nil {
			continue // not spawned yet
		}
		self, _ := s.mod.Game().Player(b.id)
		s.enemies = s.enemies[:0]
		for _, p := range s.players {
			if p.ID != b.id && p.Alive && (!teams || p.Team != self.Team) {
				s.enemies = append(s.enemies, bot.Enemy{ID: p.ID, Position: p.State.Position})
			}
		}
		in, err := b.pred.Predict(b.brain.Think(b.pred.State(), s.enemies))
		if err != nil {
			s.tb.Fatalf("bot %d: Predict: %v", b.id, err)
		}
		b.seq = in.InputSeq
		if s.record != nil {
			s.record(s.ticks, b.id, in)
		}
		s.mod.OnInput(s.host.clients[b.id], in)
	}
	s.host.deliverLate(s.mod)
	s.mod.OnTick(module.Tick{Number: uint64(s.ticks), DT: time.Second / 60, Now: s.host.now})
	s.host.endTick()
	s.ticks++
}

// runUntil steps until done or the tick limit, and reports whether done.
func (s *sim) runUntil(limit int, done func() bool) bool {
	for range limit {
		if done() {
			return true
		}
		s.step()
	}
	return done()
}

// checkScores compares the host's scoreboard at the match's end with the
// game's own counts, and the counts with each other.
func (s *sim) checkScores(board []gamemsg.ScoreEntry, players []game.PlayerView, wantSuicides, wantTeamKills int) {
	s.tb.Helper()
	if len(board) != len(players) {
		s.tb.Fatalf("host scoreboard has %d rows, the game %d players", len(board), len(players))
	}
	byID := map[uint32]game.PlayerView{}
	for _, p := range players {
		byID[p.ID] = p
	}
	var kills, deaths, suicides, teamKills int
	for _, f := range s.frags {
		switch {
		case f.Flags&FragSuicide != 0:
			suicides++
		case f.Flags&FragTeamKill != 0:
			teamKills++
		}
	}
	for _, row := range board {
		p, ok := byID[row.Client]
		if !ok {
			s.tb.Fatalf("host scoreboard row for %d, not in the game", row.Client)
		}
		if int(row.Score) != p.Score || int(row.Kills) != p.Kills || int(row.Deaths) != p.Deaths {
			s.tb.Errorf("player %d: host %+v, game score %d kills %d deaths %d", row.Client, row, p.Score, p.Kills, p.Deaths)
		}
		kills += int(row.Kills)
		deaths += int(row.Deaths)
	}
	if kills != deaths-suicides-teamKills {
		s.tb.Errorf("Σkills %d ≠ Σdeaths %d − suicides %d − team kills %d", kills, deaths, suicides, teamKills)
	}
	if deaths != len(s.frags) {
		s.tb.Errorf("Σdeaths %d but %d Frag messages", deaths, len(s.frags))
	}
	if wantSuicides >= 0 && suicides != wantSuicides {
		s.tb.Errorf("%d suicides, want %d", suicides, wantSuicides)
	}
	if wantTeamKills >= 0 && teamKills != wantTeamKills {
		s.tb.Errorf("%d team kills, want %d", teamKills, wantTeamKills)
	}
}
