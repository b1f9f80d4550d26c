package match

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// recorder is an Announcer that keeps everything announced, in order.
type recorder struct {
	log    []string // one line per call, for order checks
	starts []gamemsg.MatchStart
	ends   []gamemsg.MatchEnd
	scores []gamemsg.ScoreUpdate
	maps   []string
}

var _ Announcer = (*recorder)(nil)

func (r *recorder) MatchStart(m gamemsg.MatchStart) {
	r.starts = append(r.starts, m)
	r.log = append(r.log, fmt.Sprintf("start %s r%d", m.Map, m.Round))
}

func (r *recorder) MatchEnd(m gamemsg.MatchEnd) {
	r.ends = append(r.ends, m)
	r.log = append(r.log, fmt.Sprintf("end %v %d %d", m.Reason, m.Winner, m.WinnerScore))
}

func (r *recorder) ScoreUpdate(m gamemsg.ScoreUpdate) {
	r.scores = append(r.scores, m)
	r.log = append(r.log, "scores")
}

func (r *recorder) MapChanged(name string, index int) {
	r.maps = append(r.maps, name)
	r.log = append(r.log, fmt.Sprintf("map %s %d", name, index))
}

func (r *recorder) lastScores() []gamemsg.ScoreEntry { return r.scores[len(r.scores)-1].Scores }

// newMatch returns a Match with cfg's zero fields set to a quick test setup
// (maps a, b, c; no warmup) and the players joined at t0.
func newMatch(t *testing.T, cfg Config, players ...uint32) (*Match, *recorder) {
	t.Helper()
	if cfg.Maps == nil {
		cfg.Maps = []string{"a", "b", "c"}
	}
	r := &recorder{}
	m, err := New(cfg, r, t0)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, id := range players {
		m.PlayerJoined(id, t0)
	}
	return m, r
}

// started returns a Match whose round 1 began at t0.
func started(t *testing.T, cfg Config, players ...uint32) (*Match, *recorder) {
	t.Helper()
	m, r := newMatch(t, cfg, players...)
	m.Tick(t0)
	if st := m.Snapshot(t0).State; st != gamemsg.MatchInProgress {
		t.Fatalf("state %v after the first Tick, want InProgress", st)
	}
	return m, r
}

func wantState(t *testing.T, m *Match, now time.Time, want gamemsg.MatchState) {
	t.Helper()
	if got := m.Snapshot(now).State; got != want {
		t.Fatalf("state %v, want %v", got, want)
	}
}

type score struct {
	id                   uint32
	score, kills, deaths int32
}

func TestScoreLimitEndsMatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		players    []uint32
		adds       []score
		want       gamemsg.MatchEnd
		wantScores []gamemsg.ScoreEntry
	}{
		{"one leader", []uint32{1, 2, 3}, []score{{2, 5, 5, 0}, {1, 3, 3, 1}, {2, 5, 5, 2}},
			gamemsg.MatchEnd{Reason: gamemsg.MatchEndScore, Winner: 2, WinnerScore: 10},
			[]gamemsg.ScoreEntry{{Client: 2, Score: 10, Kills: 10, Deaths: 2}, {Client: 1, Score: 3, Kills: 3, Deaths: 1}, {Client: 3}}},
		{"overshoot", []uint32{7}, []score{{7, 25, 1, 0}},
			gamemsg.MatchEnd{Reason: gamemsg.MatchEndScore, Winner: 7, WinnerScore: 25},
			[]gamemsg.ScoreEntry{{Client: 7, Score: 25, Kills: 1}}},
		{"negative scores do not end it", []uint32{4, 9}, []score{{4, -3, 0, 1}, {9, 10, 1, 0}},
			gamemsg.MatchEnd{Reason: gamemsg.MatchEndScore, Winner: 9, WinnerScore: 10},
			[]gamemsg.ScoreEntry{{Client: 9, Score: 10, Kills: 1}, {Client: 4, Score: -3, Deaths: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := started(t, Config{ScoreLimit: 10, Intermission: 5 * time.Second}, tc.players...)
			for i, a := range tc.adds {
				if len(r.ends) != 0 {
					t.Fatalf("the match ended before add %d", i)
				}
				m.AddScore(a.id, a.score, a.kills, a.deaths, at(time.Second))
			}
			if len(r.ends) != 1 || r.ends[0] != tc.want {
				t.Fatalf("MatchEnd %+v, want [%+v]", r.ends, tc.want)
			}
			wantState(t, m, at(time.Second), gamemsg.MatchEnded)
			if got := m.Scores(); !slices.Equal(got, tc.wantScores) {
				t.Errorf("scores %+v, want %+v", got, tc.wantScores)
			}
			m.AddScore(tc.players[0], 1, 1, 0, at(time.Second)) // after the end: ignored
			if !slices.Equal(m.Scores(), tc.wantScores) {
				t.Errorf("a score after the end changed the scoreboard")
			}
		})
	}
}

