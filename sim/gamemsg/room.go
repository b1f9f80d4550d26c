package gamemsg

import (
	"strconv"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Rooms (docs/protocol.md §13): the lobby's requests, answers and events.
// Every admitted client starts in the lobby (or, on a server that runs one
// match, in its one room); it lists the rooms, creates one, joins one,
// leaves it, and the server tells every client concerned what happened.
// The types are built in, so any client gets rooms without module code; the
// transport's own types stay below 19 and 19..31 are the transport's
// reserve.
const (
	TypeRoomListRequest wire.MessageType = 32 // c2s: a page of the room list
	TypeRoomList        wire.MessageType = 33 // s2c: the page
	TypeRoomCreate      wire.MessageType = 34 // c2s: create a room and join it as its owner
	TypeRoomJoin        wire.MessageType = 35 // c2s: join a room (with a password proof)
	TypeRoomLeave       wire.MessageType = 36 // c2s: back to the lobby
	TypeRoomRename      wire.MessageType = 37 // c2s: the owner renames the room
	TypeRoomStart       wire.MessageType = 38 // c2s: the owner starts the match
	TypeRoomPause       wire.MessageType = 39 // c2s: toggle the room's pause
	TypeRoomKick        wire.MessageType = 40 // c2s: the owner removes a player from the room
	TypeRoomChat        wire.MessageType = 41 // both: chat to the room or to everybody
	TypeRoomResult      wire.MessageType = 42 // s2c: the answer to a request
	TypeRoomState       wire.MessageType = 43 // s2c: the room a client is now in, with its players
	TypeRoomEvent       wire.MessageType = 44 // s2c: something happened in the client's room
	TypeRoomUpdate      wire.MessageType = 45 // s2c: a room changed or closed (to clients in the lobby)
)

// Limits of the room messages.
const (
	MaxRoomNameLen   = 32   // a room's name: the name rule of §1
	MaxRoomModeLen   = 64   // a mode (the module a room runs): the name rule
	MaxRoomDetailLen = 256  // RoomResult detail
	RoomListPage     = 16   // rooms in one RoomList at most
	MaxRoomModes     = 32   // modes a RoomList names at most
	MaxRoomMembers   = 1024 // players a RoomState lists at most
	RoomSaltLen      = 16   // password salt
	RoomKeyLen       = 32   // stored key and proof
)

// RoomStatus is a room's state (RoomInfo.state).
type RoomStatus uint8

// Room states.
const (
	RoomWaiting RoomStatus = iota // created; the owner has not started the match
	RoomPlaying                   // the match runs (warmup, rounds)
	RoomPaused                    // the match clock stands still
	RoomEnded                     // the match ended; back to Waiting with the next map
)

var roomStatusNames = [...]string{"waiting", "playing", "paused", "ended"}

// String names the state as the protocol does.
func (s RoomStatus) String() string { return enumName(roomStatusNames[:], uint8(s), "RoomStatus") }

// Valid reports whether s is defined.
func (s RoomStatus) Valid() bool { return s <= RoomEnded }

// RoomCode is RoomResult.code: what became of a request.
type RoomCode uint8

// Result codes.
const (
	RoomOK             RoomCode = iota // done
	RoomBadRequest                     // a field is out of range (a name, a capacity, an iteration count)
	RoomNoSuchRoom                     // no room has that id
	RoomFull                           // the room holds its capacity
	RoomWrongPassword                  // the proof does not match the room's password, or none was given
	RoomNotOwner                       // only the room's owner (or an admin) may do that
	RoomAlreadyInRoom                  // leave your room first
	RoomNotInRoom                      // you are in the lobby
	RoomTooManyRooms                   // the server holds its [rooms] max
	RoomUnknownMode                    // the server does not offer that mode
	RoomNotAllowed                     // not on this server (one match, no lobby), or not in this state
	RoomRateLimited                    // a RoomJoin's proof refused unchecked: the room or the sender is in its password back-off
	RoomAlreadyStarted                 // the match already runs
	RoomNotStarted                     // the match has not started
	RoomModuleFailed                   // the mode's module could not start in the room
	RoomChatDisabled                   // the operator turned global chat off
	RoomNoSuchPlayer                   // that client is not in your room
)

var roomCodeNames = [...]string{"OK", "BadRequest", "NoSuchRoom", "RoomFull", "WrongPassword", "NotOwner",
	"AlreadyInRoom", "NotInRoom", "TooManyRooms", "UnknownMode", "NotAllowed", "RateLimited",
	"AlreadyStarted", "NotStarted", "ModuleFailed", "ChatDisabled", "NoSuchPlayer"}

// String names the code as the protocol does.
func (c RoomCode) String() string { return enumName(roomCodeNames[:], uint8(c), "RoomCode") }

// Valid reports whether c is defined.
func (c RoomCode) Valid() bool { return c <= RoomNoSuchPlayer }

// RoomEventKind is RoomEvent.kind.
type RoomEventKind uint8

// Room event kinds; what Client, Value and Name carry is in RoomEvent.
const (
	RoomJoined           RoomEventKind = iota // Client joined; Name is theirs
	RoomLeft                                  // Client left; Value is a LeaveReason
	RoomOwnerChanged                          // Client is the new owner; Name is theirs
	RoomStarted                               // Client started the match (0: the server)
	RoomPauseChanged                          // Client toggled pause; Value 1 paused, 0 resumed
	RoomMatchEnded                            // the match ended; Value is the winner (0: none)
	RoomRenamed                               // Client renamed the room; Name is the new name
	RoomClosed                                // the room closed; Value is a CloseReason; everybody is back in the lobby
	RoomPasswordFailures                      // to the owner: Value wrong or refused passwords since the last such event; Client (Name) the latest guesser
)

var roomEventNames = [...]string{"joined", "left", "owner", "started", "paused", "ended", "renamed", "closed", "password_failures"}

// String names the kind.
func (k RoomEventKind) String() string { return enumName(roomEventNames[:], uint8(k), "RoomEventKind") }

// Valid reports whether k is defined.
func (k RoomEventKind) Valid() bool { return k <= RoomPasswordFailures }

// LeaveReason is the Value of a RoomLeft event.
type LeaveReason uint8

// Why a player left a room.
const (
	LeaveAsked        LeaveReason = iota // RoomLeave
	LeaveKicked                          // the owner or an admin removed them
	LeaveQuit                            // they quit the server
	LeaveTimedOut                        // their connection timed out
	LeaveDisconnected                    // any other end of their session
	LeaveClosed                          // the room closed
)

var leaveNames = [...]string{"left", "kicked", "quit", "timed_out", "disconnected", "closed"}

// String names the reason.
func (r LeaveReason) String() string { return enumName(leaveNames[:], uint8(r), "LeaveReason") }

// Valid reports whether r is defined.
func (r LeaveReason) Valid() bool { return r <= LeaveClosed }

// LeaveReasonFor maps the end of a session to the reason its room is told.
func LeaveReasonFor(r wire.DisconnectReason) LeaveReason {
	switch r {
	case wire.DisconnectClientQuit:
		return LeaveQuit
	case wire.DisconnectTimeout:
		return LeaveTimedOut
	}
	return LeaveDisconnected
}

// CloseReason is the Value of a RoomClosed event.
type CloseReason uint8

// Why a room closed with players in it.
const (
	CloseAdmin        CloseReason = iota // `room close ID`
	CloseModuleFailed                    // the room's module failed
	CloseShutdown                        // the server shuts down
	CloseEmpty                           // empty past the grace time (told to the lobby only)
)

// String returns the reason as people read it in logs and the console:
// "admin", "module failed", "shutdown", "empty", or "reason N" for one this
// version does not know.
func (r CloseReason) String() string {
	switch r {
	case CloseAdmin:
		return "admin"
	case CloseModuleFailed:
		return "module failed"
	case CloseShutdown:
		return "shutdown"
	case CloseEmpty:
		return "empty"
	}
	return "reason " + strconv.Itoa(int(r))
}

// ChatScope says whom a RoomChat reaches.
type ChatScope uint8

// Chat scopes.
const (
	ChatRoom   ChatScope = iota // the sender's room (the lobby for a client in none)
	ChatGlobal                  // every admitted client
)

// RoomUpdateKind is RoomUpdate.kind.
type RoomUpdateKind uint8

// Room update kinds.
const (
	RoomChanged RoomUpdateKind = iota // created, or its players, state or name changed
	RoomGone                          // closed
)

// RoomInfo describes one room in RoomList, RoomState and RoomUpdate.
type RoomInfo struct {
	ID       uint32 // ≥ 1
	Name     string // the name rule, ≤ 32 bytes
	Mode     string // the name rule, ≤ 64 bytes
	Map      string // ≤ 64 bytes of UTF-8 without NUL
	Players  uint16
	Capacity uint16 // ≥ 1
	State    RoomStatus
	// Open: the room accepts joins now (not full, not closing).
	Open bool
	// Password: joining needs a proof; Salt and Iterations follow.
	Password   bool
	Salt       [RoomSaltLen]byte
	Iterations uint32
}

// RoomInfo flags.
const (
	roomFlagOpen     = 1 << 0
	roomFlagPassword = 1 << 1
	roomFlagsKnown   = roomFlagOpen | roomFlagPassword
)

// Encoded sizes.
const (
	minRoomInfoLen = 4 + 3 + 3 + 2 + 2 + 2 + 1 + 1
	maxRoomInfoLen = 4 + (2 + MaxRoomNameLen) + (2 + MaxRoomModeLen) + (2 + MaxMapLen) + 2 + 2 + 1 + 1 + RoomSaltLen + 4
	minMemberLen   = 4 + 3
	maxMemberLen   = 4 + 2 + wire.MaxNameLen
)

func appendRoomInfo(w *wire.Writer, m *RoomInfo) {
	w.U32(m.ID)
	w.Str(m.Name)
	w.Str(m.Mode)
	w.Str(m.Map)
	w.U16(m.Players)
	w.U16(m.Capacity)
	w.U8(uint8(m.State))
	var flags uint8
	if m.Open {
		flags |= roomFlagOpen
	}
	if m.Password {
		flags |= roomFlagPassword
	}
	w.U8(flags)
	if m.Password {
		w.Raw(m.Salt[:])
		w.U32(m.Iterations)
	}
}

// roomInfoView is a RoomInfo whose strings alias the payload.
type roomInfoView struct {
	RoomInfo
	name, mode, mapName []byte
}

func scanRoomInfo(r *wire.Reader, v *roomInfoView) {
	v.ID = r.U32()
	if !r.HasError() && v.ID == 0 {
		r.Fail(errOutOfRange)
	}
	v.name = r.Name(MaxRoomNameLen)
	v.mode = r.Name(MaxRoomModeLen)
	v.mapName = r.Text(MaxMapLen)
	v.Players = r.U16()
	v.Capacity = r.U16()
	v.State = RoomStatus(r.U8())
	flags := r.U8()
	if r.HasError() {
		return
	}
	switch {
	case v.Capacity == 0:
		r.Fail(errOutOfRange)
	case !v.State.Valid():
		r.Fail(errUnknownEnum)
	case flags&^roomFlagsKnown != 0:
		r.Fail(errReservedBits)
	}
	v.Open, v.Password = flags&roomFlagOpen != 0, flags&roomFlagPassword != 0
	if v.Password {
		copy(v.Salt[:], r.Bytes(RoomSaltLen))
		v.Iterations = r.U32()
	}
}

func (v *roomInfoView) info() RoomInfo {
	m := v.RoomInfo
	m.Name, m.Mode, m.Map = string(v.name), string(v.mode), string(v.mapName)
	return m
}

// RoomListRequest (type 32) asks for the rooms from Offset on.
type RoomListRequest struct {
	Offset uint16
}

// AppendRoomListRequest appends the 2-byte encoding.
func AppendRoomListRequest(dst []byte, m *RoomListRequest) []byte {
	w := wire.AppendWriter(dst)
	w.U16(m.Offset)
	return w.Bytes()
}

// ParseRoomListRequest parses a RoomListRequest (exactly 2 bytes).
func ParseRoomListRequest(p []byte) (RoomListRequest, error) {
	r := wire.NewReader(p)
	m := RoomListRequest{Offset: r.U16()}
	return m, wire.Finish(&r)
}

// RoomList (type 33) is one page of the rooms, in id order, and the modes a
// client may create rooms with.
type RoomList struct {
	Total  uint16 // rooms on the server
	Offset uint16 // index of Rooms[0] among them
	Rooms  []RoomInfo
	Modes  []string
}

// AppendRoomList appends the encoding of m; at most RoomListPage rooms and
// MaxRoomModes modes are written.
func AppendRoomList(dst []byte, m *RoomList) []byte {
	w := wire.AppendWriter(dst)
	rooms := m.Rooms[:min(len(m.Rooms), RoomListPage)]
	modes := m.Modes[:min(len(m.Modes), MaxRoomModes)]
	w.U16(m.Total)
	w.U16(m.Offset)
	w.U8(uint8(len(rooms)))
	for i := range rooms {
		appendRoomInfo(&w, &rooms[i])
	}
	w.U8(uint8(len(modes)))
	for _, s := range modes {
		w.Str(s)
	}
	return w.Bytes()
}

// ParseRoomList parses a RoomList.
func ParseRoomList(p []byte) (RoomList, error) {
	var m RoomList
	err := scanRoomList(p, &m)
	return m, err
}

// scanRoomList checks a RoomList; with m not nil it also decodes it.
func scanRoomList(p []byte, m *RoomList) error {
	r := wire.NewReader(p)
	total, offset := r.U16(), r.U16()
	n := int(r.U8())
	if !r.HasError() && (n > RoomListPage || n*minRoomInfoLen > r.Remaining()) {
		r.Fail(errOutOfRange)
	}
	if m != nil {
		m.Total, m.Offset = total, offset
		if n > 0 && !r.HasError() {
			m.Rooms = make([]RoomInfo, 0, n)
		}
	}
	var v roomInfoView
	for i := 0; i < n && !r.HasError(); i++ {
		scanRoomInfo(&r, &v)
		if m != nil && !r.HasError() {
			m.Rooms = append(m.Rooms, v.info())
		}
	}
	modes := int(r.U8())
	if !r.HasError() && (modes > MaxRoomModes || modes*3 > r.Remaining()) {
		r.Fail(errOutOfRange)
	}
	for i := 0; i < modes && !r.HasError(); i++ {
		mode := r.Name(MaxRoomModeLen)
		if m != nil && !r.HasError() {
			m.Modes = append(m.Modes, string(mode))
		}
	}
	if err := wire.Finish(&r); err != nil {
		if m != nil {
			*m = RoomList{}
		}
		return err
	}
	return nil
}

// RoomCreate (type 34) creates a room in Mode and joins the sender to it as
// its owner. Capacity 0 asks for the server's default. With a password,
// Salt, Iterations and StoredKey are its verifier (sim/roomauth): the
// password itself never leaves the client.
type RoomCreate struct {
	Name       string
	Mode       string
	Capacity   uint16
	Password   bool
	Salt       [RoomSaltLen]byte
	Iterations uint32
	StoredKey  [RoomKeyLen]byte
}

const roomCreatePassword = 1 << 0

// AppendRoomCreate appends the encoding of m.
func AppendRoomCreate(dst []byte, m *RoomCreate) []byte {
	w := wire.AppendWriter(dst)
	w.Str(m.Name)
	w.Str(m.Mode)
	w.U16(m.Capacity)
	if m.Password {
		w.U8(roomCreatePassword)
		w.Raw(m.Salt[:])
		w.U32(m.Iterations)
		w.Raw(m.StoredKey[:])
	} else {
		w.U8(0)
	}
	return w.Bytes()
}

// ParseRoomCreate parses a RoomCreate.
func ParseRoomCreate(p []byte) (RoomCreate, error) {
	var m RoomCreate
	name, mode, err := scanRoomCreate(p, &m)
	if err != nil {
		return RoomCreate{}, err
	}
	m.Name, m.Mode = string(name), string(mode)
	return m, nil
}

func scanRoomCreate(p []byte, m *RoomCreate) (name, mode []byte, err error) {
	r := wire.NewReader(p)
	name = r.Name(MaxRoomNameLen)
	mode = r.Name(MaxRoomModeLen)
	m.Capacity = r.U16()
	flags := r.U8()
	if !r.HasError() && flags&^roomCreatePassword != 0 {
		r.Fail(errReservedBits)
	}
	if m.Password = flags&roomCreatePassword != 0; m.Password {
		copy(m.Salt[:], r.Bytes(RoomSaltLen))
		m.Iterations = r.U32()
		copy(m.StoredKey[:], r.Bytes(RoomKeyLen))
	}
	return name, mode, wire.Finish(&r)
}

// RoomJoin (type 35) joins room Room; Proof is the password proof
// (sim/roomauth), empty for a room without a password.
type RoomJoin struct {
	Room  uint32
	Proof []byte // empty or RoomKeyLen bytes
}

// AppendRoomJoin appends the encoding of m.
func AppendRoomJoin(dst []byte, m *RoomJoin) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.Room)
	w.U8(uint8(len(m.Proof)))
	w.Raw(m.Proof)
	return w.Bytes()
}

