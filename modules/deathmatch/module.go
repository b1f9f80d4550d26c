// Package deathmatch is the deathmatch game mode as a Go plugin module
// (plugin.Serve(deathmatch.New()); built into sparkhost as `--module
// deathmatch`): players spawn on the map of the host's rotation, move by
// ClientInput with the shared movement code, fire hitscan shots validated
// with lag compensation, take damage, die, respawn after a delay at the
// spawn point farthest from their enemies, and score; TeamDeathmatch (the
// server's game_mode) adds red and blue teams, friendly fire and
// auto-balance.
//
// The host owns the match: warmup, rounds, the score and time limits,
// MatchStart, MatchEnd, ScoreUpdate, the intermission and the rotation. The
// module reports each kill with Host.AddScore and follows OnMatchStart,
// OnMatchEnd and OnMapChange, so nothing is announced twice. It sends
// PlayerRespawn (built in) on every spawn, InputAck (built in) to every
// client whose inputs it applied in a tick (every third tick to a client
// whose link is backlogged: module.Link), and its own Frag, Hit, Team and
// Map messages (messages.go).
//
// The players' bodies are replicated entities of type PlayerEntityType
// (body.go): spawned at a spawn, moved every tick from the authoritative
// movement state, destroyed at a death or a departure, each client's
// viewpoint for interest; PlayerRespawn carries the body's id. Shots are
// stopped at the map's obstacles by the Game and then validated by the
// host's lag compensation (Host.Raycast against the bodies' hitboxes,
// rewound by half the shooter's ping).
//
// The rules live in modules/deathmatch/game, the maps in
// modules/deathmatch/maps, the bots' brain in modules/deathmatch/bot and the
// network bots in modules/deathmatch/netbot; this package only wires them
// to the SDK. ClientInput arrives through OnInput (the manifest sets
// Inputs). docs/deathmatch.md is the guide.
package deathmatch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Name and Version of the module.
const (
	Name    = "deathmatch"
	Version = "0.1.0"
)

// Options are what a caller (a test) may set; the zero value is what New
// uses.
type Options struct {
	// Seed of the spawn choices; 0 means one drawn from the clock at Load.
	Seed uint64
	// Config replaces the config file; nil means LoadConfig of the
	// module's data directory.
	Config *Config
}

// Module is the deathmatch module.
type Module struct {
	plugin.Base // OnMessage and Unload: the module has no client-to-server types

	opts    Options
	h       module.Host
	cfg     Config
	catalog *maps.Catalog
	game    *game.Game
	bodies  *bodies
	rc      *hostRaycaster

	ackDue map[uint32]bool // clients whose state changed this tick
	ackIDs []uint32
	// slow are the clients whose link is backlogged (module.Link), looked
	// up every linkCheckTicks: they get an InputAck every ackThinning
	// ticks, which carries their latest input, so that what the server
	// must send them shrinks while their link cannot take it all.
	slow     map[uint32]bool
	ackTicks uint64
	events   []game.Event
	players  []game.PlayerView
	buf      []byte
	refused  refusals
}

type refusals struct{ stale, flood, invalid, unknown uint64 }

var (
	_ plugin.Module       = (*Module)(nil)
	_ plugin.InputHandler = (*Module)(nil)
)

// New returns the deathmatch module.
func New() plugin.Module { return NewWith(Options{}) }

// NewWith returns the deathmatch module with the given seams.
func NewWith(o Options) *Module { return &Module{opts: o} }

// Manifest declares the module's messages and console commands.
func (m *Module) Manifest() module.Manifest {
	return module.Manifest{
		Name: Name, Version: Version,
		Messages:    slices.Clone(schemas),
		EntityTypes: []module.EntityType{PlayerType()},
		Inputs:      true,
		Metrics:     metricSpecs,
		Commands: []module.CommandSpec{
			{Name: "dm_status", Help: "deathmatch map, phase and players (team, health, kills, deaths, score)"},
			{Name: "dm_maps", Help: "the deathmatch maps loaded and where from"},
			{Name: "dm_kill", Usage: "ID|NAME", Help: "kill a player (a suicide while a round is live): unsticks a stuck player"},
		},
	}
}

