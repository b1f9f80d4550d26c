package rooms

import (
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// announcer sends a room's match events to its members and modules.
type announcer struct{ r *Room }

func (a announcer) MatchStart(m gamemsg.MatchStart) {
	r := a.r
	r.flushScores()
	r.set.cfg.Log.Info("match start", "room", r.entry.ID, "map", m.Map, "round", m.Round)
	r.broadcast(0, gamemsg.TypeMatchStart, wire.ReliableOrdered, gamemsg.AppendMatchStart(nil, &m))
	r.set.cfg.Modules.Announce(r.entry.ID, module.Event{Kind: module.EventMatchStart, Match: m})
}

func (a announcer) MatchEnd(m gamemsg.MatchEnd) {
	r := a.r
	r.flushScores()
	r.set.cfg.Log.Info("match end", "room", r.entry.ID, "reason", m.Reason.String(), "winner", m.Winner, "score", m.WinnerScore)
	r.broadcast(0, gamemsg.TypeMatchEnd, wire.ReliableOrdered, gamemsg.AppendMatchEnd(nil, &m))
	r.set.lobby.MatchEnded(r.entry)
	r.ended++
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomMatchEnded, Value: m.Winner})
	r.changed = true
	if r.entry.Fixed && r.set.cfg.MatchEnded != nil {
		r.set.cfg.MatchEnded()
	}
	r.set.cfg.Modules.Announce(r.entry.ID, module.Event{Kind: module.EventMatchEnd, MatchEnd: m})
}

// ScoreUpdate keeps the newest scoreboard; flushScores sends it once at the
// end of the tick (or before a MatchStart or MatchEnd, which must follow the
// scores they close): a tick with several score changes (a kill is two: the
// victim's death and the killer's point) costs one broadcast, not one each.
func (a announcer) ScoreUpdate(m gamemsg.ScoreUpdate) {
	if a.r.noMatch != "" {
		return // a world that is not a match keeps no scores
	}
	a.r.scores = gamemsg.AppendScoreUpdate(a.r.scores[:0], &m)
	a.r.scoresDirty = true
}

func (a announcer) MapChanged(name string, index int) {
	r := a.r
	if r.mapSet {
		r.set.cfg.Log.Info("map changed", "room", r.entry.ID, "map", name, "index", index)
	} else {
		r.set.cfg.Log.Debug("first map", "room", r.entry.ID, "map", name, "index", index)
	}
	r.mapSet = true
	if r.set.lobby.NextMap(r.entry) {
		r.changed = true
	}
	r.set.cfg.Modules.Announce(r.entry.ID, module.Event{Kind: module.EventMapChange, Map: name, MapIndex: index})
}

// flushScores broadcasts the pending scoreboard, if any.
func (r *Room) flushScores() {
	if r.scoresDirty {
		r.scoresDirty = false
		r.broadcast(0, gamemsg.TypeScoreUpdate, wire.ReliableOrdered, r.scores)
	}
}