// ParseRoomJoin parses a RoomJoin.
func ParseRoomJoin(p []byte) (RoomJoin, error) {
	m, proof, err := scanRoomJoin(p)
	if err != nil {
		return RoomJoin{}, err
	}
	m.Proof = clone(proof)
	return m, nil
}

func scanRoomJoin(p []byte) (RoomJoin, []byte, error) {
	r := wire.NewReader(p)
	m := RoomJoin{Room: r.U32()}
	n := int(r.U8())
	if !r.HasError() && n != 0 && n != RoomKeyLen {
		r.Fail(errOutOfRange)
	}
	proof := r.Bytes(n)
	return m, proof, wire.Finish(&r)
}

// RoomRename (type 37) renames the sender's room.
type RoomRename struct {
	Name string
}

// AppendRoomRename appends the encoding of m.
func AppendRoomRename(dst []byte, m *RoomRename) []byte {
	w := wire.AppendWriter(dst)
	w.Str(m.Name)
	return w.Bytes()
}

// ParseRoomRename parses a RoomRename.
func ParseRoomRename(p []byte) (RoomRename, error) {
	name, err := scanRoomRename(p)
	if err != nil {
		return RoomRename{}, err
	}
	return RoomRename{Name: string(name)}, nil
}

func scanRoomRename(p []byte) ([]byte, error) {
	r := wire.NewReader(p)
	name := r.Name(MaxRoomNameLen)
	return name, wire.Finish(&r)
}

