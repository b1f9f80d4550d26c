package client

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// Rooms at the console (docs/protocol.md §13): the commands send the room
// requests and wait for the answer (RoomList, or the RoomResult of their
// request; Config.AnswerTimeout), which prints before the command returns;
// a refusal fails the command. Answers and events are event lines that
// wait matches:
//
//	rooms: 2 of 2 (modes deathmatch, tag)
//	room 3 "friday" mode tag map arena players 1/8 waiting open
//	room result: RoomCreate OK room 3
//	room result: RoomJoin RoomFull room 3: room 3 holds 8 of 8
//	in room 3 "friday" mode tag map arena players 1/8 waiting open, owner 5: alice(5)
//	room 3: bob(6) joined
//	room 3: bob(6) left (timed_out)
//	room 3: owner is now bob(6)
//	room 3: started by 5
//	room 3: paused by 5      room 3: resumed by 5
//	room 3: match ended, winner 5
//	room 3: renamed to "saturday" by 5
//	room 3: closed (admin)
//	room update: 3 "friday" ...       room gone: 3
//	room chat alice: hi      global chat alice: hi
//
// The console remembers the rooms it last heard of (their password salt
// and iterations, for room_join with a password).

func roomCommands() []Command {
	return []Command{
		{Name: "rooms", Usage: "rooms [OFFSET]", Help: "list the rooms (a page of 16 from OFFSET) and the modes", Run: cmdRooms},
		{Name: "room_create", Usage: "room_create NAME MODE [CAPACITY [PASSWORD]]", Help: "create a room (capacity 0: the server's default) and join it as its owner", Run: cmdRoomCreate},
		{Name: "room_join", Usage: "room_join ID [PASSWORD]", Help: "join a room (list the rooms first for one with a password; asked for at a terminal when omitted)", Run: cmdRoomJoin},
		{Name: "room_leave", Usage: "room_leave", Help: "leave your room for the lobby", Run: cmdRoomLeave},
		{Name: "room_rename", Usage: "room_rename NAME...", Help: "rename your room (owner)", Run: cmdRoomRename},
		{Name: "room_start", Usage: "room_start", Help: "start your room's match (owner)", Run: cmdRoomStart},
		{Name: "room_pause", Usage: "room_pause", Help: "pause or resume your room's match", Run: cmdRoomPause},
		{Name: "room_kick", Usage: "room_kick CLIENT", Help: "remove a player from your room (owner)", Run: cmdRoomKick},
		{Name: "room_say", Usage: "room_say TEXT...", Help: "chat to your room (the lobby when in none)", Run: cmdRoomSay},
		{Name: "global_say", Usage: "global_say TEXT...", Help: "chat to every player on the server (if the server allows it)", Run: cmdGlobalSay},
	}
}

// sendRoom sends a room request on its channel.
func (c *Console) sendRoom(cmd string, t wire.MessageType, payload []byte) error {
	conn, err := c.current(cmd)
	if err != nil {
		return err
	}
	ch := wire.ReliableOrdered
	if t == gamemsg.TypeRoomChat {
		ch = wire.Reliable
	}
	if err := conn.client.Send(t, ch, payload); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

func cmdRooms(c *Console, args []string) error {
	offset := 0
	if len(args) > 1 {
		return usageError("rooms [OFFSET]")
	}
	if len(args) == 1 {
		n, err := strconv.ParseUint(args[0], 10, 16)
		if err != nil {
			return fmt.Errorf("rooms: %q is not an offset", args[0])
		}
		offset = int(n)
	}
	return c.roomRequest("rooms", gamemsg.TypeRoomListRequest, gamemsg.AppendRoomListRequest(nil, &gamemsg.RoomListRequest{Offset: uint16(offset)}))
}

func cmdRoomCreate(c *Console, args []string) error {
	const usage = "room_create NAME MODE [CAPACITY [PASSWORD]]"
	if len(args) < 2 || len(args) > 4 {
		return usageError(usage)
	}
	m := gamemsg.RoomCreate{Name: args[0], Mode: args[1]}
	if !wire.ValidName([]byte(m.Name), gamemsg.MaxRoomNameLen) {
		return fmt.Errorf("room_create: %q is not a room name: 1..%d bytes, no control characters", m.Name, gamemsg.MaxRoomNameLen)
	}
	if len(args) >= 3 {
		n, err := strconv.ParseUint(args[2], 10, 16)
		if err != nil {
			return fmt.Errorf("room_create: %q is not a capacity", args[2])
		}
		m.Capacity = uint16(n)
	}
	if len(args) == 4 {
		v, err := roomauth.NewVerifier(args[3], roomauth.DefaultIterations, rand.Reader)
		if err != nil {
			return fmt.Errorf("room_create: %w", err)
		}
		m.Password, m.Salt, m.Iterations, m.StoredKey = true, v.Salt, v.Iterations, v.StoredKey
	}
	return c.roomRequest("room_create", gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &m))
}

