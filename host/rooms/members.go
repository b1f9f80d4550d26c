package rooms

import (
	"cmp"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// A room opens (the server's one room at start; a RoomCreate), clients
// enter and leave it, and it closes (empty past the grace time, its module
// failed, an admin, the server's shutdown).

// OpenFixed opens the server's one room (a server without a lobby), where
// specs run (Load starts them; it has no mode module of its own): it is
// named after the server and its mode after the first spec.
func (rs *Set) OpenFixed(specs []supervisor.Spec, now time.Time) error {
	cfg := &rs.cfg.Settings
	mode := "none"
	if len(specs) > 0 {
		mode = specs[0].Source
	}
	if !wire.ValidName([]byte(mode), gamemsg.MaxRoomModeLen) {
		mode = "match"
	}
	entry := rs.lobby.OpenFixed(roomName(cfg.Server.Name), mode, cfg.Server.MaxClients)
	r, err := rs.newRoom(entry, now)
	if err != nil {
		return err
	}
	if err := rs.open(r, nil); err != nil {
		return err
	}
	rs.fixed = r
	return rs.cfg.Modules.SetDefaultRoom(entry.ID)
}

// SettleFixed, once the server's modules started, names the one-match
// server's room's mode after the first module it runs, as that module
// declares itself, and learns whether that module is a match (before the
// first admission's GameStateSync).
func (rs *Set) SettleFixed(specs []supervisor.Spec) {
	if rs.fixed == nil {
		return
	}
	if len(specs) > 0 {
		for _, st := range rs.cfg.Modules.Modules() {
			if st.Source == specs[0].Source && wire.ValidName([]byte(st.Name), gamemsg.MaxRoomModeLen) {
				rs.fixed.entry.Mode = st.Name
				break
			}
		}
	}
	rs.fixed.syncNoMatch()
}

// open makes a room known to the modules and starts its modes' modules in
// it (the fixed room: none here; Load runs them).
func (rs *Set) open(r *Room, specs []supervisor.Spec) error {
	mods := rs.cfg.Modules
	err := mods.OpenRoom(supervisor.RoomSpec{
		ID: r.entry.ID, World: r.world, Info: r.moduleInfo,
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
		Everyone: r.entry.Fixed,
	})
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, err := mods.StartInRoom(r.entry.ID, spec); err != nil {
			_ = mods.CloseRoom(r.entry.ID)
			return err
		}
	}
	rs.byID[r.entry.ID] = r
	rs.order = append(rs.order, r)
	slices.SortFunc(rs.order, func(a, b *Room) int { return cmp.Compare(a.entry.ID, b.entry.ID) })
	r.changed = true
	rs.counts.opened.Add(1)
	return nil
}

// Admit places a newly admitted client: in the server's one room (typesVersion
// is the entity schema version of the GameStateSync it was sent at
// admission, 0 if unknown), else in the lobby.
func (rs *Set) Admit(client uint32, typesVersion uint64) {
	if rs.fixed != nil {
		rs.lobby.Enter(client, rs.fixed.entry)
		rs.enter(client, rs.fixed, typesVersion)
		return
	}
	rs.inLobby[client] = struct{}{}
}

// Depart takes a client whose session ended (reason) out of its room, or
// the lobby, at now.
func (rs *Set) Depart(client uint32, reason wire.DisconnectReason, now time.Time) {
	if e, newOwner := rs.lobby.Depart(client, now); e != nil {
		if r := rs.byID[e.ID]; r != nil {
			rs.exit(client, r, gamemsg.LeaveReasonFor(reason), reason, newOwner)
		}
	}
	delete(rs.inLobby, client)
	delete(rs.browsing, client)
}

// resync: a client entering a room's world starts from nothing.
const resync = replicate.ResyncTypes