func TestWinnerTieAndNobody(t *testing.T) {
	t.Run("tie goes to the lowest id", func(t *testing.T) {
		m, r := started(t, Config{TimeLimit: time.Minute}, 9, 4, 6)
		m.AddScore(9, 5, 0, 0, t0)
		m.AddScore(6, 5, 0, 0, t0)
		m.Tick(at(time.Minute))
		if want := (gamemsg.MatchEnd{Reason: gamemsg.MatchEndTime, Winner: 6, WinnerScore: 5}); r.ends[0] != want {
			t.Errorf("MatchEnd %+v, want %+v", r.ends[0], want)
		}
	})
	t.Run("nobody left", func(t *testing.T) {
		m, r := started(t, Config{TimeLimit: time.Minute}, 1)
		m.AddScore(1, 5, 0, 0, t0)
		m.PlayerLeft(1, t0)
		m.Tick(at(time.Minute))
		if want := (gamemsg.MatchEnd{Reason: gamemsg.MatchEndTime}); r.ends[0] != want {
			t.Errorf("MatchEnd %+v, want %+v", r.ends[0], want)
		}
	})
}

func TestTimeLimitEndsMatch(t *testing.T) {
	m, r := started(t, Config{TimeLimit: 10 * time.Minute, ScoreLimit: 100, Intermission: 15 * time.Second}, 1, 2)
	m.AddScore(1, 40, 4, 0, at(time.Minute))
	m.AddScore(2, 60, 6, 0, at(2*time.Minute))
	if got := m.Snapshot(at(4 * time.Minute)).TimeRemaining; got != 6*time.Minute {
		t.Errorf("TimeRemaining %v, want 6m", got)
	}
	m.Tick(at(10*time.Minute - 1))
	wantState(t, m, at(10*time.Minute-1), gamemsg.MatchInProgress)
	m.Tick(at(10 * time.Minute))
	if want := (gamemsg.MatchEnd{Reason: gamemsg.MatchEndTime, Winner: 2, WinnerScore: 60}); len(r.ends) != 1 || r.ends[0] != want {
		t.Fatalf("MatchEnd %+v, want [%+v]", r.ends, want)
	}
	wantState(t, m, at(10*time.Minute), gamemsg.MatchEnded)
	if want := (gamemsg.MatchStart{Map: "a", Mode: gamemsg.ModeDeathmatch, TimeLimit: 600, ScoreLimit: 100, Round: 1}); r.starts[0] != want {
		t.Errorf("MatchStart %+v, want %+v", r.starts[0], want)
	}
	// Ended lasts one Tick, the intermission counts from the end.
	m.Tick(at(10*time.Minute + 5*time.Second))
	wantState(t, m, at(10*time.Minute+5*time.Second), gamemsg.MatchIntermission)
	if got := m.Snapshot(at(10*time.Minute + 5*time.Second)).TimeRemaining; got != 10*time.Second {
		t.Errorf("intermission TimeRemaining %v, want 10s", got)
	}
	m.Tick(at(10*time.Minute + 15*time.Second))
	wantState(t, m, at(10*time.Minute+15*time.Second), gamemsg.MatchInProgress) // no warmup: b starts at once
	if s := m.Snapshot(at(10*time.Minute + 15*time.Second)); s.Map != "b" || s.MapIndex != 1 || s.Round != 1 {
		t.Errorf("after the intermission: %+v", s)
	}
	if got := m.Scores(); got[0].Score != 0 || got[1].Score != 0 {
		t.Errorf("scores not reset for the new match: %+v", got)
	}
}