func cmdRoomJoin(c *Console, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError("room_join ID [PASSWORD]")
	}
	id, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || id == 0 {
		return fmt.Errorf("room_join: %q is not a room id", args[0])
	}
	m := gamemsg.RoomJoin{Room: uint32(id)}
	c.mu.Lock()
	info, known := c.known[m.Room]
	c.mu.Unlock()
	if len(args) == 1 && known && info.Password {
		// A room known to want a password: ask for it at the terminal.
		pw, err := c.ReadSecret(fmt.Sprintf("password for room %d: ", id))
		if errors.Is(err, ErrNoTerminal) {
			return fmt.Errorf("room_join: room %d has a password; give it: room_join %d PASSWORD", id, id)
		}
		if err != nil {
			return fmt.Errorf("room_join: %w", err)
		}
		args = append(args, pw)
	}
	if len(args) == 2 {
		conn, err := c.current("room_join")
		if err != nil {
			return err
		}
		if !known || !info.Password {
			return fmt.Errorf("room_join: room %d is not known to have a password; list the rooms first (rooms)", id)
		}
		proof, err := roomauth.Proof(args[1], info.Salt, info.Iterations, m.Room, conn.client.ChannelBinding())
		if err != nil {
			return fmt.Errorf("room_join: %w", err)
		}
		m.Proof = proof[:]
	}
	return c.roomRequest("room_join", gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &m))
}

func noArgs(name string, t wire.MessageType) func(c *Console, args []string) error {
	return func(c *Console, args []string) error {
		if len(args) != 0 {
			return usageError(name)
		}
		return c.roomRequest(name, t, nil)
	}
}

var (
	cmdRoomLeave = noArgs("room_leave", gamemsg.TypeRoomLeave)
	cmdRoomStart = noArgs("room_start", gamemsg.TypeRoomStart)
	cmdRoomPause = noArgs("room_pause", gamemsg.TypeRoomPause)
)

func cmdRoomRename(c *Console, args []string) error {
	name := strings.Join(args, " ")
	if !wire.ValidName([]byte(name), gamemsg.MaxRoomNameLen) {
		return usageError("room_rename NAME... (1..32 bytes)")
	}
	return c.roomRequest("room_rename", gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: name}))
}

func cmdRoomKick(c *Console, args []string) error {
	if len(args) != 1 {
		return usageError("room_kick CLIENT")
	}
	id, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil {
		return fmt.Errorf("room_kick: %q is not a client id", args[0])
	}
	return c.roomRequest("room_kick", gamemsg.TypeRoomKick, gamemsg.AppendRoomKick(nil, &gamemsg.RoomKick{Client: uint32(id)}))
}

func roomSay(name string, scope gamemsg.ChatScope) func(c *Console, args []string) error {
	return func(c *Console, args []string) error {
		text := strings.Join(args, " ")
		if !gamemsg.ValidChatText([]byte(text)) {
			return fmt.Errorf("%s: chat text must be 1..%d bytes without control characters", name, gamemsg.MaxChatTextLen)
		}
		if err := c.sendRoom(name, gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: scope, Text: text})); err != nil {
			return err
		}
		c.println("said: " + text)
		return nil
	}
}

var (
	cmdRoomSay   = roomSay("room_say", gamemsg.ChatRoom)
	cmdGlobalSay = roomSay("global_say", gamemsg.ChatGlobal)
)

