package host

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Rooms (docs/protocol.md §13). A room is the unit a module runs in: its
// own players (lobby.Entry), match (phase, timer, scores, map), entity world
// (a Replicator of its own: entities and their relevance never cross
// rooms) and module instance. The server that runs one match has one fixed
// room that every admitted client joins on admission; a server with a
// lobby ([rooms] enabled) starts clients outside any room.
//
// A room's match runs on the room's clock, which stands still while the
// room waits for its owner's start and while it is paused; otherwise it is
// the tick's clock (the fixed room's is exactly the tick's).

// room is one room's runtime on the game thread.
type room struct {
	s     *Server
	info  *lobby.Entry
	match *match.Match
	world *replicate.Replicator
	clock roomClock
	// scores is the scoreboard waiting for the end of the tick.
	scores      []byte
	scoresDirty bool
	// changed: lobby browsers get a RoomUpdate at the end of the tick.
	changed bool
	// noMatch names the room's module that is not a match
	// (module.Manifest.NoMatch; "" for a match), area the area it set
	// (Host.SetArea): such a room keeps no match state (phase).
	// worldMap is what it announces for a map, worldLabel(noMatch, area),
	// kept so that phase, called every tick, allocates nothing.
	noMatch, area, worldMap string
	buf                     []byte
}

// roomClock is a room's match time: the tick's time less the time the room
// stood still.
type roomClock struct {
	last, at time.Time
	frozen   time.Duration
}

// advance moves the clock to the tick at now; running says whether the
// room's time flowed since the last tick.
func (c *roomClock) advance(now time.Time, running bool) {
	if !c.last.IsZero() && !running {
		c.frozen += now.Sub(c.last)
	}
	c.last = now
	c.at = now.Add(-c.frozen)
}

// phase is the room's match state now. A room whose module is not a match
// has a steady one: in progress, no timer, mode Custom, and, for a map,
// the module's name and area ("mmo/west"); its Match is never ticked and
// announces nothing.
func (r *room) phase() match.Status {
	if r.noMatch == "" {
		return r.match.Phase(r.now())
	}
	return match.Status{State: gamemsg.MatchInProgress, Mode: gamemsg.ModeCustom,
		Map: r.worldMap, Players: len(r.info.Members)}
}

// worldLabel is what a world that is not a match announces for a map: its
// module's name, and "/area" when it has one, within the 64 bytes of a
// map name (the module's name is cut short first).
func worldLabel(name, area string) string {
	if area == "" {
		return truncateText(name, gamemsg.MaxMapLen)
	}
	return truncateText(name, gamemsg.MaxMapLen-1-len(area)) + "/" + area
}

// truncateText cuts s to at most n bytes on a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// syncNoMatch follows the room's modules: whether one of them is not a
// match (start of the tick; a module may load, unload or reload at any
// time).
func (r *room) syncNoMatch() {
	name := r.s.mods.NoMatch(r.info.ID)
	if name == r.noMatch {
		return
	}
	if name != "" {
		r.s.log.Info("the room's module is not a match: no match timer, scores or map rotation", "room", r.info.ID, "module", name)
	}
	r.noMatch, r.scoresDirty, r.changed = name, false, true
	r.worldMap = worldLabel(r.noMatch, r.area)
}

// now is the room's time as of the current tick.
func (r *room) now() time.Time { return r.clock.at }

// running reports whether the room's match clock flows.
func (r *room) running() bool {
	st := r.info.Status
	return st == gamemsg.RoomPlaying || st == gamemsg.RoomEnded
}

