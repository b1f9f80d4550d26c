// Package match owns the match state machine and the map rotation of a
// DedicatedServer: warmup, the rounds of a match, its end by score, time or
// admin, the intermission and the move to the next map. Every change is
// announced through an Announcer with the exact wire payloads of §4 (MatchStart,
// MatchEnd, ScoreUpdate), so the host only has to broadcast them.
//
// It is pure logic: it never reads a clock, starts a goroutine or locks. The
// game thread passes the current time into every call, and a Match is not safe
// for concurrent use.
package match

import (
	"fmt"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Announcer receives what a Match announces; the host broadcasts the payloads
// to clients and tells its modules. Calls are made synchronously from the
// Match's methods, after its state is updated; an Announcer must not call back
// into the Match. A ScoreUpdate's slice is the Announcer's to keep.
type Announcer interface {
	MatchStart(gamemsg.MatchStart)     // at the start of every round
	MatchEnd(gamemsg.MatchEnd)         // once per match, after its last round or an admin end
	ScoreUpdate(gamemsg.ScoreUpdate)   // the whole scoreboard, sorted, on every change
	MapChanged(name string, index int) // a map is loaded: on New and on every move in the rotation
}

// Status is a Match's state for GameStateSync and the admin console.
type Status struct {
	State         gamemsg.MatchState
	Mode          gamemsg.GameMode
	Map           string
	MapIndex      int                  // index of Map in Config.Maps
	Round         int                  // current round from 1, or the last one played; 0 before round 1
	TimeRemaining time.Duration        // of the current phase (see Snapshot); 0 if it has no limit
	Scores        []gamemsg.ScoreEntry // by score, highest first, then by id
	Players       int
}

// Match is the state machine of the matches played on a server:
//
//	Warmup → InProgress → Ended → Intermission → (next map) Warmup
//
// Warmup: a map is loaded and scores are zero. The warmup counts down while at
// least MinPlayers are present: it starts when the count is reached and starts
// over if it drops below. When Warmup has elapsed, round 1 begins. Scores
// added during the warmup are ignored.
//
// InProgress: a match is RoundCount rounds on one map. Each round is announced
// by MatchStart with its number; it ends when one player has scored
// ScoreLimit points within it or when TimeLimit has passed since its start,
// and the next round begins at once. Scores are kept per match: the
// scoreboard adds up all rounds, and ScoreLimit is measured against the points
// of the current round only. After the last round, or at an admin EndMatch,
// MatchEnd announces the reason and the winner (the highest match score, the
// lowest id on a tie, 0 with nobody present). Players leaving does not pause
// a match.
//
// Ended lasts until the next Tick, so that the end is visible to one state
// sync; Intermission then lasts until Intermission has passed since the end,
// and the next map of the rotation is loaded in Warmup.
//
// Players: a player who leaves loses their row of the scoreboard (and a
// rejoin starts from zero), so that ScoreUpdate lists only connected clients
// and the winner is always one the others can see.
//
// Time-driven changes happen in Tick; AddScore ends a round at once.
type Match struct {
	cfg   Config
	ann   Announcer
	rot   rotation
	board scoreboard

	state       gamemsg.MatchState
	round       int
	counting    bool      // warmup countdown running (enough players)
	warmupSince time.Time // start of the countdown
	roundStart  time.Time
	endedAt     time.Time
}

// New returns a Match in Warmup on the first map of the rotation, and
// announces that map with MapChanged. The error matches ErrInvalidConfig.
func New(cfg Config, a Announcer, now time.Time) (*Match, error) {
	cfg, err := cfg.populate()
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("%w: the Announcer is nil", ErrInvalidConfig)
	}
	m := &Match{cfg: cfg, ann: a, rot: newRotation(len(cfg.Maps), cfg.Shuffle, cfg.Seed), board: newScoreboard()}
	m.load(m.rot.current(), now)
	return m, nil
}

// Tick makes the time-driven changes due at now, as many as are due.
func (m *Match) Tick(now time.Time) {
	for m.step(now) {
	}
}

// step makes at most one change and reports whether another may follow. It
// stops in Ended, which lasts until the next Tick.
func (m *Match) step(now time.Time) bool {
	switch m.state {
	case gamemsg.MatchWarmup:
		if m.counting && now.Sub(m.warmupSince) >= m.cfg.Warmup {
			m.startRound(1, now)
			return true
		}
	case gamemsg.MatchInProgress:
		if m.cfg.TimeLimit > 0 && now.Sub(m.roundStart) >= m.cfg.TimeLimit {
			m.endRound(gamemsg.MatchEndTime, now)
			return m.state == gamemsg.MatchInProgress
		}
	case gamemsg.MatchEnded:
		m.state = gamemsg.MatchIntermission
		return true
	case gamemsg.MatchIntermission:
		if now.Sub(m.endedAt) >= m.cfg.Intermission {
			m.load(m.rot.advance(), now)
			return true
		}
	}
	return false
}

// PlayerJoined adds a zero row for id (announced) and may start the warmup
// countdown. Joining twice changes nothing.
func (m *Match) PlayerJoined(id uint32, now time.Time) {
	if !m.board.join(id) {
		return
	}
	m.announceScores()
	m.checkWarmup(now)
}

// PlayerLeft removes id's row (announced) and may stop the warmup countdown.
func (m *Match) PlayerLeft(id uint32, now time.Time) {
	if !m.board.leave(id) {
		return
	}
	m.announceScores()
	m.checkWarmup(now)
}