// RoomKick (type 40) removes Client from the sender's room.
type RoomKick struct {
	Client uint32
}

// AppendRoomKick appends the 4-byte encoding of m.
func AppendRoomKick(dst []byte, m *RoomKick) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.Client)
	return w.Bytes()
}

// ParseRoomKick parses a RoomKick (exactly 4 bytes).
func ParseRoomKick(p []byte) (RoomKick, error) {
	r := wire.NewReader(p)
	m := RoomKick{Client: r.U32()}
	return m, wire.Finish(&r)
}

// RoomChat (type 41) is chat with a scope. A client sends Scope and Text;
// the server relays Scope, Room (the sender's room, 0 for the lobby),
// Sender and SenderName with the text.
type RoomChat struct {
	Scope      ChatScope
	Room       uint32 // server to client only
	Sender     uint32 // server to client only
	SenderName string // server to client only
	Text       string
}

// AppendRoomChatRequest appends the client's encoding of m (scope, text).
func AppendRoomChatRequest(dst []byte, m *RoomChat) []byte {
	w := wire.AppendWriter(dst)
	w.U8(uint8(m.Scope))
	w.Str(m.Text)
	return w.Bytes()
}

// AppendRoomChat appends the server's encoding of m.
func AppendRoomChat(dst []byte, m *RoomChat) []byte {
	w := wire.AppendWriter(dst)
	w.U8(uint8(m.Scope))
	w.U32(m.Room)
	w.U32(m.Sender)
	w.Str(m.SenderName)
	w.Str(m.Text)
	return w.Bytes()
}