func TestRoundCount(t *testing.T) {
	m, r := started(t, Config{RoundCount: 3, TimeLimit: time.Minute, ScoreLimit: 10}, 1, 2)
	m.AddScore(1, 4, 4, 0, at(10*time.Second))
	m.Tick(at(time.Minute)) // round 1 ends on time
	// Round 2 ends on the score limit: player 2 scores 10 within it.
	m.AddScore(2, 10, 10, 0, at(61*time.Second))
	m.AddScore(1, 9, 9, 0, at(62*time.Second)) // 13 for the match, 9 in round 3: not the limit
	if s := m.Snapshot(at(62 * time.Second)); s.Round != 3 || s.State != gamemsg.MatchInProgress || s.TimeRemaining != 59*time.Second {
		t.Fatalf("after two rounds: %+v", s)
	}
	m.Tick(at(121 * time.Second)) // round 3 ends on time: the match ends
	if want := []string{"start a r1", "scores", "start a r2", "scores", "start a r3", "scores", "end Time 1 13"}; !slices.Equal(r.log[len(r.log)-len(want):], want) {
		t.Errorf("announced\n%s\nwant to end with\n%s", strings.Join(r.log, "\n"), strings.Join(want, "\n"))
	}
	for i, s := range r.starts {
		if s.Round != uint8(i+1) || s.Map != "a" {
			t.Errorf("MatchStart %d: %+v", i, s)
		}
	}
	wantState(t, m, at(121*time.Second), gamemsg.MatchEnded)
}

func TestRotationInOrder(t *testing.T) {
	t.Run("through intermissions", func(t *testing.T) {
		m, r := started(t, Config{TimeLimit: time.Minute}, 1)
		now := t0
		for range 3 {
			now = now.Add(time.Minute)
			m.Tick(now) // ends
			m.Tick(now) // intermission 0: next map, round 1
		}
		if want := []string{"a", "b", "c", "a"}; !slices.Equal(r.maps, want) {
			t.Errorf("maps %v, want %v", r.maps, want)
		}
		if len(r.starts) != 4 || r.starts[3].Map != "a" {
			t.Errorf("MatchStarts %+v", r.starts)
		}
	})
	t.Run("one map", func(t *testing.T) {
		m, r := newMatch(t, Config{Maps: []string{"solo"}})
		m.NextMap(t0)
		m.NextMap(t0)
		if want := []string{"solo", "solo", "solo"}; !slices.Equal(r.maps, want) {
			t.Errorf("maps %v, want %v", r.maps, want)
		}
	})
}

func TestShuffle(t *testing.T) {
	maps := []string{"m0", "m1", "m2", "m3", "m4"}
	play := func(seed uint64, n int, maps []string) []string {
		m, r := newMatch(t, Config{Maps: maps, Shuffle: true, Seed: seed})
		for len(r.maps) < n {
			m.NextMap(t0)
		}
		return r.maps
	}
	for _, seed := range []uint64{0, 1, 42, 1 << 63} {
		seq := play(seed, 10*len(maps), maps)
		for c := 0; c < len(seq); c += len(maps) {
			cycle := slices.Sorted(slices.Values(seq[c : c+len(maps)]))
			if !slices.Equal(cycle, maps) {
				t.Errorf("seed %d: cycle %d is %v, not every map once", seed, c/len(maps), seq[c:c+len(maps)])
			}
		}
		for i := 1; i < len(seq); i++ {
			if seq[i] == seq[i-1] {
				t.Errorf("seed %d: %s twice in a row at %d: %v", seed, seq[i], i, seq)
			}
		}
		if again := play(seed, len(seq), maps); !slices.Equal(again, seq) {
			t.Errorf("seed %d is not reproducible:\n%v\n%v", seed, seq, again)
		}
	}
	if a, b := play(1, 50, maps), play(2, 50, maps); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 give the same rotation %v", a)
	}
	two := play(7, 20, []string{"x", "y"})
	for i := 1; i < len(two); i++ {
		if two[i] == two[i-1] {
			t.Fatalf("two maps: repeat in %v", two)
		}
	}
	if seq := play(3, 20, maps); slices.Equal(seq[:5], maps) && slices.Equal(seq[5:10], maps) {
		t.Errorf("shuffle kept the configured order: %v", seq)
	}
}