// AddScore adds to a present player's score, kills and deaths while a round is
// in progress and announces the scoreboard; it ignores other states, absent
// players and all-zero changes. A round ends at once when the player's points
// in it reach ScoreLimit.
func (m *Match) AddScore(id uint32, score, kills, deaths int32, now time.Time) {
	if m.state != gamemsg.MatchInProgress {
		return
	}
	r, changed := m.board.add(id, score, kills, deaths)
	if !changed {
		return
	}
	m.announceScores()
	if m.cfg.ScoreLimit > 0 && r.roundScore >= m.cfg.ScoreLimit {
		m.endRound(gamemsg.MatchEndScore, now)
	}
}

// EndMatch ends the match in progress with reason admin (the admin console's
// endmatch); the intermission and the next map follow as after any end. In
// any other state there is no match to end and it does nothing.
func (m *Match) EndMatch(now time.Time) {
	if m.state == gamemsg.MatchInProgress {
		m.endMatch(gamemsg.MatchEndAdmin, now)
	}
}

// NextMap loads the next map of the rotation at once, in Warmup, skipping any
// intermission (the admin console's nextmap). A match in progress ends first
// with reason admin.
func (m *Match) NextMap(now time.Time) {
	m.EndMatch(now)
	m.load(m.rot.advance(), now)
}

// ChangeMap loads the named map at once, in Warmup, and moves the rotation
// there, so the map after it comes next (the admin console's map NAME). A
// match in progress ends first with reason admin. The name must be in the
// rotation; the error matches ErrUnknownMap and lists the maps.
func (m *Match) ChangeMap(name string, now time.Time) error {
	i := -1
	for j, mapName := range m.cfg.Maps {
		if mapName == name {
			i = j
			break
		}
	}
	if i < 0 {
		return fmt.Errorf("%w: %q; the rotation has %s", ErrUnknownMap, name, strings.Join(m.cfg.Maps, ", "))
	}
	m.EndMatch(now)
	m.rot.jump(i)
	m.load(i, now)
	return nil
}

// Snapshot returns the state at now. TimeRemaining is that of the current
// phase: the warmup countdown (0 while waiting for players), the round's time
// limit, or the intermission; 0 when Ended or when the phase has no limit.
func (m *Match) Snapshot(now time.Time) Status {
	s := m.Phase(now)
	s.Scores = m.board.sorted()
	return s
}

// Phase is Snapshot without the scoreboard: it allocates nothing, for callers
// that publish the match state every tick.
func (m *Match) Phase(now time.Time) Status {
	i := m.rot.current()
	s := Status{
		State:    m.state,
		Mode:     m.cfg.Mode,
		Map:      m.cfg.Maps[i],
		MapIndex: i,
		Round:    m.round,
		Players:  len(m.board.rows),
	}
	switch {
	case m.state == gamemsg.MatchWarmup && m.counting:
		s.TimeRemaining = m.cfg.Warmup - now.Sub(m.warmupSince)
	case m.state == gamemsg.MatchInProgress && m.cfg.TimeLimit > 0:
		s.TimeRemaining = m.cfg.TimeLimit - now.Sub(m.roundStart)
	case m.state == gamemsg.MatchIntermission:
		s.TimeRemaining = m.cfg.Intermission - now.Sub(m.endedAt)
	}
	s.TimeRemaining = max(s.TimeRemaining, 0)
	return s
}

// Scores returns a new slice of the scoreboard, by score, highest first, then
// by id.
func (m *Match) Scores() []gamemsg.ScoreEntry { return m.board.sorted() }

// load makes map i current, in Warmup with zero scores.
func (m *Match) load(i int, now time.Time) {
	m.state, m.round, m.counting = gamemsg.MatchWarmup, 0, false
	m.ann.MapChanged(m.cfg.Maps[i], i)
	if m.board.reset() {
		m.announceScores()
	}
	m.checkWarmup(now)
}

// checkWarmup starts or stops the warmup countdown as players come and go.
func (m *Match) checkWarmup(now time.Time) {
	if m.state != gamemsg.MatchWarmup {
		return
	}
	enough := len(m.board.rows) >= m.cfg.MinPlayers
	if enough && !m.counting {
		m.warmupSince = now
	}
	m.counting = enough
}

func (m *Match) startRound(r int, now time.Time) {
	if r == 1 && m.board.reset() {
		m.announceScores()
	}
	m.board.resetRound()
	m.state, m.round, m.roundStart = gamemsg.MatchInProgress, r, now
	m.ann.MatchStart(gamemsg.MatchStart{
		Map:        m.cfg.Maps[m.rot.current()],
		Mode:       m.cfg.Mode,
		TimeLimit:  float32(m.cfg.TimeLimit.Seconds()),
		ScoreLimit: m.cfg.ScoreLimit,
		Round:      uint8(r),
	})
}

// endRound ends the current round; after the last one, the match.
func (m *Match) endRound(reason gamemsg.MatchEndReason, now time.Time) {
	if m.round < m.cfg.RoundCount {
		m.startRound(m.round+1, now)
		return
	}
	m.endMatch(reason, now)
}

func (m *Match) endMatch(reason gamemsg.MatchEndReason, now time.Time) {
	m.state, m.endedAt = gamemsg.MatchEnded, now
	winner, score := m.board.winner()
	m.ann.MatchEnd(gamemsg.MatchEnd{Reason: reason, Winner: winner, WinnerScore: score})
}

func (m *Match) announceScores() {
	m.ann.ScoreUpdate(gamemsg.ScoreUpdate{Scores: m.board.sorted()})
}
