package deathmatch_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// matchLog is what the observing bot (bot1) saw of the match: every
// client gets the broadcasts, on one ordered channel.
type matchLog struct {
	mu     sync.Mutex
	starts []gamemsg.MatchStart
	ends   []gamemsg.MatchEnd
	board  []gamemsg.ScoreEntry // the last ScoreUpdate before the first MatchEnd
	frags  []deathmatch.Frag    // between the first and the second MatchStart
	bad    []string             // messages that did not parse
}

func (l *matchLog) observe(m netstack.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	switch m.Header.Type {
	case gamemsg.TypeMatchStart:
		var ms gamemsg.MatchStart
		if ms, err = gamemsg.ParseMatchStart(m.Payload); err == nil {
			l.starts = append(l.starts, ms)
		}
	case gamemsg.TypeMatchEnd:
		var me gamemsg.MatchEnd
		if me, err = gamemsg.ParseMatchEnd(m.Payload); err == nil {
			l.ends = append(l.ends, me)
		}
	case gamemsg.TypeScoreUpdate:
		var su gamemsg.ScoreUpdate
		if su, err = gamemsg.ParseScoreUpdate(m.Payload); err == nil && len(l.starts) == 1 && len(l.ends) == 0 {
			l.board = su.Scores
		}
	case deathmatch.TypeFrag:
		var f deathmatch.Frag
		if f, err = deathmatch.ParseFrag(m.Payload); err == nil && len(l.starts) == 1 {
			l.frags = append(l.frags, f)
		}
	}
	if err != nil {
		l.bad = append(l.bad, m.Header.Type.String()+": "+err.Error())
	}
}

// done reports whether the match ended and the next one started.
func (l *matchLog) done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ends) > 0 && len(l.starts) >= 2
}

// TestMatchOnRealServer: bots play a free-for-all on a real server
// (127.0.0.1, the module as a plugin subprocess, the bots as network
// clients that see each other only through entity replication) until the
// score limit; MatchEnd follows, then the next map of the rotation starts,
// and the scoreboard agrees with the kills the bots were told of.
func TestMatchOnRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole match over loopback")
	}
	const n, scoreLimit = 6, 5
	srv := startServer(t, "respawn_seconds = 1\n", func(c *config.Config) {
		c.Match.ScoreLimit = scoreLimit
		c.Match.TimeLimitMinutes = 5 // a fallback; the score limit ends it
		c.Match.WarmupSeconds, c.Match.IntermissionSeconds = 1, 1
		c.Match.MapRotation = []string{"arena", "warehouse"}
	})
	var log matchLog
	start := time.Now()
	bots := runBots(t, srv, n, 1, log.observe)
	for deadline := start.Add(120 * time.Second); !log.done(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.mu.Lock()
			t.Fatalf("after 120 s: MatchStarts %+v, MatchEnds %+v, %d frags, scores %+v\n%s",
				log.starts, log.ends, len(log.frags), log.board, botLines(bots))
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("match over in %.1f s: %d frags, end %+v\n%s", time.Since(start).Seconds(), len(log.frags), log.ends[0], botLines(bots))
	if len(log.bad) > 0 {
		t.Fatalf("malformed messages: %v", log.bad)
	}

	// The match: round 1 on arena, ended by the score limit.
	end := log.ends[0]
	if log.starts[0].Map != "arena" || log.starts[0].Round != 1 || log.starts[0].ScoreLimit != scoreLimit {
		t.Fatalf("first MatchStart %+v", log.starts[0])
	}
	if end.Reason != gamemsg.MatchEndScore || end.WinnerScore < scoreLimit || len(log.board) != n ||
		log.board[0].Client != end.Winner || log.board[0].Score != end.WinnerScore {
		t.Fatalf("MatchEnd %+v, last scoreboard %+v", end, log.board)
	}
	// The next map of the rotation.
	if next := log.starts[1]; next.Map != "warehouse" || next.Round != 1 {
		t.Fatalf("second MatchStart %+v", next)
	}
	checkScoreboard(t, log.board, log.frags)

	// Every bot spawned with a body (PlayerRespawn carried its entity id),
	// saw enemies through replication, fired, and predicted itself with
	// the server's movement (a dropped input on a busy machine costs a
	// tick's movement, a tenth of a unit).
	var hits uint64
	for _, b := range bots {
		st := b.Stats()
		if st.Body == 0 || st.Respawns == 0 || st.Sighted == 0 || st.Firing == 0 || st.MaxCorrection > 2 {
			t.Errorf("%s: %+v", b.Name(), st)
		}
		hits += st.Hits
	}
	if hits == 0 {
		t.Error("no bot hit anybody")
	}
	checkHealthVisibility(t, bots[0])
}

// checkScoreboard compares the host's scoreboard at the match's end with
// the Frags: every kill that counted was announced, and nothing else.
func checkScoreboard(t *testing.T, board []gamemsg.ScoreEntry, frags []deathmatch.Frag) {
	t.Helper()
	type counts struct{ kills, deaths, penalties int }
	want := map[uint32]*counts{}
	get := func(id uint32) *counts {
		if want[id] == nil {
			want[id] = &counts{}
		}
		return want[id]
	}
	enemyKills := 0
	for _, f := range frags {
		get(f.Victim).deaths++
		switch {
		case f.Flags&deathmatch.FragSuicide != 0:
			if f.Killer != f.Victim {
				t.Errorf("suicide frag %+v", f)
			}
			get(f.Victim).penalties++
		case f.Flags&deathmatch.FragTeamKill != 0:
			t.Errorf("team kill %+v in a free-for-all", f)
		default:
			get(f.Killer).kills++
			enemyKills++
		}
	}
	var sumKills, sumDeaths int
	for _, row := range board {
		c := get(row.Client)
		if int(row.Kills) != c.kills || int(row.Deaths) != c.deaths || int(row.Score) != c.kills-c.penalties {
			t.Errorf("client %d: scoreboard %+v, frags say %d kills %d deaths %d suicides", row.Client, row, c.kills, c.deaths, c.penalties)
		}
		sumKills += int(row.Kills)
		sumDeaths += int(row.Deaths)
	}
	if sumKills != enemyKills || sumDeaths != len(frags) {
		t.Errorf("Σkills %d, Σdeaths %d; %d frags of which %d enemy kills", sumKills, sumDeaths, len(frags), enemyKills)
	}
}

// checkHealthVisibility: in a free-for-all a client sees the health
// (Party) of its own body only; position and team (Public) of all.
func checkHealthVisibility(t *testing.T, b *netbot.Bot) {
	t.Helper()
	var own, others int
	b.World().Range(func(e *client.Entity) bool {
		if e.Type != deathmatch.PlayerEntityType {
			return true
		}
		_, health := e.Field("health")
		_, team := e.Field("team")
		_, pos := e.Position()
		if e.Owner == b.ID() {
			own++
			if !health {
				t.Errorf("own body %d: health not visible", e.ID)
			}
		} else {
			others++
			if health {
				t.Errorf("body %d of client %d: health visible to %d", e.ID, e.Owner, b.ID())
			}
		}
		if !team || !pos {
			t.Errorf("body %d: team or position not visible", e.ID)
		}
		return true
	})
	if others == 0 || own > 1 {
		t.Errorf("the observer knows %d other bodies and %d of its own", others, own)
	}
}

func botLines(bots []*netbot.Bot) string {
	var b strings.Builder
	for _, bot := range bots {
		fmt.Fprintf(&b, "%s (%d): %+v\n", bot.Name(), bot.ID(), bot.Stats())
	}
	return b.String()
}