// ParseRoomChatRequest parses a RoomChat as the server receives it.
func ParseRoomChatRequest(p []byte) (RoomChat, error) {
	m, _, text, err := scanRoomChat(p, true)
	if err != nil {
		return RoomChat{}, err
	}
	m.Text = string(text)
	return m, nil
}

// ParseRoomChat parses a RoomChat as a client receives it.
func ParseRoomChat(p []byte) (RoomChat, error) {
	m, name, text, err := scanRoomChat(p, false)
	if err != nil {
		return RoomChat{}, err
	}
	m.SenderName, m.Text = string(name), string(text)
	return m, nil
}

func scanRoomChat(p []byte, fromClient bool) (m RoomChat, name, text []byte, err error) {
	r := wire.NewReader(p)
	m.Scope = ChatScope(r.U8())
	if !r.HasError() && m.Scope > ChatGlobal {
		r.Fail(errUnknownEnum)
	}
	if !fromClient {
		m.Room, m.Sender = r.U32(), r.U32()
		name = r.Name(wire.MaxNameLen)
	}
	text = r.StrBytes()
	if !r.HasError() && !ValidChatText(text) {
		r.Fail(errBadText)
	}
	return m, name, text, wire.Finish(&r)
}

// RoomResult (type 42) answers a room request: Request is the type it
// answers, Room the room it concerns (0: none).
type RoomResult struct {
	Request wire.MessageType
	Code    RoomCode
	Room    uint32
	Detail  string // ≤ 256 bytes: what happened, for a person
}

