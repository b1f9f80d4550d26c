package host

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Room requests (RoomListRequest .. RoomKick, docs/protocol.md §13.3). The
// transport has validated each against its schema and structural check
// before the handler runs; the receive goroutine charges the client's
// request budget ([rooms] requests_per_second, request_burst) and copies the
// request into a bounded queue (full or over budget: dropped and counted,
// never blocking). The game thread answers each with a RoomResult carrying
// a code, and carries it out.

// requestQueueSize bounds the room requests waiting for the next tick.
const requestQueueSize = 1024

// roomRequest is one accepted request waiting for the game thread.
type roomRequest struct {
	client  uint32
	typ     wire.MessageType
	payload []byte // a copy
}

// requestGate is the receive side of room requests.
type requestGate struct {
	*budgetSet
	queue   chan roomRequest
	dropped atomic.Uint64
}

func newRequestGate(perSecond float64, burst, kickAfter int, kick func(uint32)) *requestGate {
	return &requestGate{budgetSet: newBudgetSet(perSecond, burst, kickAfter, kick), queue: make(chan roomRequest, requestQueueSize)}
}

// receive runs on a network goroutine for every validated room request.
func (g *requestGate) receive(client uint32, h *wire.Header, payload []byte) {
	if !g.allow(client, time.Now()) {
		g.dropped.Add(1)
		return
	}
	select {
	case g.queue <- roomRequest{client: client, typ: h.Type, payload: append([]byte(nil), payload...)}:
	default:
		g.dropped.Add(1)
	}
}

// roomStats counts rooms for the status page and metrics.
type roomStats struct {
	opened, closed atomic.Uint64
	requests       atomic.Uint64 // carried out or refused with a code
	refused        atomic.Uint64 // answered with a code other than OK
}

// runRoomRequests carries out the requests that arrived since the last
// tick, then tells room owners of wrong passwords.
func (s *Server) runRoomRequests() {
	defer s.passwordNotices()
	for {
		select {
		case req := <-s.roomReqs.queue:
			if _, ok := s.players[req.client]; !ok {
				s.drainEvents(s.now) // its admission may have come after this tick's drain
			}
			if _, ok := s.players[req.client]; ok { // not a client that left before the tick
				s.roomRequest(req)
			}
		default:
			return
		}
	}
}

// roomRequest carries out one request and answers it.
func (s *Server) roomRequest(req roomRequest) {
	s.roomStats.requests.Add(1)
	room, err := s.doRoomRequest(req)
	switch {
	case errors.Is(err, errAnswered):
	case err != nil:
		s.refuseRequest(req.client, req.typ, room, err)
	case req.typ != gamemsg.TypeRoomListRequest: // a RoomList is its own answer
		s.roomResult(req.client, req.typ, gamemsg.RoomOK, room, "")
	}
}

// refuseRequest answers a request refused with err: a *lobby.Error's code,
// else BadRequest.
func (s *Server) refuseRequest(client uint32, t wire.MessageType, room module.RoomID, err error) {
	code, detail := gamemsg.RoomBadRequest, err.Error()
	var le *lobby.Error
	if errors.As(err, &le) {
		code, detail = le.Code, le.Detail
	}
	s.roomStats.refused.Add(1)
	s.roomResult(client, t, code, room, detail)
}

// roomResult sends a RoomResult.
func (s *Server) roomResult(client uint32, t wire.MessageType, code gamemsg.RoomCode, room module.RoomID, detail string) {
	if len(detail) > gamemsg.MaxRoomDetailLen {
		detail = detail[:gamemsg.MaxRoomDetailLen]
	}
	if !wire.ValidUTF8NoNUL([]byte(detail)) {
		detail = code.String()
	}
	s.roomBuf = gamemsg.AppendRoomResult(s.roomBuf[:0], &gamemsg.RoomResult{Request: t, Code: code, Room: uint32(room), Detail: detail})
	s.send(client, gamemsg.TypeRoomResult, wire.ReliableOrdered, s.roomBuf)
}

// doRoomRequest dispatches a request; it returns the room it concerns. A
// request carried out is answered (RoomResult OK) before the events it
// causes, and returns errAnswered; a refusal is answered by roomRequest.
func (s *Server) doRoomRequest(req roomRequest) (module.RoomID, error) {
	c := req.client
	done := func(room module.RoomID) { s.roomResult(c, req.typ, gamemsg.RoomOK, room, "") }
	switch req.typ {
	case gamemsg.TypeRoomListRequest:
		m, err := gamemsg.ParseRoomListRequest(req.payload)
		if err != nil {
			return 0, err
		}
		s.sendRoomList(c, int(m.Offset))
		return 0, nil
	case gamemsg.TypeRoomCreate:
		m, err := gamemsg.ParseRoomCreate(req.payload)
		if err != nil {
			return 0, err
		}
		return s.createRoom(c, &m)
	case gamemsg.TypeRoomJoin:
		m, err := gamemsg.ParseRoomJoin(req.payload)
		if err != nil {
			return 0, err
		}
		return s.joinRoom(c, &m)
	case gamemsg.TypeRoomLeave:
		li, newOwner, err := s.lobby.Leave(c, s.now)
		if err != nil {
			return 0, err
		}
		done(li.ID)
		s.exit(c, s.rooms[li.ID], gamemsg.LeaveAsked, wire.DisconnectUnknown, newOwner)
	case gamemsg.TypeRoomRename:
		m, err := gamemsg.ParseRoomRename(req.payload)
		if err != nil {
			return 0, err
		}
		li, err := s.lobby.Rename(c, m.Name)
		if err != nil {
			return 0, err
		}
		done(li.ID)
		r := s.rooms[li.ID]
		r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomRenamed, Client: c, Name: m.Name})
		r.changed = true
	case gamemsg.TypeRoomStart:
		li, err := s.lobby.Start(c)
		if err != nil {
			return 0, err
		}
		done(li.ID)
		s.started(s.rooms[li.ID], c)
	case gamemsg.TypeRoomPause:
		li, paused, err := s.lobby.TogglePause(c)
		if err != nil {
			return 0, err
		}
		done(li.ID)
		s.paused(s.rooms[li.ID], c, paused)
	case gamemsg.TypeRoomKick:
		m, err := gamemsg.ParseRoomKick(req.payload)
		if err != nil {
			return 0, err
		}
		li, newOwner, err := s.lobby.Kick(c, m.Client, s.now)
		if err != nil {
			return 0, err
		}
		done(li.ID)
		s.exit(m.Client, s.rooms[li.ID], gamemsg.LeaveKicked, wire.DisconnectUnknown, newOwner)
	default:
		return 0, fmt.Errorf("type %v is not a room request", req.typ)
	}
	return 0, errAnswered
}