// Load reads the config (ConfigFile in the module's data directory), loads
// the maps, and sets up the game on the server's current map. An error
// (a bad config, a bad map file, a current map that is not among the maps)
// refuses the start, with one line saying why.
func (m *Module) Load(h module.Host) error {
	m.h = h
	si := h.Server()
	var cfg Config
	var err error
	if m.opts.Config != nil {
		cfg = *m.opts.Config
	} else if cfg, err = LoadConfig(si.DataDir); err != nil {
		return err
	}
	m.cfg = cfg
	if cfg.MapsDir != "" {
		m.catalog, err = maps.LoadDir(cfg.MapsDir)
	} else {
		m.catalog, err = maps.Builtin()
	}
	if err != nil {
		return err
	}
	if err := m.catalog.Require(si.Map); err != nil {
		return err
	}
	cur, _ := m.catalog.Get(si.Map)
	teams := si.Mode == gamemsg.ModeTeamDeathmatch
	m.bodies = newBodies(h, teams)
	m.rc = &hostRaycaster{h: h, b: m.bodies}
	seed := m.opts.Seed
	if seed == 0 {
		seed = uint64(h.Now().UnixNano())
	}
	m.game, err = game.New(cfg.gameConfig(si.TickRate, teams, seed), cur, m.rc)
	if err != nil {
		return err
	}
	if si.MatchState == gamemsg.MatchInProgress {
		// A restart in the middle of a match: play on. The game's counts
		// start from zero and it does not know the round's limits, but the
		// host's scoreboard, which is what players see, is whole.
		m.game.StartRound(gamemsg.MatchStart{Round: 1})
	}
	m.ackDue = make(map[uint32]bool)
	m.slow = make(map[uint32]bool)
	h.Log().Info("deathmatch loaded", "map", cur.Name, "maps", m.catalog.Origin(),
		"teams", teams, "friendly_fire", cfg.FriendlyFire)
	return nil
}

// Game is the module's game (for tests and tools; game goroutine only).
func (m *Module) Game() *game.Game { return m.game }

// OnAdmitted adds the client to the game; it spawns at the next tick. It
// is told the map (Map); with teams, everybody learns the newcomer's team
// and the newcomer everybody's.
func (m *Module) OnAdmitted(c module.ClientInfo) {
	if err := m.game.Join(c.ID); err != nil {
		m.h.Fault(fmt.Errorf("join %d: %w", c.ID, err))
		return
	}
	m.send(c.ID, TypeMap, AppendMap(m.buf[:0], m.game.Map().Name))
	if !m.game.Config().Teams {
		return
	}
	m.players = m.game.AppendPlayers(m.players[:0])
	for _, p := range m.players {
		if p.ID == c.ID {
			m.broadcast(TypeTeam, AppendTeam(m.buf[:0], c.ID, p.Team))
		} else {
			m.send(c.ID, TypeTeam, AppendTeam(m.buf[:0], p.ID, p.Team))
		}
	}
}

// OnLeft removes the client.
func (m *Module) OnLeft(c module.ClientInfo, _ wire.DisconnectReason) {
	m.game.Leave(c.ID)
	m.bodies.left(c.ID)
	delete(m.ackDue, c.ID)
}

// OnInput applies one ClientInput (plugin.InputHandler; the manifest
// subscribes to them); the InputAck goes at the end of the tick. Refused
// inputs are counted (dm_status), not faults: stale and surplus inputs are
// normal on an unreliable channel.
func (m *Module) OnInput(c module.ClientInfo, in gamemsg.ClientInput) {
	switch err := m.game.Input(c.ID, in); {
	case err == nil:
		m.ackDue[c.ID] = true
	case errors.Is(err, game.ErrStaleInput):
		m.refused.stale++
	case errors.Is(err, game.ErrInputFlood):
		m.refused.flood++
	case errors.Is(err, game.ErrUnknownPlayer):
		m.refused.unknown++
	default:
		m.refused.invalid++
	}
}