// AppendRoomResult appends the encoding of m.
func AppendRoomResult(dst []byte, m *RoomResult) []byte {
	w := wire.AppendWriter(dst)
	w.U16(uint16(m.Request))
	w.U8(uint8(m.Code))
	w.U32(m.Room)
	w.Str(m.Detail)
	return w.Bytes()
}

// ParseRoomResult parses a RoomResult.
func ParseRoomResult(p []byte) (RoomResult, error) {
	m, detail, err := scanRoomResult(p)
	if err != nil {
		return RoomResult{}, err
	}
	m.Detail = string(detail)
	return m, nil
}

func scanRoomResult(p []byte) (RoomResult, []byte, error) {
	r := wire.NewReader(p)
	m := RoomResult{Request: wire.MessageType(r.U16()), Code: RoomCode(r.U8()), Room: r.U32()}
	if !r.HasError() && !m.Code.Valid() {
		r.Fail(errUnknownEnum)
	}
	detail := r.Text(MaxRoomDetailLen)
	return m, detail, wire.Finish(&r)
}

// RoomMember is one player of a RoomState.
type RoomMember struct {
	Client uint32
	Name   string
}

// RoomStateMsg (type 43) tells a client the room it is now in: its facts,
// its owner (0: none) and its players in join order (the first
// MaxRoomMembers of Total).
type RoomStateMsg struct {
	Room    RoomInfo
	Owner   uint32
	Total   uint16
	Members []RoomMember
}