// newRoom builds a room's match and world; the room's modules start with
// openRoom.
func (s *Server) newRoom(info *lobby.Entry, now time.Time) (*room, error) {
	r := &room{s: s, info: info}
	r.clock.advance(now, true)
	var err error
	cfg := s.cfg
	r.match, err = match.New(match.Config{
		Mode: cfg.GameMode(), ScoreLimit: int32(cfg.Match.ScoreLimit), TimeLimit: cfg.TimeLimit(),
		RoundCount: cfg.Match.RoundCount, Maps: cfg.Match.MapRotation, Shuffle: cfg.Match.RandomizeMapOrder,
		Seed: uint64(now.UnixNano()) + uint64(info.ID), Warmup: cfg.WarmupDuration(), Intermission: cfg.IntermissionDuration(),
	}, roomAnnouncer{r}, r.now())
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	refresh := cfg.EntityRefresh()
	if refresh == 0 {
		refresh = -1 // the config's 0 is "never"
	}
	r.world, err = replicate.New(replicate.Config{
		TickRate: cfg.Server.TickRate, Rate: cfg.Match.ReplicationRate,
		InterestRadius: float32(cfg.Match.InterestRadius), Repeats: cfg.Match.UpdateRepeats, Refresh: refresh,
		LagWindow: cfg.LagWindow(), Send: s.net.Send, GameStateSync: r.appendGameStateSync,
		RTT: func(c uint32) (time.Duration, bool) {
			st, ok := s.net.ClientStats(c)
			return st.Ping, ok
		},
		Log: s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	return r, nil
}

// openRoom makes a room known to the modules and starts its modes'
// modules in it (the fixed room: none here; Load runs them).
func (s *Server) openRoom(r *room, specs []supervisor.Spec) error {
	err := s.mods.OpenRoom(supervisor.RoomSpec{
		ID: r.info.ID, World: r.world, Info: r.moduleInfo,
		AddScore: func(c uint32, score, kills, deaths int32) {
			if r.noMatch == "" {
				r.match.AddScore(c, score, kills, deaths, r.now())
			}
		},
		SetArea: func(name string) {
			if name != r.area {
				r.area, r.changed = name, true
				r.worldMap = worldLabel(r.noMatch, r.area)
			}
		},
		Everyone: r.info.Fixed,
	})
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, err := s.mods.StartInRoom(r.info.ID, spec); err != nil {
			_ = s.mods.CloseRoom(r.info.ID)
			return err
		}
	}
	s.rooms[r.info.ID] = r
	s.roomOrder = append(s.roomOrder, r)
	slices.SortFunc(s.roomOrder, func(a, b *room) int { return cmp.Compare(a.info.ID, b.info.ID) })
	r.changed = true
	s.roomStats.opened.Add(1)
	return nil
}

// moduleInfo is the room's facts for its modules.
func (r *room) moduleInfo() module.ServerInfo {
	s := r.s
	st := r.phase()
	return module.ServerInfo{
		Name: s.cfg.Server.Name, Map: st.Map, Mode: st.Mode, MatchState: st.State,
		TickRate: s.cfg.Server.TickRate, Tick: s.loop.Stats().Ticks, Players: len(r.info.Members), MaxPlayers: r.info.Capacity,
		ReplicationRate: s.cfg.Match.ReplicationRate, LagWindow: s.cfg.LagWindow(),
		Room: module.RoomInfo{ID: r.info.ID, Name: r.info.Name, Mode: r.info.Mode, Owner: r.info.Owner,
			Capacity: r.info.Capacity, State: r.info.Status},
	}
}

// roomInfo is the room as the room messages describe it.
func (r *room) roomInfo() gamemsg.RoomInfo {
	return r.info.Info(r.phase().Map)
}

// appendGameStateSync builds the GameStateSync a client of the room gets
// when it enters the room's world (and when the room's entity types
// change): the room's map, match and types.
func (r *room) appendGameStateSync(client uint32, dst []byte) []byte {
	s := r.s
	_, types := r.world.Schemas()
	st := r.phase()
	return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
		ClientID: client, ServerTime: s.net.Time(),
		TickRate: uint16(s.cfg.Server.TickRate), ReplicationRate: uint16(s.cfg.Match.ReplicationRate),
		ServerName: s.cfg.Server.Name, MOTD: s.cfg.Server.MOTD, Map: st.Map,
		Mode: st.Mode, MatchState: st.State, TimeRemaining: float32(st.TimeRemaining.Seconds()),
		Types: types,
	})
}

// roomOf returns the client's room (nil: the lobby).
func (s *Server) roomOf(client uint32) *room {
	if li := s.lobby.Of(client); li != nil {
		return s.rooms[li.ID]
	}
	return nil
}

