package rooms

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Room is one room as it runs on the game thread: its lobby entry, its
// match, its entity world, its clock and scoreboard.
type Room struct {
	set   *Set
	entry *lobby.Entry
	match *match.Match
	world *replicate.Replicator
	clock clock
	// scores is the scoreboard waiting for the end of the tick.
	scores      []byte
	scoresDirty bool
	// changed: lobby browsers get a RoomUpdate at the end of the tick.
	changed bool
	// noMatch names the room's module that is not a match
	// (module.Manifest.NoMatch; "" for a match), area the area it set
	// (Host.SetArea): such a room keeps no match state (phase).
	// worldMap is what it announces for a map, worldLabel(noMatch, area),
	// kept so that Phase, called every tick, allocates nothing.
	noMatch, area, worldMap string
	buf                     []byte
	// mapSet: the room has had its first map (the first MapChanged
	// is the room's start, not a change, and is logged at debug level:
	// a room whose module is not a match never plays it).
	mapSet bool
	// ended counts the room's matches that ended (a drain waits for the
	// one in progress, not for the next).
	ended uint64
}

// clock is a room's match time: the tick's time less the time the room
// stood still.
type clock struct {
	last, at time.Time
	frozen   time.Duration
}

// advance moves the clock to the tick at now; running says whether the
// room's time flowed since the last tick.
func (c *clock) advance(now time.Time, running bool) {
	if !c.last.IsZero() && !running {
		c.frozen += now.Sub(c.last)
	}
	c.last = now
	c.at = now.Add(-c.frozen)
}

// ID is the room's id.
func (r *Room) ID() module.RoomID { return r.entry.ID }

// Entry is the room's lobby entry: read it; the lobby changes it.
func (r *Room) Entry() *lobby.Entry { return r.entry }

// World is the room's entity world. A network goroutine may call its
// Schemas.
func (r *Room) World() *replicate.Replicator { return r.world }

// Phase is the room's match state now. A room whose module is not a match
// has a steady one: in progress, no timer, mode Custom, and, for a map,
// the module's name and area ("mmo/west"); its Match is never ticked and
// announces nothing.
func (r *Room) Phase() match.Status {
	if r.noMatch == "" {
		return r.match.Phase(r.now())
	}
	return match.Status{State: gamemsg.MatchInProgress, Mode: gamemsg.ModeCustom,
		Map: r.worldMap, Players: len(r.entry.Members)}
}

// Info is the room as the room messages (RoomList, RoomState, RoomUpdate)
// describe it.
func (r *Room) Info() gamemsg.RoomInfo {
	return r.entry.Info(r.Phase().Map)
}

// now is the room's time as of the current tick.
func (r *Room) now() time.Time { return r.clock.at }

// running reports whether the room's match clock flows.
func (r *Room) running() bool {
	st := r.entry.Status
	return st == gamemsg.RoomPlaying || st == gamemsg.RoomEnded
}

// syncNoMatch follows the room's modules: whether one of them is not a
// match (start of the tick; a module may load, unload or reload at any
// time).
func (r *Room) syncNoMatch() {
	name := r.set.cfg.Modules.NoMatch(r.entry.ID)
	if name == r.noMatch {
		return
	}
	if name != "" {
		r.set.cfg.Log.Info("the room's module is not a match: no match timer, scores or map rotation", "room", r.entry.ID, "module", name)
	}
	r.noMatch, r.scoresDirty, r.changed = name, false, true
	r.worldMap = worldLabel(r.noMatch, r.area)
}

// newRoom builds a room's match and world for its lobby entry; the room's
// modules start with open.
func (rs *Set) newRoom(entry *lobby.Entry, now time.Time) (*Room, error) {
	r := &Room{set: rs, entry: entry}
	r.clock.advance(now, true)
	var err error
	cfg := &rs.cfg.Settings
	r.match, err = match.New(match.Config{
		Mode: cfg.GameMode(), ScoreLimit: int32(cfg.Match.ScoreLimit), TimeLimit: cfg.TimeLimit(),
		RoundCount: cfg.Match.RoundCount, Maps: cfg.Match.MapRotation, Shuffle: cfg.Match.RandomizeMapOrder,
		Seed: uint64(now.UnixNano()) + uint64(entry.ID), Warmup: cfg.WarmupDuration(), Intermission: cfg.IntermissionDuration(),
	}, announcer{r}, r.now())
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	refresh := cfg.EntityRefresh()
	if refresh == 0 {
		refresh = -1 // the config's 0 is "never"
	}
	net := rs.cfg.Net
	r.world, err = replicate.New(replicate.Config{
		TickRate: cfg.Server.TickRate, Rate: cfg.Match.ReplicationRate,
		InterestRadius: float32(cfg.Match.InterestRadius), Repeats: cfg.Match.UpdateRepeats, Refresh: refresh,
		LagWindow: cfg.LagWindow(), Send: net.Send, SendState: net.SendState, GameStateSync: r.appendGameStateSync,
		Backlogged: func(c uint32) bool {
			cg, _ := net.Congestion(c)
			return cg.Backlogged
		},
		RTT: func(c uint32) (time.Duration, bool) {
			st, ok := net.ClientStats(c)
			return st.Ping, ok
		},
		Log: rs.cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	return r, nil
}

// moduleInfo is the room's facts for its modules.
func (r *Room) moduleInfo() module.ServerInfo {
	cfg := &r.set.cfg.Settings
	st := r.Phase()
	e := r.entry
	return module.ServerInfo{
		Name: cfg.Server.Name, Map: st.Map, Mode: st.Mode, MatchState: st.State,
		TickRate: cfg.Server.TickRate, Tick: r.set.cfg.Ticks(), Players: len(e.Members), MaxPlayers: e.Capacity,
		ReplicationRate: cfg.Match.ReplicationRate, LagWindow: cfg.LagWindow(),
		Room: module.RoomInfo{ID: e.ID, Name: e.Name, Mode: e.Mode, Owner: e.Owner,
			Capacity: e.Capacity, State: e.Status},
	}
}

// appendGameStateSync builds the GameStateSync a client of the room gets
// when it enters the room's world (and when the room's entity types
// change): the room's map, match and types.
func (r *Room) appendGameStateSync(client uint32, dst []byte) []byte {
	cfg := &r.set.cfg.Settings
	_, types := r.world.Schemas()
	st := r.Phase()
	return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
		ClientID: client, ServerTime: r.set.cfg.Net.Time(),
		TickRate: uint16(cfg.Server.TickRate), ReplicationRate: uint16(cfg.Match.ReplicationRate),
		ServerName: cfg.Server.Name, MOTD: cfg.Server.MOTD, Map: st.Map,
		Mode: st.Mode, MatchState: st.State, TimeRemaining: float32(st.TimeRemaining.Seconds()),
		Types: types,
	})
}

// MatchesEnded counts the room's matches that ended.
func (r *Room) MatchesEnded() uint64 { return r.ended }

// DrainWaits reports whether a drain waits for the room: its match is in
// progress (the room plays, or is paused, and the match is past its
// warmup), or, for a room whose module is not a match (the mmo, whose
// players are moved elsewhere by the module), it still has players.
func (r *Room) DrainWaits() bool {
	if r.noMatch != "" {
		return len(r.entry.Members) > 0
	}
	st := r.entry.Status
	return (st == gamemsg.RoomPlaying || st == gamemsg.RoomPaused) && r.Phase().State == gamemsg.MatchInProgress
}
