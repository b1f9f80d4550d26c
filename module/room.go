package module

import (
	"errors"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Rooms (docs/protocol.md §13). A room is the unit a module runs in: its
// own players, match (phase, timer, scores, map) and entity world. A server
// that runs one match has one room that every admitted client joins; a
// server with a lobby runs many.
//
// A module sees rooms in one of two ways, and a module written for one
// match needs neither:
//
//   - One instance per room (the default; a Lua module always). The
//     manager starts a fresh instance for every room of the module's mode,
//     with a Host scoped to that room: Clients, Broadcast, AddScore, the
//     entity calls and Server (its Map, MatchState, Players, Room) are the
//     room's. EventAdmitted and EventLeft mean "joined the room" and "left
//     the room"; Event.Room is the instance's room. Nothing else changes.
//   - One instance for every room (Manifest.Rooms; a Go plugin built with
//     plugin.ServeRooms: one process, one call per tick for all its rooms).
//     The instance learns of each room by EventRoomOpen and EventRoomClose,
//     every event carries its Event.Room, and it acts in a room through
//     the room's Host, RoomHost.Room(id). Its own Host (the one Load gets)
//     is not scoped to a room: the calls that need one return ErrManyRooms.
//
// A module loaded for the whole server on a server with a lobby (modules.load
// beside [rooms] modes) has scope 0: every admitted client, no room, no
// entity world.

// RoomID names a room; 0 is none (the whole server).
type RoomID uint32

// RoomInfo is what a module may know about its room.
type RoomInfo struct {
	ID   RoomID
	Name string
	// Mode is the module name the room was created with ([rooms] modes).
	Mode string
	// Owner is the client who owns the room (0: none: the server's own room).
	Owner    uint32
	Capacity int
	State    gamemsg.RoomStatus
}

// RoomHost is implemented by the Host of a module that serves many rooms
// (Manifest.Rooms): Room returns the Host of one of its rooms, valid until
// the room's EventRoomClose.
type RoomHost interface {
	Room(id RoomID) (Host, error)
}

// Errors of rooms.
var (
	// ErrNoRoom: the room is closed, or not one this module serves.
	ErrNoRoom = errors.New("module: no such room of this module (closed, or never opened)")
	// ErrManyRooms: a call that acts in a room, made on the Host of a
	// module that serves many; use RoomHost.Room(id).
	ErrManyRooms = errors.New("module: this module serves many rooms; act in one through Host.Room(id)")
)