// AppendRoomState appends the encoding of m; at most MaxRoomMembers
// members are written.
func AppendRoomState(dst []byte, m *RoomStateMsg) []byte {
	w := wire.AppendWriter(dst)
	appendRoomInfo(&w, &m.Room)
	members := m.Members[:min(len(m.Members), MaxRoomMembers)]
	w.U32(m.Owner)
	w.U16(m.Total)
	w.U16(uint16(len(members)))
	for _, mm := range members {
		w.U32(mm.Client)
		w.Str(mm.Name)
	}
	return w.Bytes()
}

// ParseRoomState parses a RoomState.
func ParseRoomState(p []byte) (RoomStateMsg, error) {
	var m RoomStateMsg
	err := scanRoomState(p, &m)
	return m, err
}

func scanRoomState(p []byte, m *RoomStateMsg) error {
	r := wire.NewReader(p)
	var v roomInfoView
	scanRoomInfo(&r, &v)
	owner, total := r.U32(), r.U16()
	n := int(r.U16())
	if !r.HasError() && (n > MaxRoomMembers || n > int(total) || n*minMemberLen > r.Remaining()) {
		r.Fail(errOutOfRange)
	}
	if m != nil && !r.HasError() {
		m.Room, m.Owner, m.Total = v.info(), owner, total
		if n > 0 {
			m.Members = make([]RoomMember, 0, n)
		}
	}
	for i := 0; i < n && !r.HasError(); i++ {
		c := r.U32()
		name := r.Name(wire.MaxNameLen)
		if m != nil && !r.HasError() {
			m.Members = append(m.Members, RoomMember{Client: c, Name: string(name)})
		}
	}
	if err := wire.Finish(&r); err != nil {
		if m != nil {
			*m = RoomStateMsg{}
		}
		return err
	}
	return nil
}