// OnTick advances the game and carries out what happened: scores, spawns,
// kill and hit messages, InputAcks, replication.
func (m *Module) OnTick(module.Tick) {
	m.game.Tick()
	m.events = m.game.DrainEvents(m.events[:0])
	for i := range m.events {
		m.apply(&m.events[i])
	}
	m.sendAcks()
	m.players = m.game.AppendPlayers(m.players[:0])
	for _, p := range m.players {
		if p.Alive {
			m.bodies.moved(p)
		}
	}
	m.h.SetMetric(metricPlayers, float64(len(m.players)))
}

func (m *Module) apply(e *game.Event) {
	switch e.Kind {
	case game.EventSpawn:
		p, _ := m.game.Player(e.Player)
		entity := m.bodies.spawned(p)
		r := gamemsg.PlayerRespawn{Client: e.Player, EntityID: entity, Position: e.Position, Yaw: e.Yaw}
		m.broadcast(gamemsg.TypePlayerRespawn, gamemsg.AppendPlayerRespawn(m.buf[:0], &r))
		m.ackDue[e.Player] = true
	case game.EventDamage:
		payload := AppendHit(m.buf[:0], Hit{Attacker: e.Other, Victim: e.Player,
			Damage: uint16(min(e.Amount, 0xFFFF)), Health: uint16(min(e.Health, 0xFFFF))})
		m.send(e.Player, TypeHit, payload)
		if e.Other != e.Player {
			m.send(e.Other, TypeHit, payload)
		}
	case game.EventKill:
		m.score(e)
		m.bodies.died(e.Player, e.Team)
	case game.EventTeamChange:
		m.broadcast(TypeTeam, AppendTeam(m.buf[:0], e.Player, e.Team))
	}
}

// score reports a kill to the host's scoreboard (see game's doc for the
// rules) and tells everyone.
func (m *Module) score(e *game.Event) {
	m.h.AddMetric(metricKills, 1)
	// The victim's death first: the killer's point may reach the score
	// limit, and the host counts nothing after that.
	var flags uint8
	switch {
	case e.Other == e.Player:
		flags = FragSuicide
		m.h.AddScore(e.Player, -1, 0, 1)
	case e.TeamKill:
		flags = FragTeamKill
		m.h.AddScore(e.Player, 0, 0, 1)
		m.h.AddScore(e.Other, -1, 0, 0)
	default:
		m.h.AddScore(e.Player, 0, 0, 1)
		m.h.AddScore(e.Other, 1, 1, 0)
	}
	m.broadcast(TypeFrag, AppendFrag(m.buf[:0], Frag{Killer: e.Other, Victim: e.Player, Flags: flags}))
}

// sendAcks sends an InputAck to every client whose inputs were applied, or
// who spawned, this tick: the authoritative state after its last input.
func (m *Module) sendAcks() {
	m.ackTicks++
	if m.ackTicks%linkCheckTicks == 0 {
		m.checkLinks()
	}
	m.ackIDs = m.ackIDs[:0]
	for id := range m.ackDue {
		m.ackIDs = append(m.ackIDs, id)
	}
	slices.Sort(m.ackIDs) // map order is random; keep the sends repeatable
	for _, id := range m.ackIDs {
		if m.slow[id] && m.ackTicks%ackThinning != 0 {
			continue // due still: a later tick's ack carries the latest input
		}
		delete(m.ackDue, id)
		p, ok := m.game.Player(id)
		if !ok || !p.HasInput {
			continue
		}
		ack := p.State.Ack(p.LastInput)
		m.send(id, gamemsg.TypeInputAck, gamemsg.AppendInputAck(m.buf[:0], &ack))
	}
}

// Back-pressure: how often the module looks at its clients' links, and
// how many ticks a backlogged client's InputAcks are apart.
const (
	linkCheckTicks = 30
	ackThinning    = 3
)

// checkLinks notes which clients' links are backlogged (module.Link).
func (m *Module) checkLinks() {
	clear(m.slow)
	for _, c := range m.h.Clients() {
		if c.Link.Backlogged {
			m.slow[c.ID] = true
		}
	}
}

