package deathmatch

import (
	"slices"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestSimulatedMatch plays whole matches in process — bots, the module, the
// game rules, movement, lag compensation and the host's match — until the
// score limit, then checks MatchEnd, the scores against the kills, and that
// the next map of the rotation is loaded and played.
func TestSimulatedMatch(t *testing.T) {
	cases := []struct {
		name          string
		sc            simConfig
		teamKills     int // -1: any
		wantNextMap   string
		wantReason    gamemsg.MatchEndReason
		maxSimMinutes int
	}{
		{
			name: "free-for-all",
			sc: simConfig{bots: 8, mode: gamemsg.ModeDeathmatch, seed: 1,
				match: match.Config{ScoreLimit: 10, TimeLimit: 10 * time.Minute, Intermission: 2 * time.Second}},
			wantNextMap: "warehouse", wantReason: gamemsg.MatchEndScore, maxSimMinutes: 10,
		},
		{
			name: "team deathmatch with friendly fire",
			sc: simConfig{bots: 8, mode: gamemsg.ModeTeamDeathmatch, seed: 2,
				match: match.Config{ScoreLimit: 8, TimeLimit: 10 * time.Minute, Intermission: time.Second,
					Maps: []string{"warehouse", "courtyard", "arena"}},
				cfg: func(c *Config) { c.FriendlyFire = true }},
			teamKills: -1, wantNextMap: "courtyard", wantReason: gamemsg.MatchEndScore, maxSimMinutes: 10,
		},
		{
			name: "time limit",
			sc: simConfig{bots: 4, mode: gamemsg.ModeDeathmatch, seed: 3,
				match: match.Config{ScoreLimit: 1000, TimeLimit: 40 * time.Second, Warmup: time.Second,
					Maps: []string{"courtyard", "arena"}}},
			wantNextMap: "arena", wantReason: gamemsg.MatchEndTime, maxSimMinutes: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, c.sc)
			h := s.host
			var atEnd []game.PlayerView
			ended := s.runUntil(c.maxSimMinutes*60*60, func() bool {
				if len(h.ends) > 0 && atEnd == nil && s.mod.Game().Phase() == game.PhaseOver {
					atEnd = s.mod.Game().AppendPlayers(nil)
				}
				return atEnd != nil
			})
			if !ended {
				t.Fatalf("no MatchEnd in %d simulated minutes; scores %+v", c.maxSimMinutes, h.lastScores)
			}
			end, board := h.ends[0], h.endScores[0]
			t.Logf("MatchEnd after %.1f s: %s, winner %d with %d; %d frags, max prediction correction %.3f",
				float64(s.ticks)/60, end.Reason, end.Winner, end.WinnerScore, len(s.frags), s.maxCorrection())
			if end.Reason != c.wantReason {
				t.Fatalf("MatchEnd reason %s, want %s", end.Reason, c.wantReason)
			}
			if board[0].Client != end.Winner || board[0].Score != end.WinnerScore {
				t.Fatalf("MatchEnd %+v but the scoreboard leads with %+v", end, board[0])
			}
			if c.wantReason == gamemsg.MatchEndScore && end.WinnerScore < c.sc.match.ScoreLimit {
				t.Fatalf("ended by score at %d, below the limit %d", end.WinnerScore, c.sc.match.ScoreLimit)
			}
			if len(h.starts) != 1 || h.starts[0].Round != 1 {
				t.Fatalf("MatchStarts %+v", h.starts)
			}
			s.checkScores(board, atEnd, 0, c.teamKills)

			// The intermission, then the next map: the module loads it and a
			// new match starts there with everybody respawned.
			next := s.runUntil(30*60, func() bool { return len(h.starts) >= 2 })
			if !next {
				t.Fatalf("no second MatchStart; map changes %v", h.mapChanges)
			}
			for range 5 {
				s.step()
			}
			if !slices.Equal(h.mapChanges, []string{c.wantNextMap}) || s.mod.Game().Map().Name != c.wantNextMap ||
				h.starts[1].Map != c.wantNextMap {
				t.Fatalf("map changes %v, game on %s, MatchStart %+v; want %s", h.mapChanges, s.mod.Game().Map().Name, h.starts[1], c.wantNextMap)
			}
			for _, p := range s.mod.Game().AppendPlayers(nil) {
				if p.Kills != 0 || p.Deaths != 0 || !p.Alive {
					t.Fatalf("on the next map: %+v", p)
				}
				if b := s.byID[p.ID]; b.mapName != c.wantNextMap {
					t.Fatalf("bot %d predicts on %q", p.ID, b.mapName)
				}
			}
			if s.sent[gamemsg.TypeInputAck] == 0 || s.sent[gamemsg.TypePlayerRespawn] < len(s.frags) {
				t.Fatalf("sent %v", s.sent)
			}
			if c.sc.mode == gamemsg.ModeTeamDeathmatch && s.sent[TypeTeam] < c.sc.bots*c.sc.bots {
				t.Fatalf("%d Team messages for %d bots", s.sent[TypeTeam], c.sc.bots)
			}
		})
	}
}