// RoomEvent (type 44) is something that happened in the client's room.
type RoomEvent struct {
	Kind   RoomEventKind
	Room   uint32
	Client uint32
	Value  uint32 // RoomLeft: LeaveReason; RoomPauseChanged: 0/1; RoomMatchEnded: the winner; RoomClosed: CloseReason; RoomPasswordFailures: the count (≥ 1)
	Name   string // empty, or a name (≤ 32 bytes)
}

// AppendRoomEvent appends the encoding of m.
func AppendRoomEvent(dst []byte, m *RoomEvent) []byte {
	w := wire.AppendWriter(dst)
	w.U8(uint8(m.Kind))
	w.U32(m.Room)
	w.U32(m.Client)
	w.U32(m.Value)
	w.Str(m.Name)
	return w.Bytes()
}

// ParseRoomEvent parses a RoomEvent.
func ParseRoomEvent(p []byte) (RoomEvent, error) {
	m, name, err := scanRoomEvent(p)
	if err != nil {
		return RoomEvent{}, err
	}
	m.Name = string(name)
	return m, nil
}

func scanRoomEvent(p []byte) (RoomEvent, []byte, error) {
	r := wire.NewReader(p)
	m := RoomEvent{Kind: RoomEventKind(r.U8()), Room: r.U32(), Client: r.U32(), Value: r.U32()}
	name := r.StrBytes()
	if !r.HasError() {
		switch {
		case !m.Kind.Valid():
			r.Fail(errUnknownEnum)
		case m.Room == 0:
			r.Fail(errOutOfRange)
		case m.Kind == RoomLeft && m.Value > uint32(LeaveClosed):
			r.Fail(errUnknownEnum)
		case m.Kind == RoomPauseChanged && m.Value > 1:
			r.Fail(errOutOfRange)
		case m.Kind == RoomClosed && m.Value > uint32(CloseEmpty):
			r.Fail(errUnknownEnum)
		case m.Kind == RoomPasswordFailures && m.Value == 0:
			r.Fail(errOutOfRange)
		case len(name) > 0 && !wire.ValidName(name, wire.MaxNameLen):
			r.Fail(errBadName)
		}
	}
	return m, name, wire.Finish(&r)
}

// RoomUpdate (type 45) tells a client in the lobby that a room was created
// or changed (its players, state, name or openness) or closed.
type RoomUpdate struct {
	Kind RoomUpdateKind
	Room RoomInfo
}

// AppendRoomUpdate appends the encoding of m.
func AppendRoomUpdate(dst []byte, m *RoomUpdate) []byte {
	w := wire.AppendWriter(dst)
	w.U8(uint8(m.Kind))
	appendRoomInfo(&w, &m.Room)
	return w.Bytes()
}

// ParseRoomUpdate parses a RoomUpdate.
func ParseRoomUpdate(p []byte) (RoomUpdate, error) {
	var m RoomUpdate
	err := scanRoomUpdate(p, &m)
	return m, err
}

func scanRoomUpdate(p []byte, m *RoomUpdate) error {
	r := wire.NewReader(p)
	kind := RoomUpdateKind(r.U8())
	if !r.HasError() && kind > RoomGone {
		r.Fail(errUnknownEnum)
	}
	var v roomInfoView
	scanRoomInfo(&r, &v)
	if err := wire.Finish(&r); err != nil {
		return err
	}
	if m != nil {
		m.Kind, m.Room = kind, v.info()
	}
	return nil
}