func (m *Module) send(client uint32, t wire.MessageType, payload []byte) {
	m.buf = payload[:0]
	if err := m.h.Send(client, t, payload); err != nil {
		m.h.Fault(err)
	}
}

func (m *Module) broadcast(t wire.MessageType, payload []byte) {
	m.buf = payload[:0]
	if err := m.h.Broadcast(t, payload); err != nil {
		m.h.Fault(err)
	}
}

// OnMatchStart starts a round (round 1 clears the game's counts, as the
// host clears its scoreboard; the round's limits stop the game's counting
// when they stop the host's).
func (m *Module) OnMatchStart(ms gamemsg.MatchStart) { m.game.StartRound(ms) }

// OnMatchEnd stops scoring until the next round.
func (m *Module) OnMatchEnd(gamemsg.MatchEnd) { m.game.EndMatch() }

// OnMapChange loads the rotation's next map and tells everybody (Map). A
// map the module does not have is a fault, and play goes on on the current
// one.
func (m *Module) OnMapChange(name string, _ int) {
	next, ok := m.catalog.Get(name)
	if !ok {
		m.h.Fault(m.catalog.Require(name))
		return
	}
	if err := m.game.ChangeMap(next); err != nil {
		m.h.Fault(err)
		return
	}
	m.broadcast(TypeMap, AppendMap(m.buf[:0], name))
}

// Command runs the module's console commands.
func (m *Module) Command(name string, args []string) (string, error) {
	switch name {
	case "dm_status":
		return m.status(), nil
	case "dm_maps":
		return fmt.Sprintf("maps from %s: %s (playing %s)", m.catalog.Origin(),
			strings.Join(m.catalog.Names(), ", "), m.game.Map().Name), nil
	case "dm_kill":
		if len(args) != 1 {
			return "", errors.New("usage: dm_kill ID|NAME")
		}
		id, err := m.findClient(args[0])
		if err != nil {
			return "", err
		}
		if err := m.game.Suicide(id); err != nil {
			return "", err
		}
		return fmt.Sprintf("killed %s", args[0]), nil
	}
	return "", fmt.Errorf("no such command: %s", name)
}

func (m *Module) findClient(arg string) (uint32, error) {
	if n, err := strconv.ParseUint(arg, 10, 32); err == nil {
		if _, ok := m.game.Player(uint32(n)); ok {
			return uint32(n), nil
		}
	}
	for _, c := range m.h.Clients() {
		if c.Name == arg {
			return c.ID, nil
		}
	}
	return 0, fmt.Errorf("no player %q", arg)
}

func (m *Module) status() string {
	var b strings.Builder
	mode := "free-for-all"
	if m.game.Config().Teams {
		ts := m.game.TeamScores()
		mode = fmt.Sprintf("team deathmatch (red %d, blue %d)", ts[game.TeamRed], ts[game.TeamBlue])
	}
	fmt.Fprintf(&b, "map %s, %s, %s, tick %d\n", m.game.Map().Name, m.game.Phase(), mode, m.game.TickNumber())
	players := m.game.AppendPlayers(nil)
	if len(players) == 0 {
		b.WriteString("no players\n")
	} else {
		fmt.Fprintf(&b, "%6s  %-16s %-4s %6s %5s %6s %5s\n", "id", "name", "team", "health", "kills", "deaths", "score")
	}
	for _, p := range players {
		c, _ := m.h.Client(p.ID)
		team := [...]string{"-", "red", "blue"}[p.Team]
		health := strconv.Itoa(p.Health)
		if !p.Alive {
			health = "dead"
		}
		fmt.Fprintf(&b, "%6d  %-16s %-4s %6s %5d %6d %5d\n", p.ID, c.Name, team, health, p.Kills, p.Deaths, p.Score)
	}
	fmt.Fprintf(&b, "inputs refused: %d stale, %d surplus, %d invalid, %d unknown player",
		m.refused.stale, m.refused.flood, m.refused.invalid, m.refused.unknown)
	fmt.Fprintf(&b, "\nbodies %d; shots refused by lag compensation: %d", m.bodies.len(), m.rc.refused)
	return b.String()
}
