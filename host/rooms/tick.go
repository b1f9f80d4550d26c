package rooms

import (
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Tick advances every room's clock and, while it runs (not waiting for its
// start, not paused), its match (start of the tick).
func (rs *Set) Tick(now time.Time) {
	for _, r := range rs.order {
		r.syncNoMatch()
		running := r.running()
		r.clock.advance(now, running)
		if running && r.noMatch == "" {
			r.match.Tick(r.now())
		}
	}
}

// BeginWorlds starts every room's world's tick at server time at (before
// the modules' step).
func (rs *Set) BeginWorlds(at time.Duration) {
	for _, r := range rs.order {
		r.world.BeginTick(at)
	}
}

// TickWorlds replicates every room's world at server time at (after the
// modules' step).
func (rs *Set) TickWorlds(at time.Duration) {
	for _, r := range rs.order {
		r.world.Tick(at)
	}
}

// EndTick is the rooms' end of the tick: scoreboards, the rooms due to
// close (empty past the grace time, failed modules) and the lobby's
// updates.
func (rs *Set) EndTick(now time.Time) {
	for _, r := range rs.order {
		r.flushScores()
	}
	for _, id := range rs.failed {
		if r := rs.byID[id]; r != nil {
			rs.close(r, gamemsg.CloseModuleFailed)
		}
	}
	rs.failed = rs.failed[:0]
	cfg := &rs.cfg.Settings
	if cfg.Rooms.Enabled {
		for _, e := range rs.lobby.Expired(now, cfg.EmptyGrace()) {
			if r := rs.byID[e.ID]; r != nil {
				rs.close(r, gamemsg.CloseEmpty)
			}
		}
	}
	for _, r := range rs.order {
		if r.changed {
			r.changed = false
			rs.update(gamemsg.RoomUpdate{Kind: gamemsg.RoomChanged, Room: r.Info()})
		}
	}
}

// ModuleFailed runs when a module fails for good (too many faults or
// crashes; game thread, inside the modules' Step): the rooms it served
// close at the end of the tick, their players back in the lobby.
func (rs *Set) ModuleFailed(name string, rooms []module.RoomID) {
	for _, id := range rooms {
		if r := rs.byID[id]; r != nil && !r.entry.Fixed {
			rs.cfg.Log.Warn("room closes: its module failed", "room", id, "module", name)
			rs.failed = append(rs.failed, id)
		}
	}
}