func (s *sim) maxCorrection() float32 {
	var m float32
	for _, b := range s.bots {
		m = max(m, b.corr)
	}
	return m
}

// TestSimulatedMatchDeterministic: the same seeds play the same match.
func TestSimulatedMatchDeterministic(t *testing.T) {
	run := func() ([]Frag, []gamemsg.ScoreEntry) {
		s := newSim(t, simConfig{bots: 6, seed: 9, match: match.Config{ScoreLimit: 1000, TimeLimit: time.Hour}})
		for range 20 * 60 {
			s.step()
		}
		return s.frags, s.host.lastScores
	}
	f1, b1 := run()
	f2, b2 := run()
	if !slices.Equal(f1, f2) || !slices.Equal(b1, b2) {
		t.Fatal("two runs with the same seeds differ")
	}
	if len(f1) == 0 {
		t.Fatal("no kill in 20 s of 6 bots")
	}
}

// BenchmarkTick64 is one server tick of a 64-bot match on arena:
//
//	server: the module's work only — 64 ClientInputs (movement, fire, lag-
//	        compensated raycasts) and OnTick (respawns, history, InputAcks) —
//	        replaying inputs recorded from a real run;
//	bots:   the same plus the 64 bots thinking and predicting.
func BenchmarkTick64(b *testing.B) {
	const bots, ticks = 64, 600
	cfg := simConfig{bots: bots, seed: 5, match: match.Config{ScoreLimit: 100000, TimeLimit: time.Hour}}
	b.Run("bots", func(b *testing.B) {
		s := newSim(b, cfg)
		for range 120 {
			s.step()
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			s.step()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/tick")
	})
	b.Run("server", func(b *testing.B) {
		// Record the inputs of a run, then replay them on fresh copies of
		// the same match.
		inputs := make([][]gamemsg.ClientInput, ticks)
		rec := newSim(b, cfg)
		rec.record = func(tick int, _ uint32, in gamemsg.ClientInput) {
			if tick < ticks {
				inputs[tick] = append(inputs[tick], in)
			}
		}
		for range ticks {
			rec.step()
		}
		var s *sim
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			if i%ticks == 0 {
				b.StopTimer()
				s = newSim(b, cfg)
				s.host.onSend = nil // nobody listens: the bots are replayed
				b.StartTimer()
			}
			s.replay(inputs[i%ticks])
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/tick")
	})
}

// replay runs one tick with recorded inputs instead of the bots.
func (s *sim) replay(inputs []gamemsg.ClientInput) {
	s.host.beginTick()
	for i, in := range inputs {
		s.mod.OnInput(s.host.clients[uint32(i+1)], in)
	}
	s.host.deliverLate(s.mod)
	s.mod.OnTick(module.Tick{Number: uint64(s.ticks), DT: time.Second / 60, Now: s.host.now})
	s.host.endTick()
	s.ticks++
}
