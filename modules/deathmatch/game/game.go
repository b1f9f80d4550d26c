package game

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// Errors of Join and Input; match them with errors.Is.
var (
	ErrInvalidPlayer = errors.New("game: player id 0 is reserved")
	ErrPlayerExists  = errors.New("game: player already joined")
	ErrUnknownPlayer = errors.New("game: no such player")
	// ErrStaleInput: an input whose sequence is not after the last one
	// applied (a duplicate or a late one; clients resend pending inputs).
	ErrStaleInput = errors.New("game: input already applied")
	// ErrInputFlood: the player has no input left to spend this tick
	// (see MaxInputBurst); the input is dropped.
	ErrInputFlood = errors.New("game: more inputs than ticks")
	// ErrInvalidInput wraps movement.ErrInvalidInput.
	ErrInvalidInput = movement.ErrInvalidInput
)

// Phase is where the Game stands in the host's match.
type Phase uint8

// Phases. Damage is dealt and kills count only in PhaseLive.
const (
	// PhaseWarmup: a map is loaded and no round is running; players move
	// and shoot without effect.
	PhaseWarmup Phase = iota
	// PhaseLive: a round is in progress.
	PhaseLive
	// PhaseOver: the round or the match ended (by the host's limits or its
	// MatchEnd); until the next round or map, as in warmup.
	PhaseOver
)

func (p Phase) String() string {
	switch p {
	case PhaseWarmup:
		return "warmup"
	case PhaseLive:
		return "live"
	case PhaseOver:
		return "over"
	}
	return "phase?"
}

// Teams of a TeamDeathmatch (maps.TeamRed, maps.TeamBlue); 0 without teams.
const (
	NoTeam   = maps.AnyTeam
	TeamRed  = maps.TeamRed
	TeamBlue = maps.TeamBlue
)

// PlayerView is a copy of one player's state.
type PlayerView struct {
	ID     uint32
	Team   uint8
	State  movement.State
	Health int
	Alive  bool
	Kills  int
	Deaths int
	Score  int
	// LastInput is the sequence of the last input applied (the InputAck's
	// last_input_seq); HasInput is false before the first.
	LastInput uint32
	HasInput  bool
}

type player struct {
	id         uint32
	team       uint8
	joined     uint64 // join order, for auto-balance
	state      movement.State
	health     int
	alive      bool
	respawnAt  uint64 // the tick at which a dead player spawns
	moved      bool   // spawned since the last Record: not interpolated
	nextFire   uint64 // tick
	credits    int
	lastSeq    uint32
	hasSeq     bool
	kills      int
	deaths     int
	score      int
	roundScore int
}

func (p *player) view() PlayerView {
	return PlayerView{ID: p.id, Team: p.team, State: p.state, Health: p.health, Alive: p.alive,
		Kills: p.kills, Deaths: p.deaths, Score: p.score, LastInput: p.lastSeq, HasInput: p.hasSeq}
}

// Game is one server's deathmatch. Create it with New.
type Game struct {
	cfg       Config
	rc        Raycaster
	m         *maps.Map
	world     *movement.World
	params    movement.Params
	fireTicks uint64
	deadTicks uint64
	rng       *rand.Rand

	phase      Phase
	roundStart uint64 // tick of StartRound
	scoreLimit int    // points in a round that end it; 0 none
	timeLimit  uint64 // ticks a round lasts; 0 none
	tick       uint64
	joins      uint64
	players    []*player // by id
	events     []Event

	// scratch
	bodies []lagcomp.Entity
	cands  []int
	best   []int
}