// send sends one message to one client; a departed client is no error,
// and a client whose protocol does not define t (a v3 client and the room
// messages, docs/protocol.md §3.2) is not sent it.
func (s *Server) send(client uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	if !s.players[client].Speaks(t) {
		return
	}
	if err := s.net.Send(client, t, ch, payload); err != nil && !errors.Is(err, netstack.ErrNoSuchClient) && !errors.Is(err, netstack.ErrServerClosed) {
		s.log.Warn("send failed", "type", t.String(), "client", client, "err", err)
	}
}

// broadcast sends to the room's members but except (0: none); the fixed
// room's are every admitted client. Either way, only to those whose
// protocol defines t.
func (r *room) broadcast(except uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	s := r.s
	if r.info.Fixed {
		if err := s.net.BroadcastExcept(except, t, ch, payload); err != nil && !errors.Is(err, netstack.ErrServerClosed) {
			s.log.Warn("broadcast failed", "type", t.String(), "err", err)
		}
		return
	}
	for _, c := range r.info.Members {
		if c != except {
			s.send(c, t, ch, payload)
		}
	}
}

// sendScope sends to the clients of a room (nil: those in the lobby) but
// except.
func (s *Server) sendScope(r *room, except uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	if r != nil {
		r.broadcast(except, t, ch, payload)
		return
	}
	for c := range s.inLobby {
		if c != except {
			s.send(c, t, ch, payload)
		}
	}
}

// event tells the room's members something happened (but except).
func (r *room) event(except uint32, ev gamemsg.RoomEvent) {
	ev.Room = uint32(r.info.ID)
	r.buf = gamemsg.AppendRoomEvent(r.buf[:0], &ev)
	r.broadcast(except, gamemsg.TypeRoomEvent, wire.ReliableOrdered, r.buf)
}

// eventTo tells one client.
func (r *room) eventTo(client uint32, ev gamemsg.RoomEvent) {
	ev.Room = uint32(r.info.ID)
	r.buf = gamemsg.AppendRoomEvent(r.buf[:0], &ev)
	r.s.send(client, gamemsg.TypeRoomEvent, wire.ReliableOrdered, r.buf)
}

// sendState sends a client the room it is now in.
func (r *room) sendState(client uint32) {
	s := r.s
	m := gamemsg.RoomStateMsg{Room: r.roomInfo(), Owner: r.info.Owner, Total: uint16(min(len(r.info.Members), 0xFFFF))}
	for _, c := range r.info.Members {
		if len(m.Members) == gamemsg.MaxRoomMembers {
			break
		}
		m.Members = append(m.Members, gamemsg.RoomMember{Client: c, Name: s.players[c].Name})
	}
	r.buf = gamemsg.AppendRoomState(r.buf[:0], &m)
	s.send(client, gamemsg.TypeRoomState, wire.ReliableOrdered, r.buf)
}

// enter brings a client the lobby already put in r into the room's match,
// world and modules, and tells everybody concerned. typesVersion is the
// entity schema version of the GameStateSync it has (the fixed room at
// admission), else ResyncTypes.
func (s *Server) enter(client uint32, r *room, typesVersion uint64) {
	delete(s.inLobby, client)
	delete(s.browsing, client)
	r.sendState(client)
	if typesVersion == replicateResync {
		// The room's world before anything that happens in it (protocol.md
		// §13.8): its GameStateSync precedes the module's and the match's
		// messages, so a client that resets its match state on it loses
		// nothing that followed.
		version, _ := r.world.Schemas()
		s.roomBuf = r.appendGameStateSync(client, s.roomBuf[:0])
		s.send(client, gamemsg.TypeGameStateSync, wire.ReliableOrdered, s.roomBuf)
		typesVersion = version
	}
	r.world.AddClient(client, typesVersion)
	if !r.info.Fixed {
		if err := s.mods.JoinRoom(client, r.info.ID); err != nil {
			s.log.Warn("room join", "room", r.info.ID, "client", client, "err", err)
		}
	}
	r.match.PlayerJoined(client, r.now())
	r.event(client, gamemsg.RoomEvent{Kind: gamemsg.RoomJoined, Client: client, Name: s.players[client].Name})
	r.changed = true
}

