package rooms

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Room requests (RoomListRequest .. RoomKick, docs/protocol.md §13.3). The
// transport has validated each against its schema and structural check;
// the host's receive side charged the sender's request budget and queued
// it. The game thread answers each with a RoomResult carrying a code
// (Request), and carries it out.

// RequestTypes are the room requests Request answers.
var RequestTypes = [...]wire.MessageType{gamemsg.TypeRoomListRequest, gamemsg.TypeRoomCreate, gamemsg.TypeRoomJoin,
	gamemsg.TypeRoomLeave, gamemsg.TypeRoomRename, gamemsg.TypeRoomStart, gamemsg.TypeRoomPause, gamemsg.TypeRoomKick}

// counters count rooms for the status page and metrics.
type counters struct {
	opened, closed atomic.Uint64
	requests       atomic.Uint64 // carried out or refused with a code
	refused        atomic.Uint64 // answered with a code other than OK
}

// errAnswered: the request was answered already (the answer had to come
// before what followed it).
var errAnswered = errors.New("answered")

// Request carries out one room request of an admitted client (payload:
// the validated message of type typ) and answers it.
func (rs *Set) Request(client uint32, typ wire.MessageType, payload []byte) {
	rs.counts.requests.Add(1)
	room, err := rs.do(client, typ, payload)
	switch {
	case errors.Is(err, errAnswered):
	case err != nil:
		rs.refuse(client, typ, room, err)
	case typ != gamemsg.TypeRoomListRequest: // a RoomList is its own answer
		rs.Result(client, typ, gamemsg.RoomOK, room, "")
	}
}

// refuse answers a request refused with err: a *lobby.Error's code, else
// BadRequest.
func (rs *Set) refuse(client uint32, t wire.MessageType, room module.RoomID, err error) {
	code, detail := gamemsg.RoomBadRequest, err.Error()
	var le *lobby.Error
	if errors.As(err, &le) {
		code, detail = le.Code, le.Detail
	}
	rs.counts.refused.Add(1)
	rs.Result(client, t, code, room, detail)
}

// do dispatches a request; it returns the room it concerns. A request
// carried out is answered (RoomResult OK) before the events it causes, and
// returns errAnswered; a refusal is answered by Request.
func (rs *Set) do(c uint32, typ wire.MessageType, payload []byte) (module.RoomID, error) {
	switch typ {
	case gamemsg.TypeRoomListRequest:
		m, err := gamemsg.ParseRoomListRequest(payload)
		if err != nil {
			return 0, err
		}
		rs.sendList(c, int(m.Offset))
		return 0, nil
	case gamemsg.TypeRoomCreate:
		m, err := gamemsg.ParseRoomCreate(payload)
		if err != nil {
			return 0, err
		}
		return rs.create(c, &m)
	case gamemsg.TypeRoomJoin:
		m, err := gamemsg.ParseRoomJoin(payload)
		if err != nil {
			return 0, err
		}
		return rs.join(c, &m)
	case gamemsg.TypeRoomLeave:
		e, newOwner, err := rs.lobby.Leave(c, rs.cfg.Now())
		if err != nil {
			return 0, err
		}
		rs.Result(c, typ, gamemsg.RoomOK, e.ID, "")
		rs.exit(c, rs.byID[e.ID], gamemsg.LeaveAsked, wire.DisconnectUnknown, newOwner)
	case gamemsg.TypeRoomRename:
		m, err := gamemsg.ParseRoomRename(payload)
		if err != nil {
			return 0, err
		}
		e, err := rs.lobby.Rename(c, m.Name)
		if err != nil {
			return 0, err
		}
		rs.Result(c, typ, gamemsg.RoomOK, e.ID, "")
		r := rs.byID[e.ID]
		r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomRenamed, Client: c, Name: m.Name})
		r.changed = true
	case gamemsg.TypeRoomStart:
		e, err := rs.lobby.Start(c)
		if err != nil {
			return 0, err
		}
		rs.Result(c, typ, gamemsg.RoomOK, e.ID, "")
		rs.byID[e.ID].started(c)
	case gamemsg.TypeRoomPause:
		e, paused, err := rs.lobby.TogglePause(c)
		if err != nil {
			return 0, err
		}
		rs.Result(c, typ, gamemsg.RoomOK, e.ID, "")
		rs.byID[e.ID].paused(c, paused)
	case gamemsg.TypeRoomKick:
		m, err := gamemsg.ParseRoomKick(payload)
		if err != nil {
			return 0, err
		}
		e, newOwner, err := rs.lobby.Kick(c, m.Client, rs.cfg.Now())
		if err != nil {
			return 0, err
		}
		rs.Result(c, typ, gamemsg.RoomOK, e.ID, "")
		rs.exit(m.Client, rs.byID[e.ID], gamemsg.LeaveKicked, wire.DisconnectUnknown, newOwner)
	default:
		return 0, fmt.Errorf("type %v is not a room request", typ)
	}
	return 0, errAnswered
}