func TestChangeMap(t *testing.T) {
	t.Run("known map", func(t *testing.T) {
		m, r := started(t, Config{}, 1)
		m.AddScore(1, 3, 3, 0, t0)
		if err := m.ChangeMap("c", at(time.Second)); err != nil {
			t.Fatal(err)
		}
		if want := (gamemsg.MatchEnd{Reason: gamemsg.MatchEndAdmin, Winner: 1, WinnerScore: 3}); len(r.ends) != 1 || r.ends[0] != want {
			t.Errorf("MatchEnd %+v, want [%+v]", r.ends, want)
		}
		if s := m.Snapshot(at(time.Second)); s.State != gamemsg.MatchWarmup || s.Map != "c" || s.MapIndex != 2 || s.Scores[0].Score != 0 {
			t.Errorf("after map c: %+v", s)
		}
		m.NextMap(at(2 * time.Second))
		if want := []string{"a", "c", "a"}; !slices.Equal(r.maps, want) {
			t.Errorf("maps %v, want %v (the rotation continues after c)", r.maps, want)
		}
	})
	t.Run("unknown map", func(t *testing.T) {
		m, r := started(t, Config{}, 1)
		err := m.ChangeMap("dust", t0)
		if !errors.Is(err, ErrUnknownMap) || !strings.Contains(err.Error(), `"dust"`) || !strings.Contains(err.Error(), "a, b, c") {
			t.Errorf("ChangeMap(dust) = %v, want ErrUnknownMap naming dust and listing a, b, c", err)
		}
		if len(r.maps) != 1 || len(r.ends) != 0 {
			t.Errorf("a failed ChangeMap announced: %v", r.log)
		}
		wantState(t, m, t0, gamemsg.MatchInProgress)
	})
	t.Run("shuffled", func(t *testing.T) {
		m, r := newMatch(t, Config{Maps: []string{"m0", "m1", "m2", "m3"}, Shuffle: true, Seed: 9})
		target := "m0"
		if r.maps[0] == target {
			target = "m1"
		}
		if err := m.ChangeMap(target, t0); err != nil {
			t.Fatal(err)
		}
		if s := m.Snapshot(t0); s.Map != target {
			t.Errorf("map %s, want %s", s.Map, target)
		}
	})
}