// exit takes a client the lobby took out of r out of the room's match,
// world and modules and tells the others (and the client itself, unless it
// asked or its session ended). newOwner is the room's next owner (0: none
// changed). A client still connected is back in the lobby.
func (s *Server) exit(client uint32, r *room, leave gamemsg.LeaveReason, reason wire.DisconnectReason, newOwner uint32) {
	connected := leave == gamemsg.LeaveAsked || leave == gamemsg.LeaveKicked || leave == gamemsg.LeaveClosed
	if !r.info.Fixed {
		s.mods.LeaveRoom(client, r.info.ID, leave, reason)
	}
	r.world.RemoveClient(client)
	r.match.PlayerLeft(client, r.now())
	left := gamemsg.RoomEvent{Kind: gamemsg.RoomLeft, Client: client, Value: uint32(leave), Name: s.players[client].Name}
	if leave != gamemsg.LeaveClosed {
		r.event(0, left)
	}
	if leave == gamemsg.LeaveKicked {
		r.eventTo(client, left)
	}
	if newOwner != 0 {
		r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomOwnerChanged, Client: newOwner, Name: s.players[newOwner].Name})
	}
	if connected && s.cfg.Rooms.Enabled {
		s.inLobby[client] = struct{}{}
	}
	r.changed = true
}

// closeRoom closes a room: its players (told RoomClosed) are back in the
// lobby, its modules stop, browsers are told it is gone.
func (s *Server) closeRoom(r *room, why gamemsg.CloseReason) {
	members, err := s.lobby.Close(r.info.ID)
	if err != nil {
		return // the fixed room
	}
	for _, c := range members {
		r.eventTo(c, gamemsg.RoomEvent{Kind: gamemsg.RoomClosed, Value: uint32(why)})
		s.exit(c, r, gamemsg.LeaveClosed, wire.DisconnectUnknown, 0)
	}
	if err := s.mods.CloseRoom(r.info.ID); err != nil {
		s.log.Warn("room close", "room", r.info.ID, "err", err)
	}
	delete(s.rooms, r.info.ID)
	s.roomOrder = slices.DeleteFunc(s.roomOrder, func(x *room) bool { return x == r })
	s.roomStats.closed.Add(1)
	info := r.roomInfo()
	info.Players, info.Open = 0, false
	s.update(gamemsg.RoomUpdate{Kind: gamemsg.RoomGone, Room: info})
	s.log.Info("room closed", "room", r.info.ID, "name", r.info.Name, "why", why.String())
}

// update tells the browsing clients in the lobby about a room.
func (s *Server) update(u gamemsg.RoomUpdate) {
	if len(s.browsing) == 0 {
		return
	}
	s.roomBuf = gamemsg.AppendRoomUpdate(s.roomBuf[:0], &u)
	for c := range s.browsing {
		s.send(c, gamemsg.TypeRoomUpdate, wire.ReliableOrdered, s.roomBuf)
	}
}

// tickRooms advances every room's clock and, while it runs (not waiting
// for its start, not paused), its match (start of the tick).
func (s *Server) tickRooms(now time.Time) {
	for _, r := range s.roomOrder {
		r.syncNoMatch()
		running := r.running()
		r.clock.advance(now, running)
		if running && r.noMatch == "" {
			r.match.Tick(r.now())
		}
	}
}

// endRoomsTick is the rooms' end of the tick: scoreboards, the rooms due to
// close (empty past the grace time, failed modules) and the lobby's
// updates.
func (s *Server) endRoomsTick(now time.Time) {
	for _, r := range s.roomOrder {
		r.flushScores()
	}
	for _, id := range s.failedRooms {
		if r := s.rooms[id]; r != nil {
			s.closeRoom(r, gamemsg.CloseModuleFailed)
		}
	}
	s.failedRooms = s.failedRooms[:0]
	if s.cfg.Rooms.Enabled {
		for _, li := range s.lobby.Expired(now, s.cfg.EmptyGrace()) {
			if r := s.rooms[li.ID]; r != nil {
				s.closeRoom(r, gamemsg.CloseEmpty)
			}
		}
	}
	for _, r := range s.roomOrder {
		if r.changed {
			r.changed = false
			s.update(gamemsg.RoomUpdate{Kind: gamemsg.RoomChanged, Room: r.roomInfo()})
		}
	}
}