// sendRoomList answers a RoomListRequest with the page from offset, and
// makes a client in the lobby a browser (RoomUpdate) until it joins.
func (s *Server) sendRoomList(client uint32, offset int) {
	if _, ok := s.inLobby[client]; ok {
		s.browsing[client] = struct{}{}
	}
	list := s.lobby.List()
	m := gamemsg.RoomList{Total: uint16(min(len(list), 0xFFFF)), Offset: uint16(offset), Modes: s.lobby.Modes()}
	if s.fixed != nil {
		m.Modes = []string{s.fixed.info.Mode}
	}
	for i := offset; i < len(list) && len(m.Rooms) < gamemsg.RoomListPage; i++ {
		if r := s.rooms[list[i].ID]; r != nil {
			m.Rooms = append(m.Rooms, r.roomInfo())
		}
	}
	s.roomBuf = gamemsg.AppendRoomList(s.roomBuf[:0], &m)
	s.send(client, gamemsg.TypeRoomList, wire.ReliableOrdered, s.roomBuf)
}

// createRoom opens a room for a RoomCreate: the lobby's checks, the room's
// match and world, its mode's module; the creator joins it as its owner.
func (s *Server) createRoom(client uint32, m *gamemsg.RoomCreate) (module.RoomID, error) {
	if s.fixed != nil {
		return 0, &lobby.Error{Code: gamemsg.RoomNotAllowed, Detail: "this server runs one match; it has no lobby to create rooms in"}
	}
	li, err := s.lobby.Create(client, m)
	if err != nil {
		return 0, err
	}
	r, err := s.newRoom(li, s.now)
	if err == nil {
		err = s.openRoom(r, []supervisor.Spec{s.modes[li.Mode]})
	}
	if err != nil {
		_, _ = s.lobby.Close(li.ID)
		s.log.Warn("room could not open", "room", li.ID, "mode", li.Mode, "err", err)
		return li.ID, &lobby.Error{Code: gamemsg.RoomModuleFailed, Detail: fmt.Sprintf("mode %s did not start: %v", li.Mode, err)}
	}
	s.log.Info("room created", "room", li.ID, "name", li.Name, "mode", li.Mode, "owner", client, "capacity", li.Capacity, "password", li.Verifier != nil)
	s.roomResult(client, gamemsg.TypeRoomCreate, gamemsg.RoomOK, li.ID, "")
	s.enter(client, r, replicateResync)
	return li.ID, errAnswered
}

// replicateResync: a client entering a room's world starts from nothing.
const replicateResync = replicate.ResyncTypes

// errAnswered: the request was answered already (the answer had to come
// before what followed it).
var errAnswered = errors.New("answered")

// joinRoom carries out a RoomJoin.
func (s *Server) joinRoom(client uint32, m *gamemsg.RoomJoin) (module.RoomID, error) {
	room := module.RoomID(m.Room)
	if s.fixed != nil {
		if room == s.fixed.info.ID {
			return room, &lobby.Error{Code: gamemsg.RoomAlreadyInRoom, Detail: "everybody is in this server's one room"}
		}
		return room, &lobby.Error{Code: gamemsg.RoomNoSuchRoom, Detail: "this server runs one match, room " + fmt.Sprint(s.fixed.info.ID)}
	}
	li, out, err := s.lobby.Join(s.joiner(client), room, m.Proof, s.now)
	if s.passwordOutcome(client, room, out, err) {
		return room, errAnswered
	}
	if err != nil {
		return room, err
	}
	s.roomResult(client, gamemsg.TypeRoomJoin, gamemsg.RoomOK, li.ID, "")
	s.enter(client, s.rooms[li.ID], replicateResync)
	return li.ID, errAnswered
}

// started: a room's match clock runs from now.
func (s *Server) started(r *room, by uint32) {
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomStarted, Client: by})
	r.changed = true
	s.log.Info("room started", "room", r.info.ID, "by", by)
}

// paused: a room's match clock stopped (or runs again).
func (s *Server) paused(r *room, by uint32, paused bool) {
	v := uint32(0)
	if paused {
		v = 1
	}
	r.event(0, gamemsg.RoomEvent{Kind: gamemsg.RoomPauseChanged, Client: by, Value: v})
	s.mods.Announce(r.info.ID, module.Event{Kind: module.EventPause, Paused: paused})
	r.changed = true
}