// New returns a Game in warmup on map m, validating shots with rc.
func New(cfg Config, m *maps.Map, rc Raycaster) (*Game, error) {
	cfg, err := cfg.populate()
	if err != nil {
		return nil, err
	}
	if m == nil || rc == nil {
		return nil, fmt.Errorf("%w: a map and a Raycaster are required", ErrInvalidConfig)
	}
	g := &Game{
		cfg: cfg, rc: rc,
		fireTicks: ticks(cfg.Weapon.FireInterval, cfg.TickRate),
		deadTicks: ticks(cfg.RespawnDelay, cfg.TickRate),
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	if err := g.load(m); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Game) load(m *maps.Map) error {
	w, err := m.World(g.cfg.Movement)
	if err != nil {
		return fmt.Errorf("map %s: %w", m.Name, err)
	}
	g.m, g.world, g.params = m, w, w.Params()
	return nil
}

// Config returns the Game's Config with its defaults filled in.
func (g *Game) Config() Config { return g.cfg }

// Map is the map being played.
func (g *Game) Map() *maps.Map { return g.m }

// World is the movement World of the map: the one clients must predict with.
func (g *Game) World() *movement.World { return g.world }

// Phase is the Game's phase.
func (g *Game) Phase() Phase { return g.phase }

// TickNumber is the number of Ticks so far.
func (g *Game) TickNumber() uint64 { return g.tick }

// Now is the Game's time: TickNumber ticks at the tick rate.
func (g *Game) Now() time.Duration {
	return time.Duration(g.tick * uint64(time.Second) / uint64(g.cfg.TickRate))
}

// Join adds a player: on the smaller team with teams, dead, to spawn at the
// next Tick.
func (g *Game) Join(id uint32) error {
	if id == 0 {
		return ErrInvalidPlayer
	}
	i, found := g.find(id)
	if found {
		return fmt.Errorf("%w: %d", ErrPlayerExists, id)
	}
	p := &player{id: id, joined: g.joins, respawnAt: g.tick + 1, credits: MaxInputBurst}
	g.joins++
	if g.cfg.Teams {
		p.team = g.smallerTeam()
	}
	g.players = slices.Insert(g.players, i, p)
	return nil
}

// Leave removes a player; an unknown id does nothing.
func (g *Game) Leave(id uint32) {
	if i, ok := g.find(id); ok {
		g.players = slices.Delete(g.players, i, i+1)
	}
}

func (g *Game) find(id uint32) (int, bool) {
	return slices.BinarySearchFunc(g.players, id, func(p *player, id uint32) int {
		switch {
		case p.id < id:
			return -1
		case p.id > id:
			return 1
		}
		return 0
	})
}

func (g *Game) get(id uint32) *player {
	if i, ok := g.find(id); ok {
		return g.players[i]
	}
	return nil
}

// Player returns a copy of a player's state.
func (g *Game) Player(id uint32) (PlayerView, bool) {
	if p := g.get(id); p != nil {
		return p.view(), true
	}
	return PlayerView{}, false
}

// Len is the number of players.
func (g *Game) Len() int { return len(g.players) }

// AppendPlayers appends every player's state to dst, in id order.
func (g *Game) AppendPlayers(dst []PlayerView) []PlayerView {
	for _, p := range g.players {
		dst = append(dst, p.view())
	}
	return dst
}

// TeamScores returns the summed score of each team, indexed by team (index
// 0 holds the players without a team).
func (g *Game) TeamScores() [3]int {
	var s [3]int
	for _, p := range g.players {
		s[p.team] += p.score
	}
	return s
}

// DrainEvents appends the events since the last drain to dst, oldest first,
// and forgets them. Call it after every Tick (and after Inputs if you want
// them sooner): events pile up until drained.
func (g *Game) DrainEvents(dst []Event) []Event {
	dst = append(dst, g.events...)
	g.events = g.events[:0]
	return dst
}

func (g *Game) emit(e Event) { g.events = append(g.events, e) }

// StartRound follows the host's MatchStart: round 1 of a match clears
// every player's kills, deaths and score, and every round respawns
// everybody at the next Tick with full health. The round's score and time
// limits are the host's: the Game stops counting the moment the host's
// match does (a player's points in the round reach ScoreLimit, or
// TimeLimit has passed since this call), so that the two scoreboards agree
// even for kills in the same tick as the end.
func (g *Game) StartRound(ms gamemsg.MatchStart) {
	g.phase = PhaseLive
	g.roundStart = g.tick
	g.scoreLimit = int(ms.ScoreLimit)
	g.timeLimit = 0
	if ms.TimeLimit > 0 {
		g.timeLimit = ticks(time.Duration(float64(ms.TimeLimit)*float64(time.Second)), g.cfg.TickRate)
	}
	for _, p := range g.players {
		if ms.Round <= 1 {
			p.kills, p.deaths, p.score = 0, 0, 0
		}
		p.roundScore = 0
		g.respawnSoon(p)
	}
}

// live reports whether kills count now, ending the round by its time limit.
func (g *Game) live() bool {
	if g.phase == PhaseLive && g.timeLimit > 0 && g.tick-g.roundStart >= g.timeLimit {
		g.phase = PhaseOver
	}
	return g.phase == PhaseLive
}

// EndMatch ends the match (the host's MatchEnd): nothing counts until the
// next round starts.
func (g *Game) EndMatch() { g.phase = PhaseOver }

// ChangeMap loads m (the host's map change): warmup, scores cleared,
// everybody respawns on m at the next Tick.
func (g *Game) ChangeMap(m *maps.Map) error {
	if err := g.load(m); err != nil {
		return err
	}
	g.phase = PhaseWarmup
	if r, ok := g.rc.(Resetter); ok {
		r.Reset()
	}
	for _, p := range g.players {
		p.kills, p.deaths, p.score = 0, 0, 0
		g.respawnSoon(p)
	}
	return nil
}

// respawnSoon takes p out of play until the next Tick, without a death.
func (g *Game) respawnSoon(p *player) {
	p.alive, p.respawnAt = false, g.tick+1
}

// Suicide kills a living player (a stuck player's way out): counted as a
// suicide while a round is live, otherwise a plain respawn at the next Tick.
func (g *Game) Suicide(id uint32) error {
	p := g.get(id)
	if p == nil {
		return fmt.Errorf("%w: %d", ErrUnknownPlayer, id)
	}
	if !p.alive {
		return nil
	}
	if !g.live() {
		g.respawnSoon(p)
		return nil
	}
	g.kill(p, p)
	return nil
}

// Tick advances the clock by one tick: every player gains an input to
// spend, the dead whose delay is over respawn, the teams are balanced, and
// the living players' boxes are recorded for lag compensation.
func (g *Game) Tick() {
	g.tick++
	for _, p := range g.players {
		p.credits = min(p.credits+1, MaxInputBurst)
		if !p.alive && g.tick >= p.respawnAt {
			g.spawn(p)
		}
	}
	if g.cfg.Teams && g.cfg.AutoBalance {
		g.balance()
	}
	g.record()
}

// record hands the living players' boxes to a Recorder.
func (g *Game) record() {
	rec, ok := g.rc.(Recorder)
	if !ok {
		return
	}
	g.bodies = g.bodies[:0]
	for _, p := range g.players {
		if !p.alive {
			continue
		}
		g.bodies = append(g.bodies, lagcomp.Entity{ID: p.id, Box: lagcomp.AABB(g.world.PlayerBox(p.state)), Teleported: p.moved})
		p.moved = false
	}
	// Cannot fail: times increase, ids are unique and non-zero, boxes are
	// finite (movement keeps states finite).
	_ = rec.Record(g.Now(), g.bodies)
}