// moduleFailed runs when a module fails for good (too many faults or
// crashes, game thread, inside the modules' Step): the rooms it served
// close at the end of the tick, their players back in the lobby.
func (s *Server) moduleFailed(name string, rooms []module.RoomID) {
	for _, id := range rooms {
		if r := s.rooms[id]; r != nil && !r.info.Fixed {
			s.log.Warn("room closes: its module failed", "room", id, "module", name)
			s.failedRooms = append(s.failedRooms, id)
		}
	}
}

// roomName makes a room name of s (the server's name for its fixed room):
// at most gamemsg.MaxRoomNameLen bytes, cut at a rune boundary.
func roomName(s string) string {
	for len(s) > gamemsg.MaxRoomNameLen {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	if !wire.ValidName([]byte(s), gamemsg.MaxRoomNameLen) {
		return "match"
	}
	return s
}

// roomAnnouncer sends a room's match events to its members and modules.
type roomAnnouncer struct{ r *room }

func (a roomAnnouncer) MatchStart(m gamemsg.MatchStart) {
	r := a.r
	r.flushScores()
	r.s.log.Info("match start", "room", r.info.ID, "map", m.Map, "round", m.Round)
	r.broadcast(0, gamemsg.TypeMatchStart, wire.ReliableOrdered, gamemsg.AppendMatchStart(nil, &m))
	if r.s.mods != nil {
		r.s.mods.Announce(r.info.ID, module.Event{Kind: module.EventMatchStart, Match: m})
	}
}

func (a roomAnnouncer) MatchEnd(m gamemsg.MatchEnd) {
	r := a.r
	r.flushScores()
	r.s.log.Info("match end", "room", r.info.ID, "reason", m.Reason.String(), "winner", m.Winner, "score", m.WinnerScore)
	r.broadcast(0, gamemsg.TypeMatchEnd, wire.ReliableOrdered, gamemsg.AppendMatchEnd(nil, &m))
	r.s.lobby.MatchEnded(r.info)
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomMatchEnded, Value: m.Winner})
	r.changed = true
	if r.info.Fixed {
		r.s.opsMatchEnded()
	}
	if r.s.mods != nil {
		r.s.mods.Announce(r.info.ID, module.Event{Kind: module.EventMatchEnd, MatchEnd: m})
	}
}

// ScoreUpdate keeps the newest scoreboard; flushScores sends it once at the
// end of the tick (or before a MatchStart or MatchEnd, which must follow the
// scores they close): a tick with several score changes (a kill is two: the
// victim's death and the killer's point) costs one broadcast, not one each.
func (a roomAnnouncer) ScoreUpdate(m gamemsg.ScoreUpdate) {
	if a.r.noMatch != "" {
		return // a world that is not a match keeps no scores
	}
	a.r.scores = gamemsg.AppendScoreUpdate(a.r.scores[:0], &m)
	a.r.scoresDirty = true
}

func (a roomAnnouncer) MapChanged(name string, index int) {
	r := a.r
	r.s.log.Info("map changed", "room", r.info.ID, "map", name, "index", index)
	if r.s.lobby.NextMap(r.info) {
		r.changed = true
	}
	if r.s.mods != nil {
		r.s.mods.Announce(r.info.ID, module.Event{Kind: module.EventMapChange, Map: name, MapIndex: index})
	}
}

// flushScores broadcasts the pending scoreboard, if any.
func (r *room) flushScores() {
	if r.scoresDirty && r.s.net != nil {
		r.scoresDirty = false
		r.broadcast(0, gamemsg.TypeScoreUpdate, wire.ReliableOrdered, r.scores)
	}
}
