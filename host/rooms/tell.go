package rooms

import (
	"errors"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// What the rooms tell clients: a room's members (RoomEvent, RoomState,
// the match's messages), the clients in the lobby (chat) and those
// browsing it (RoomUpdate), and whoever sent a request (RoomResult). Only
// a client whose protocol defines a message's type is sent it.

// broadcast sends to the room's members but except (0: none); the fixed
// room's are every admitted client.
func (r *Room) broadcast(except uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	rs := r.set
	if r.entry.Fixed {
		if err := rs.cfg.Net.BroadcastExcept(except, t, ch, payload); err != nil && !errors.Is(err, netstack.ErrServerClosed) {
			rs.cfg.Log.Warn("broadcast failed", "type", t.String(), "err", err)
		}
		return
	}
	for _, c := range r.entry.Members {
		if c != except {
			rs.cfg.Send(c, t, ch, payload)
		}
	}
}

// Broadcast sends to the clients of a room (nil: those in the lobby) but
// except (0: none).
func (rs *Set) Broadcast(r *Room, except uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	if r != nil {
		r.broadcast(except, t, ch, payload)
		return
	}
	for c := range rs.inLobby {
		if c != except {
			rs.cfg.Send(c, t, ch, payload)
		}
	}
}

// event tells the room's members something happened (but except).
func (r *Room) event(except uint32, ev gamemsg.RoomEvent) {
	ev.Room = uint32(r.entry.ID)
	r.buf = gamemsg.AppendRoomEvent(r.buf[:0], &ev)
	r.broadcast(except, gamemsg.TypeRoomEvent, wire.ReliableOrdered, r.buf)
}

// eventTo tells one client.
func (r *Room) eventTo(client uint32, ev gamemsg.RoomEvent) {
	ev.Room = uint32(r.entry.ID)
	r.buf = gamemsg.AppendRoomEvent(r.buf[:0], &ev)
	r.set.cfg.Send(client, gamemsg.TypeRoomEvent, wire.ReliableOrdered, r.buf)
}

// sendState sends a client the room it is now in.
func (r *Room) sendState(client uint32) {
	e := r.entry
	m := gamemsg.RoomStateMsg{Room: r.Info(), Owner: e.Owner, Total: uint16(min(len(e.Members), 0xFFFF))}
	for _, c := range e.Members {
		if len(m.Members) == gamemsg.MaxRoomMembers {
			break
		}
		m.Members = append(m.Members, gamemsg.RoomMember{Client: c, Name: r.set.name(c)})
	}
	r.buf = gamemsg.AppendRoomState(r.buf[:0], &m)
	r.set.cfg.Send(client, gamemsg.TypeRoomState, wire.ReliableOrdered, r.buf)
}

// update tells the browsing clients in the lobby about a room.
func (rs *Set) update(u gamemsg.RoomUpdate) {
	if len(rs.browsing) == 0 {
		return
	}
	rs.buf = gamemsg.AppendRoomUpdate(rs.buf[:0], &u)
	for c := range rs.browsing {
		rs.cfg.Send(c, gamemsg.TypeRoomUpdate, wire.ReliableOrdered, rs.buf)
	}
}

// Result sends a RoomResult: the answer to a room request (or a RoomChat
// the server refuses).
func (rs *Set) Result(client uint32, t wire.MessageType, code gamemsg.RoomCode, room module.RoomID, detail string) {
	if len(detail) > gamemsg.MaxRoomDetailLen {
		detail = detail[:gamemsg.MaxRoomDetailLen]
	}
	if !wire.ValidUTF8NoNUL([]byte(detail)) {
		detail = code.String()
	}
	rs.buf = gamemsg.AppendRoomResult(rs.buf[:0], &gamemsg.RoomResult{Request: t, Code: code, Room: uint32(room), Detail: detail})
	rs.cfg.Send(client, gamemsg.TypeRoomResult, wire.ReliableOrdered, rs.buf)
}
