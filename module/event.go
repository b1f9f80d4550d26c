package module

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Tick describes the tick a Step runs in.
type Tick struct {
	Number uint64
	DT     time.Duration // the fixed step
	Now    time.Time     // the tick's time on the server's clock
	// Deadline is when the module's work for this tick must be done (its
	// budget); runtimes that can be interrupted (Lua) enforce it, and the
	// server stops waiting for a plugin's answer then.
	Deadline time.Time
}

// EventKind says what an Event carries.
type EventKind uint8

// Event kinds.
const (
	EventAdmitted   EventKind = iota + 1 // Client, Name: a client joined (also sent for every present client when a module loads)
	EventLeft                            // Client, Reason: a client left
	EventMessage                         // Client, Type, Payload: one of the module's messages
	EventMatchStart                      // Match
	EventMatchEnd                        // MatchEnd
	EventMapChange                       // Map, MapIndex
	EventInput                           // Client, Input: a ClientInput (modules with Manifest.Inputs)
	EventRoomOpen                        // Room, RoomInfo, EntityIDs: a module that serves many rooms starts serving one
	EventRoomClose                       // Room: ... and stops (its Host is gone; its entities are destroyed)
	EventPause                           // Paused: the room's match clock stopped (true) or runs again (false)
	// EventResumed (Client, Name): a client whose connection dropped came
	// back to its seat within the server's hold window (docs/protocol.md
	// §3.15): the same client, still in its room and team with its score
	// and entity, on a new connection. It was never reported left, and is
	// not admitted again. A module that froze anything of an absent player
	// has no other signal; one that did nothing needs none.
	EventResumed EventKind = 11

	// EventDrain (Draining, DrainDeadline): the server began draining
	// (true) — it admits nobody new, lets running matches end and stops at
	// the deadline at the latest — or the drain was called off (false).
	// A module that can move its players elsewhere (the mmo hands its
	// characters to a neighbour area) does it now; the server waits for a
	// room without a match until its players have left.
	EventDrain EventKind = 13
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventAdmitted:
		return "admitted"
	case EventLeft:
		return "left"
	case EventMessage:
		return "message"
	case EventMatchStart:
		return "match_start"
	case EventMatchEnd:
		return "match_end"
	case EventMapChange:
		return "map_change"
	case EventInput:
		return "input"
	case EventRoomOpen:
		return "room_open"
	case EventRoomClose:
		return "room_close"
	case EventPause:
		return "pause"
	case EventResumed:
		return "resumed"
	case EventDrain:
		return "drain"
	}
	return "unknown"
}

// Event is one thing that happened since the module's last Step.
type Event struct {
	Kind EventKind
	// Room is the room the event happened in (0: the whole server). A
	// module with one instance per room always sees its own.
	Room   RoomID
	Client uint32
	Name   string // EventAdmitted
	// Present (EventAdmitted): the client was admitted before this module
	// started; the event greets it rather than announcing an arrival
	// (ClientInfo.Present).
	Present bool
	// Reason (EventLeft) is how the client's session ended, or
	// DisconnectUnknown when it only left the room; Leave says which.
	Reason   wire.DisconnectReason
	Leave    gamemsg.LeaveReason // EventLeft
	Type     wire.MessageType    // EventMessage
	Payload  []byte              // EventMessage: a copy owned by the event
	Match    gamemsg.MatchStart  // EventMatchStart
	MatchEnd gamemsg.MatchEnd    // EventMatchEnd
	Map      string              // EventMapChange
	MapIndex int                 // EventMapChange
	Input    gamemsg.ClientInput // EventInput
	// RoomInfo and EntityIDs (EventRoomOpen) are the room's facts and the
	// module's block of entity ids in the room's world.
	RoomInfo  RoomInfo
	EntityIDs IDRange
	Paused    bool // EventPause
	// Draining and DrainDeadline (EventDrain): whether the server drains,
	// and when it stops at the latest.
	Draining      bool
	DrainDeadline time.Time
}