// printRoom prints the event line of a room message and remembers the
// rooms it describes; it reports whether m was one.
func (c *Console) printRoom(m netstack.Message) (bool, error) {
	switch m.Header.Type {
	case gamemsg.TypeRoomList:
		rl, err := gamemsg.ParseRoomList(m.Payload)
		if err != nil {
			return true, err
		}
		c.Printf("rooms: %d of %d (modes %s)", len(rl.Rooms), rl.Total, strings.Join(rl.Modes, ", "))
		for _, ri := range rl.Rooms {
			c.remember(ri)
			c.Printf("room %s", roomText(ri))
		}
		c.answerRoom(gamemsg.TypeRoomListRequest, nil)
	case gamemsg.TypeRoomResult:
		rr, err := gamemsg.ParseRoomResult(m.Payload)
		if err != nil {
			return true, err
		}
		line := fmt.Sprintf("room result: %s %s room %d", rr.Request, rr.Code, rr.Room)
		if rr.Detail != "" {
			line += ": " + rr.Detail
		}
		c.Printf("%s", line)
		c.answerRoom(rr.Request, &rr)
	case gamemsg.TypeRoomState:
		rs, err := gamemsg.ParseRoomState(m.Payload)
		if err != nil {
			return true, err
		}
		c.remember(rs.Room)
		names := make([]string, 0, len(rs.Members))
		for _, mm := range rs.Members {
			names = append(names, fmt.Sprintf("%s(%d)", mm.Name, mm.Client))
		}
		c.Printf("in room %s, owner %d: %s", roomText(rs.Room), rs.Owner, strings.Join(names, " "))
	case gamemsg.TypeRoomEvent:
		ev, err := gamemsg.ParseRoomEvent(m.Payload)
		if err != nil {
			return true, err
		}
		c.Printf("room %d: %s", ev.Room, roomEventText(ev))
	case gamemsg.TypeRoomUpdate:
		u, err := gamemsg.ParseRoomUpdate(m.Payload)
		if err != nil {
			return true, err
		}
		if u.Kind == gamemsg.RoomGone {
			c.mu.Lock()
			delete(c.known, u.Room.ID)
			c.mu.Unlock()
			c.Printf("room gone: %d", u.Room.ID)
			break
		}
		c.remember(u.Room)
		c.Printf("room update: %s", roomText(u.Room))
	case gamemsg.TypeRoomChat:
		rc, err := gamemsg.ParseRoomChat(m.Payload)
		if err != nil {
			return true, err
		}
		scope := "room"
		if rc.Scope == gamemsg.ChatGlobal {
			scope = "global"
		}
		c.Printf("%s chat %s: %s", scope, rc.SenderName, rc.Text)
	default:
		return false, nil
	}
	return true, nil
}

// remember keeps a room's facts (bounded: a console follows a page or
// two of rooms, not thousands).
func (c *Console) remember(ri gamemsg.RoomInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.known) >= 4096 {
		clear(c.known)
	}
	c.known[ri.ID] = ri
}

// roomText renders a room: id, name, mode, map, players, state, flags.
func roomText(ri gamemsg.RoomInfo) string {
	s := fmt.Sprintf("%d %q mode %s map %s players %d/%d %s", ri.ID, ri.Name, ri.Mode, ri.Map, ri.Players, ri.Capacity, ri.State)
	if ri.Open {
		s += " open"
	}
	if ri.Password {
		s += " password"
	}
	return s
}

func roomEventText(ev gamemsg.RoomEvent) string {
	who := fmt.Sprintf("%s(%d)", ev.Name, ev.Client)
	switch ev.Kind {
	case gamemsg.RoomJoined:
		return who + " joined"
	case gamemsg.RoomLeft:
		return fmt.Sprintf("%s left (%s)", who, gamemsg.LeaveReason(ev.Value))
	case gamemsg.RoomOwnerChanged:
		return "owner is now " + who
	case gamemsg.RoomStarted:
		return fmt.Sprintf("started by %d", ev.Client)
	case gamemsg.RoomPauseChanged:
		if ev.Value == 1 {
			return fmt.Sprintf("paused by %d", ev.Client)
		}
		return fmt.Sprintf("resumed by %d", ev.Client)
	case gamemsg.RoomMatchEnded:
		return fmt.Sprintf("match ended, winner %d", ev.Value)
	case gamemsg.RoomRenamed:
		return fmt.Sprintf("renamed to %q by %d", ev.Name, ev.Client)
	case gamemsg.RoomClosed:
		return "closed (" + gamemsg.CloseReason(ev.Value).String() + ")"
	case gamemsg.RoomPasswordFailures:
		return fmt.Sprintf("%d wrong password(s) tried for your room, the latest by %s", ev.Value, who)
	}
	return ev.Kind.String()
}