// emptyPayload is the check of the requests without fields.
func emptyPayload(_ wire.Direction, p []byte) error {
	if len(p) != 0 {
		return errOutOfRange
	}
	return nil
}

// roomRules are the receive rules of the room types.
var roomRules = [...]rule{
	{wire.Schema{ID: TypeRoomListRequest, Name: "RoomListRequest", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 2, MaxLen: 2, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseRoomListRequest(p); return err }},
	{wire.Schema{ID: TypeRoomList, Name: "RoomList", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 6, MaxLen: 6 + RoomListPage*maxRoomInfoLen + MaxRoomModes*(2+MaxRoomModeLen), StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { return scanRoomList(p, nil) }},
	{wire.Schema{ID: TypeRoomCreate, Name: "RoomCreate", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 9, MaxLen: 2 + MaxRoomNameLen + 2 + MaxRoomModeLen + 3 + RoomSaltLen + 4 + RoomKeyLen, StringFieldOffset: 0, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error {
			var m RoomCreate
			_, _, err := scanRoomCreate(p, &m)
			return err
		}},
	{wire.Schema{ID: TypeRoomJoin, Name: "RoomJoin", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 5, MaxLen: 5 + RoomKeyLen, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanRoomJoin(p); return err }},
	{wire.Schema{ID: TypeRoomLeave, Name: "RoomLeave", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 0, MaxLen: 0, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		emptyPayload},
	{wire.Schema{ID: TypeRoomRename, Name: "RoomRename", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 3, MaxLen: 2 + MaxRoomNameLen, StringFieldOffset: 0, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := scanRoomRename(p); return err }},
	{wire.Schema{ID: TypeRoomStart, Name: "RoomStart", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 0, MaxLen: 0, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		emptyPayload},
	{wire.Schema{ID: TypeRoomPause, Name: "RoomPause", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 0, MaxLen: 0, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		emptyPayload},
	{wire.Schema{ID: TypeRoomKick, Name: "RoomKick", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 4, MaxLen: 4, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseRoomKick(p); return err }},
	{wire.Schema{ID: TypeRoomChat, Name: "RoomChat", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 4, MaxLen: 1 + 4 + 4 + 2 + wire.MaxNameLen + 2 + MaxChatTextLen, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(travel wire.Direction, p []byte) error {
			_, _, _, err := scanRoomChat(p, travel == wire.ClientToServer)
			return err
		}},
	{wire.Schema{ID: TypeRoomResult, Name: "RoomResult", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 9, MaxLen: 9 + MaxRoomDetailLen, StringFieldOffset: 7, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanRoomResult(p); return err }},
	{wire.Schema{ID: TypeRoomState, Name: "RoomState", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: minRoomInfoLen + 8, MaxLen: maxRoomInfoLen + 8 + MaxRoomMembers*maxMemberLen, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { return scanRoomState(p, nil) }},
	{wire.Schema{ID: TypeRoomEvent, Name: "RoomEvent", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 15, MaxLen: 15 + wire.MaxNameLen, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanRoomEvent(p); return err }},
	{wire.Schema{ID: TypeRoomUpdate, Name: "RoomUpdate", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 1 + minRoomInfoLen, MaxLen: 1 + maxRoomInfoLen, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { return scanRoomUpdate(p, nil) }},
}

func init() {
	for i := range roomRules {
		wire.RegisterTypeName(roomRules[i].schema.ID, roomRules[i].schema.Name)
	}
}

// registerRooms defines the room types in reg.
func registerRooms(reg *wire.Registry) error {
	for i := range roomRules {
		if err := reg.DefineBuiltin(roomRules[i].schema, roomRules[i].check); err != nil {
			return err
		}
	}
	return nil
}

// RoomSchemas returns the room messages' schemas in type order.
func RoomSchemas() []wire.Schema {
	out := make([]wire.Schema, len(roomRules))
	for i := range roomRules {
		out[i] = roomRules[i].schema
	}
	return out
}