func TestNextMapFromEachState(t *testing.T) {
	type setup func(m *Match)
	for _, tc := range []struct {
		name     string
		reach    setup
		from     gamemsg.MatchState
		wantEnds []gamemsg.MatchEnd
	}{
		{"warmup", func(*Match) {}, gamemsg.MatchWarmup, nil},
		{"in progress", func(m *Match) { m.Tick(t0) }, gamemsg.MatchInProgress,
			[]gamemsg.MatchEnd{{Reason: gamemsg.MatchEndAdmin, Winner: 1}}},
		{"ended", func(m *Match) { m.Tick(t0); m.EndMatch(t0) }, gamemsg.MatchEnded,
			[]gamemsg.MatchEnd{{Reason: gamemsg.MatchEndAdmin, Winner: 1}}},
		{"intermission", func(m *Match) { m.Tick(t0); m.EndMatch(t0); m.Tick(t0) }, gamemsg.MatchIntermission,
			[]gamemsg.MatchEnd{{Reason: gamemsg.MatchEndAdmin, Winner: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := newMatch(t, Config{Intermission: time.Minute, MinPlayers: 1}, 1)
			tc.reach(m)
			wantState(t, m, t0, tc.from)
			m.NextMap(at(time.Second))
			if !slices.Equal(r.ends, tc.wantEnds) {
				t.Errorf("MatchEnd %+v, want %+v", r.ends, tc.wantEnds)
			}
			if s := m.Snapshot(at(time.Second)); s.State != gamemsg.MatchWarmup || s.Map != "b" || s.Round != 0 {
				t.Errorf("after NextMap: %+v, want warmup on b", s)
			}
			if want := []string{"a", "b"}; !slices.Equal(r.maps, want) {
				t.Errorf("maps %v, want %v", r.maps, want)
			}
		})
	}
	t.Run("wraps", func(t *testing.T) {
		m, r := newMatch(t, Config{})
		for range 4 {
			m.NextMap(t0)
		}
		if want := []string{"a", "b", "c", "a", "b"}; !slices.Equal(r.maps, want) {
			t.Errorf("maps %v, want %v", r.maps, want)
		}
	})
}

func TestEndMatch(t *testing.T) {
	m, r := newMatch(t, Config{Intermission: 20 * time.Second, Warmup: 5 * time.Second}, 3, 8)
	m.Tick(at(5 * time.Second))
	m.AddScore(8, 2, 2, 0, at(6*time.Second))
	m.EndMatch(at(time.Minute))
	if want := (gamemsg.MatchEnd{Reason: gamemsg.MatchEndAdmin, Winner: 8, WinnerScore: 2}); len(r.ends) != 1 || r.ends[0] != want {
		t.Fatalf("MatchEnd %+v, want [%+v]", r.ends, want)
	}
	wantState(t, m, at(time.Minute), gamemsg.MatchEnded)
	m.EndMatch(at(time.Minute)) // nothing left to end
	if len(r.ends) != 1 {
		t.Errorf("a second EndMatch announced again")
	}
	m.Tick(at(time.Minute + time.Second))
	wantState(t, m, at(time.Minute+time.Second), gamemsg.MatchIntermission)
	m.Tick(at(time.Minute + 20*time.Second))
	wantState(t, m, at(time.Minute+20*time.Second), gamemsg.MatchWarmup)
	m.Tick(at(time.Minute + 25*time.Second))
	if s := m.Snapshot(at(time.Minute + 25*time.Second)); s.State != gamemsg.MatchInProgress || s.Map != "b" {
		t.Errorf("after intermission and warmup: %+v", s)
	}

	w, r2 := newMatch(t, Config{MinPlayers: 2}, 1)
	w.EndMatch(t0)
	if len(r2.ends) != 0 {
		t.Errorf("EndMatch in warmup announced %+v", r2.ends)
	}
	wantState(t, w, t0, gamemsg.MatchWarmup)
}

func TestWarmupWaitsForMinPlayers(t *testing.T) {
	m, r := newMatch(t, Config{Warmup: 10 * time.Second, MinPlayers: 2}, 1)
	m.Tick(at(30 * time.Second))
	wantState(t, m, at(30*time.Second), gamemsg.MatchWarmup)
	if got := m.Snapshot(at(30 * time.Second)).TimeRemaining; got != 0 {
		t.Errorf("TimeRemaining %v while waiting for players, want 0", got)
	}
	m.PlayerJoined(2, at(30*time.Second)) // the countdown starts now
	m.Tick(at(35 * time.Second))
	if s := m.Snapshot(at(35 * time.Second)); s.State != gamemsg.MatchWarmup || s.TimeRemaining != 5*time.Second {
		t.Errorf("mid-countdown: %+v", s)
	}
	m.PlayerLeft(2, at(36*time.Second)) // below MinPlayers: the countdown stops
	m.PlayerJoined(3, at(38*time.Second))
	m.Tick(at(45 * time.Second))
	wantState(t, m, at(45*time.Second), gamemsg.MatchWarmup)
	m.AddScore(1, 5, 5, 0, at(45*time.Second)) // ignored in warmup
	m.Tick(at(48 * time.Second))
	wantState(t, m, at(48*time.Second), gamemsg.MatchInProgress)
	if len(r.starts) != 1 || m.Scores()[0].Score != 0 {
		t.Errorf("starts %+v scores %+v", r.starts, m.Scores())
	}
}

func TestScoreUpdateOnEveryChange(t *testing.T) {
	m, r := started(t, Config{}, 5, 2)
	n := len(r.scores)
	adds := []score{{2, 1, 1, 0}, {5, 3, 1, 0}, {2, 0, 0, 1}, {5, -1, 0, 0}, {2, 0, 0, 0}, {99, 1, 1, 1}}
	want := [][]gamemsg.ScoreEntry{
		{{Client: 2, Score: 1, Kills: 1}, {Client: 5}},
		{{Client: 5, Score: 3, Kills: 1}, {Client: 2, Score: 1, Kills: 1}},
		{{Client: 5, Score: 3, Kills: 1}, {Client: 2, Score: 1, Kills: 1, Deaths: 1}},
		{{Client: 5, Score: 2, Kills: 1}, {Client: 2, Score: 1, Kills: 1, Deaths: 1}},
	}
	for _, a := range adds {
		m.AddScore(a.id, a.score, a.kills, a.deaths, t0)
	}
	got := r.scores[n:]
	if len(got) != len(want) {
		t.Fatalf("%d ScoreUpdates for %d changes (a zero change and an unknown player announce nothing)", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i].Scores, want[i]) {
			t.Errorf("ScoreUpdate %d: %+v, want %+v", i, got[i].Scores, want[i])
		}
	}
	got[0].Scores[0].Score = 1000 // the Announcer's to keep: no aliasing
	if m.Scores()[1].Score == 1000 {
		t.Error("the announced slice aliases the scoreboard")
	}
	b := newScoreboard()
	b.join(1)
	b.add(1, 2_000_000_000, 0, 0)
	b.add(1, 2_000_000_000, 0, 0)
	if b.rows[1].Score != 1<<31-1 {
		t.Errorf("score overflowed to %d, want saturation", b.rows[1].Score)
	}
}