// enter brings a client the lobby already put in r into the room's match,
// world and modules, and tells everybody concerned. typesVersion is the
// entity schema version of the GameStateSync it has (the fixed room at
// admission), else resync.
func (rs *Set) enter(client uint32, r *Room, typesVersion uint64) {
	delete(rs.inLobby, client)
	delete(rs.browsing, client)
	r.sendState(client)
	if typesVersion == resync {
		// The room's world before anything that happens in it (protocol.md
		// §13.8): its GameStateSync precedes the module's and the match's
		// messages, so a client that resets its match state on it loses
		// nothing that followed.
		version, _ := r.world.Schemas()
		rs.buf = r.appendGameStateSync(client, rs.buf[:0])
		rs.cfg.Send(client, gamemsg.TypeGameStateSync, wire.ReliableOrdered, rs.buf)
		typesVersion = version
	}
	r.world.AddClient(client, typesVersion)
	if !r.entry.Fixed {
		if err := rs.cfg.Modules.JoinRoom(client, r.entry.ID); err != nil {
			rs.cfg.Log.Warn("room join", "room", r.entry.ID, "client", client, "err", err)
		}
	}
	r.match.PlayerJoined(client, r.now())
	r.event(client, gamemsg.RoomEvent{Kind: gamemsg.RoomJoined, Client: client, Name: rs.name(client)})
	r.changed = true
}

// exit takes a client the lobby took out of r out of the room's match,
// world and modules and tells the others (and the client itself, unless it
// asked or its session ended). newOwner is the room's next owner (0: none
// changed). A client still connected is back in the lobby.
func (rs *Set) exit(client uint32, r *Room, leave gamemsg.LeaveReason, reason wire.DisconnectReason, newOwner uint32) {
	connected := leave == gamemsg.LeaveAsked || leave == gamemsg.LeaveKicked || leave == gamemsg.LeaveClosed
	if !r.entry.Fixed {
		rs.cfg.Modules.LeaveRoom(client, r.entry.ID, leave, reason)
	}
	r.world.RemoveClient(client)
	r.match.PlayerLeft(client, r.now())
	left := gamemsg.RoomEvent{Kind: gamemsg.RoomLeft, Client: client, Value: uint32(leave), Name: rs.name(client)}
	if leave != gamemsg.LeaveClosed {
		r.event(0, left)
	}
	if leave == gamemsg.LeaveKicked {
		r.eventTo(client, left)
	}
	if newOwner != 0 {
		r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomOwnerChanged, Client: newOwner, Name: rs.name(newOwner)})
	}
	if connected && rs.cfg.Settings.Rooms.Enabled {
		rs.inLobby[client] = struct{}{}
	}
	r.changed = true
}

// close closes a room: its players (told RoomClosed) are back in the
// lobby, its modules stop, browsers are told it is gone.
func (rs *Set) close(r *Room, why gamemsg.CloseReason) {
	members, err := rs.lobby.Close(r.entry.ID)
	if err != nil {
		return // the fixed room
	}
	for _, c := range members {
		r.eventTo(c, gamemsg.RoomEvent{Kind: gamemsg.RoomClosed, Value: uint32(why)})
		rs.exit(c, r, gamemsg.LeaveClosed, wire.DisconnectUnknown, 0)
	}
	if err := rs.cfg.Modules.CloseRoom(r.entry.ID); err != nil {
		rs.cfg.Log.Warn("room close", "room", r.entry.ID, "err", err)
	}
	delete(rs.byID, r.entry.ID)
	rs.order = slices.DeleteFunc(rs.order, func(x *Room) bool { return x == r })
	rs.counts.closed.Add(1)
	info := r.Info()
	info.Players, info.Open = 0, false
	rs.update(gamemsg.RoomUpdate{Kind: gamemsg.RoomGone, Room: info})
	rs.cfg.Log.Info("room closed", "room", r.entry.ID, "name", r.entry.Name, "why", why.String())
}

// CloseAll closes every room but the server's one room (which closes with
// the server), its players told why.
func (rs *Set) CloseAll(why gamemsg.CloseReason) {
	for _, r := range slices.Clone(rs.order) {
		rs.close(r, why)
	}
}

// name is an admitted client's name ("" for one that is not).
func (rs *Set) name(client uint32) string { return rs.cfg.Player(client).Name }