// sendList answers a RoomListRequest with the page from offset, and makes
// a client in the lobby a browser (RoomUpdate) until it joins.
func (rs *Set) sendList(client uint32, offset int) {
	if _, ok := rs.inLobby[client]; ok {
		rs.browsing[client] = struct{}{}
	}
	list := rs.lobby.List()
	m := gamemsg.RoomList{Total: uint16(min(len(list), 0xFFFF)), Offset: uint16(offset), Modes: rs.lobby.Modes()}
	if rs.fixed != nil {
		m.Modes = []string{rs.fixed.entry.Mode}
	}
	for i := offset; i < len(list) && len(m.Rooms) < gamemsg.RoomListPage; i++ {
		if r := rs.byID[list[i].ID]; r != nil {
			m.Rooms = append(m.Rooms, r.Info())
		}
	}
	rs.buf = gamemsg.AppendRoomList(rs.buf[:0], &m)
	rs.cfg.Send(client, gamemsg.TypeRoomList, wire.ReliableOrdered, rs.buf)
}

// create opens a room for a RoomCreate: the lobby's checks, the room's
// match and world, its mode's module; the creator joins it as its owner.
func (rs *Set) create(client uint32, m *gamemsg.RoomCreate) (module.RoomID, error) {
	if rs.fixed != nil {
		return 0, &lobby.Error{Code: gamemsg.RoomNotAllowed, Detail: "this server runs one match; it has no lobby to create rooms in"}
	}
	e, err := rs.lobby.Create(client, m)
	if err != nil {
		return 0, err
	}
	r, err := rs.newRoom(e, rs.cfg.Now())
	if err == nil {
		err = rs.open(r, []supervisor.Spec{rs.modes[e.Mode]})
	}
	if err != nil {
		_, _ = rs.lobby.Close(e.ID)
		rs.cfg.Log.Warn("room could not open", "room", e.ID, "mode", e.Mode, "err", err)
		return e.ID, &lobby.Error{Code: gamemsg.RoomModuleFailed, Detail: fmt.Sprintf("mode %s did not start: %v", e.Mode, err)}
	}
	rs.cfg.Log.Info("room created", "room", e.ID, "name", e.Name, "mode", e.Mode, "owner", client, "capacity", e.Capacity, "password", e.Verifier != nil)
	rs.Result(client, gamemsg.TypeRoomCreate, gamemsg.RoomOK, e.ID, "")
	rs.enter(client, r, resync)
	return e.ID, errAnswered
}

// join carries out a RoomJoin.
func (rs *Set) join(client uint32, m *gamemsg.RoomJoin) (module.RoomID, error) {
	room := module.RoomID(m.Room)
	if rs.fixed != nil {
		if room == rs.fixed.entry.ID {
			return room, &lobby.Error{Code: gamemsg.RoomAlreadyInRoom, Detail: "everybody is in this server's one room"}
		}
		return room, &lobby.Error{Code: gamemsg.RoomNoSuchRoom, Detail: "this server runs one match, room " + fmt.Sprint(rs.fixed.entry.ID)}
	}
	e, out, err := rs.lobby.Join(rs.joiner(client), room, m.Proof, rs.cfg.Now())
	if rs.passwordOutcome(client, room, out, err) {
		return room, errAnswered
	}
	if err != nil {
		return room, err
	}
	rs.Result(client, gamemsg.TypeRoomJoin, gamemsg.RoomOK, e.ID, "")
	rs.enter(client, rs.byID[e.ID], resync)
	return e.ID, errAnswered
}

// started: the room's match clock runs from now (by: the client who
// started it, 0 an admin).
func (r *Room) started(by uint32) {
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomStarted, Client: by})
	r.changed = true
	r.set.cfg.Log.Info("room started", "room", r.entry.ID, "by", by)
}

// paused: the room's match clock stopped (or runs again).
func (r *Room) paused(by uint32, paused bool) {
	v := uint32(0)
	if paused {
		v = 1
	}
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomPauseChanged, Client: by, Value: v})
	r.set.cfg.Modules.Announce(r.entry.ID, module.Event{Kind: module.EventPause, Paused: paused})
	r.changed = true
}