func TestPlayerLeftRemovesRow(t *testing.T) {
	m, r := started(t, Config{}, 1, 2)
	m.AddScore(1, 7, 7, 0, t0)
	n := len(r.scores)
	m.PlayerLeft(1, t0)
	if len(r.scores) != n+1 || !slices.Equal(r.lastScores(), []gamemsg.ScoreEntry{{Client: 2}}) {
		t.Errorf("after leaving: %+v", r.scores[n:])
	}
	m.PlayerLeft(1, t0)
	if len(r.scores) != n+1 {
		t.Error("leaving twice announced again")
	}
	m.PlayerJoined(1, t0)
	if s := m.Snapshot(t0); s.Players != 2 || !slices.Equal(s.Scores, []gamemsg.ScoreEntry{{Client: 1}, {Client: 2}}) {
		t.Errorf("after rejoining: %+v, want a fresh row", s)
	}
	m.PlayerJoined(1, t0)
	if m.Snapshot(t0).Players != 2 {
		t.Error("joining twice added a row")
	}
}

func TestNewAnnouncesFirstMap(t *testing.T) {
	_, r := newMatch(t, Config{Maps: []string{"arena", "docks"}})
	if want := []string{"map arena 0"}; !slices.Equal(r.log, want) {
		t.Errorf("New announced %v, want %v", r.log, want)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	ok := Config{Maps: []string{"a"}}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no maps", func(c *Config) { c.Maps = nil }, "Maps is empty"},
		{"duplicate map", func(c *Config) { c.Maps = []string{"a", "b", "a"} }, `"a" is listed twice`},
		{"blank map", func(c *Config) { c.Maps = []string{" "} }, "not a valid map name"},
		{"long map", func(c *Config) { c.Maps = []string{strings.Repeat("m", 65)} }, "not a valid map name"},
		{"control char", func(c *Config) { c.Maps = []string{"a\nb"} }, "not a valid map name"},
		{"mode", func(c *Config) { c.Mode = 7 }, "Mode 7"},
		{"score limit", func(c *Config) { c.ScoreLimit = -1 }, "ScoreLimit"},
		{"time limit", func(c *Config) { c.TimeLimit = -time.Second }, "TimeLimit"},
		{"rounds", func(c *Config) { c.RoundCount = 256 }, "RoundCount 256"},
		{"negative rounds", func(c *Config) { c.RoundCount = -1 }, "RoundCount -1"},
		{"warmup", func(c *Config) { c.Warmup = -1 }, "Warmup"},
		{"intermission", func(c *Config) { c.Intermission = -1 }, "Intermission"},
		{"min players", func(c *Config) { c.MinPlayers = -1 }, "MinPlayers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := New(cfg, &recorder{}, t0)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := New(ok, nil, t0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil Announcer: %v", err)
	}
	maps := []string{"a", "b"}
	m, err := New(Config{Maps: maps, RoundCount: MaxRounds}, &recorder{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	maps[0] = "changed"
	if m.Snapshot(t0).Map != "a" {
		t.Error("New kept the caller's Maps slice")
	}
}

func TestTickAllocatesNothing(t *testing.T) {
	m, _ := started(t, Config{TimeLimit: time.Hour, ScoreLimit: 50}, 1, 2, 3)
	now := t0
	if n := testing.AllocsPerRun(1000, func() { now = now.Add(time.Second / 60); m.Tick(now) }); n != 0 {
		t.Errorf("Tick allocates %v per call", n)
	}
}
