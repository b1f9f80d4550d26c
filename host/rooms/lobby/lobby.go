// Package lobby owns the rooms of a DedicatedServer as bookkeeping and
// rules: which rooms exist, who is in which, who owns each, their names,
// modes, capacities, passwords and states, and what every room request may
// do (docs/protocol.md §13). Each room has an Entry here; a refused request
// is an *Error carrying the wire's RoomCode.
//
// It is pure logic, like host/match: no clock, no I/O, no goroutine. The
// game thread calls it and its parent package, host/rooms, carries out the
// effects (the room's match, world and modules, the messages to clients);
// a Lobby is not safe for concurrent use.
package lobby

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// Pause policies: who may toggle a room's pause (an admin always may).
const (
	PauseMembers = "members"
	PauseOwner   = "owner"
)

// Config bounds a Lobby. Zero values mean the defaults.
type Config struct {
	// Max is how many rooms may exist at once (0 = 64).
	Max int
	// MaxCapacity is the most players a room may hold (0 = 64; at most
	// gamemsg.MaxRoomMembers); DefaultCapacity is a room's when the
	// request asks for 0 (0 = 8, at most MaxCapacity).
	MaxCapacity, DefaultCapacity int
	// Modes are the modes rooms may be created with, in order.
	Modes []string
	// Pause is PauseMembers (the default) or PauseOwner.
	Pause string
	// CreatedPerClient bounds the rooms one client may have created that
	// are still open (0 = 2): a client cannot fill the server with empty
	// rooms waiting out their grace time.
	CreatedPerClient int
	// Passwords bound the wrong room passwords checked (guard.go).
	Passwords PasswordLimits
}

// Entry is one room's entry in the lobby: the facts and members the
// lobby's rules govern (the room that runs, its match and world, is
// host/rooms' Room, which holds its Entry). Its fields are the Lobby's;
// read them, change them through the Lobby.
type Entry struct {
	ID       module.RoomID
	Name     string
	Mode     string
	Capacity int
	Owner    uint32 // 0: none (the server's own room)
	Creator  uint32
	Status   gamemsg.RoomStatus
	// Members in join order; the first is the next owner.
	Members  []uint32
	Verifier *roomauth.Verifier // nil: no password
	// Fixed marks the server's own room (a server that runs one match):
	// every admitted client is in it, nobody owns, leaves or closes it.
	Fixed bool
	// EmptySince is when the last player left (zero while someone is in).
	EmptySince time.Time
}

// Full reports whether the room holds its capacity.
func (r *Entry) Full() bool { return len(r.Members) >= r.Capacity }

// Has reports whether client is in the room.
func (r *Entry) Has(client uint32) bool { return slices.Contains(r.Members, client) }

// Lobby is the set of rooms.
type Lobby struct {
	cfg   Config
	rooms map[module.RoomID]*Entry
	where map[uint32]*Entry // client → room
	// created counts the open rooms each client created.
	created map[uint32]int
	next    module.RoomID
	guard   *guard
}

// Error is a refused request: its wire code and a sentence for a person.
type Error struct {
	Code   gamemsg.RoomCode
	Detail string
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Detail }

func refuse(code gamemsg.RoomCode, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// New returns an empty Lobby.
func New(cfg Config) *Lobby {
	if cfg.Max <= 0 {
		cfg.Max = 64
	}
	if cfg.MaxCapacity <= 0 {
		cfg.MaxCapacity = 64
	}
	cfg.MaxCapacity = min(cfg.MaxCapacity, gamemsg.MaxRoomMembers)
	if cfg.DefaultCapacity <= 0 {
		cfg.DefaultCapacity = 8
	}
	cfg.DefaultCapacity = min(cfg.DefaultCapacity, cfg.MaxCapacity)
	if cfg.Pause == "" {
		cfg.Pause = PauseMembers
	}
	if cfg.CreatedPerClient <= 0 {
		cfg.CreatedPerClient = 2
	}
	return &Lobby{cfg: cfg, rooms: make(map[module.RoomID]*Entry), where: make(map[uint32]*Entry), created: make(map[uint32]int), next: 1,
		guard: newGuard(cfg.Passwords)}
}

// Modes lists the modes rooms may be created with.
func (l *Lobby) Modes() []string { return l.cfg.Modes }

// SetModes replaces the modes rooms may be created with (the server names
// them once it knows what their modules declare).
func (l *Lobby) SetModes(modes []string) { l.cfg.Modes = modes }

// Max is how many rooms may exist at once.
func (l *Lobby) Max() int { return l.cfg.Max }

// Get returns a room by id.
func (l *Lobby) Get(id module.RoomID) *Entry { return l.rooms[id] }

// Of returns the client's room (nil: the lobby).
func (l *Lobby) Of(client uint32) *Entry { return l.where[client] }

// Len is the number of rooms.
func (l *Lobby) Len() int { return len(l.rooms) }

// List returns the rooms in id order.
func (l *Lobby) List() []*Entry {
	out := make([]*Entry, 0, len(l.rooms))
	for _, r := range l.rooms {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Entry) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// OpenFixed opens the server's own room (one match, everybody in it): no
// owner, already playing, never closed.
func (l *Lobby) OpenFixed(name, mode string, capacity int) *Entry {
	r := &Entry{ID: l.next, Name: name, Mode: mode, Capacity: capacity, Status: gamemsg.RoomPlaying, Fixed: true}
	l.next++
	l.rooms[r.ID] = r
	return r
}

// Create checks a RoomCreate from client and, if it may, opens the room
// with client in it as owner, Waiting.
func (l *Lobby) Create(client uint32, req *gamemsg.RoomCreate) (*Entry, error) {
	if r := l.where[client]; r != nil {
		return nil, refuse(gamemsg.RoomAlreadyInRoom, "you are in room %d; leave it first", r.ID)
	}
	if !slices.Contains(l.cfg.Modes, req.Mode) {
		return nil, refuse(gamemsg.RoomUnknownMode, "no mode %q here; this server offers %v", req.Mode, l.cfg.Modes)
	}
	if len(l.rooms) >= l.cfg.Max {
		return nil, refuse(gamemsg.RoomTooManyRooms, "the server holds its %d rooms; join one or try later", l.cfg.Max)
	}
	if n := l.created[client]; n >= l.cfg.CreatedPerClient {
		return nil, refuse(gamemsg.RoomTooManyRooms, "you created %d rooms that are still open; join one or wait until they close", n)
	}
	capacity := int(req.Capacity)
	if capacity == 0 {
		capacity = l.cfg.DefaultCapacity
	}
	if capacity > l.cfg.MaxCapacity {
		return nil, refuse(gamemsg.RoomBadRequest, "capacity %d is over this server's %d", capacity, l.cfg.MaxCapacity)
	}
	var v *roomauth.Verifier
	if req.Password {
		if err := roomauth.CheckIterations(req.Iterations); err != nil {
			return nil, refuse(gamemsg.RoomBadRequest, "password iterations %d outside %d..%d", req.Iterations, roomauth.MinIterations, roomauth.MaxIterations)
		}
		v = &roomauth.Verifier{Salt: req.Salt, Iterations: req.Iterations, StoredKey: req.StoredKey}
	}
	r := &Entry{ID: l.next, Name: req.Name, Mode: req.Mode, Capacity: capacity, Owner: client, Creator: client,
		Status: gamemsg.RoomWaiting, Verifier: v, Members: []uint32{client}}
	l.next++
	l.rooms[r.ID] = r
	l.where[client] = r
	l.created[client]++
	return r, nil
}

// Joiner is who sends a RoomJoin: the client and its name, where it sends
// from, and its session's channel binding (what a proof is bound to).
type Joiner struct {
	Client  uint32
	Name    string
	Source  Source
	Binding [32]byte
}

// Join checks a RoomJoin from j at now (a proof against the room's
// password, under the guard's back-offs) and puts j in the room. out says
// what became of a proof, for the host to count and act on (a kick).
func (l *Lobby) Join(j Joiner, room module.RoomID, proof []byte, now time.Time) (r *Entry, out Outcome, err error) {
	if r := l.where[j.Client]; r != nil {
		return nil, out, refuse(gamemsg.RoomAlreadyInRoom, "you are in room %d; leave it first", r.ID)
	}
	if r = l.rooms[room]; r == nil {
		return nil, out, refuse(gamemsg.RoomNoSuchRoom, "no room %d; list the rooms", room)
	}
	if r.Full() {
		return nil, out, refuse(gamemsg.RoomFull, "room %d holds %d of %d", room, len(r.Members), r.Capacity)
	}
	if r.Verifier != nil {
		var ok bool
		if ok, out, err = l.guard.check(r, j, proof, now); !ok {
			return nil, out, err
		}
	}
	l.enter(j.Client, r)
	return r, out, nil
}

// Enter puts an admitted client in the server's own room (a server that
// runs one match).
func (l *Lobby) Enter(client uint32, r *Entry) { l.enter(client, r) }

func (l *Lobby) enter(client uint32, r *Entry) {
	r.Members = append(r.Members, client)
	r.EmptySince = time.Time{}
	l.where[client] = r
}

// Leave takes client out of its room (a RoomLeave). newOwner is the
// room's next owner when the owner left (0: unchanged, or nobody left).
func (l *Lobby) Leave(client uint32, now time.Time) (r *Entry, newOwner uint32, err error) {
	r = l.where[client]
	switch {
	case r == nil:
		return nil, 0, refuse(gamemsg.RoomNotInRoom, "you are in the lobby")
	case r.Fixed:
		return nil, 0, refuse(gamemsg.RoomNotAllowed, "this server runs one match; there is no lobby to go back to")
	}
	return r, l.exit(client, r, now), nil
}

// Depart takes a client whose session ended out of its room, whatever
// room it is (the server's own too), and forgets the rooms it created.
// newOwner as for Leave.
func (l *Lobby) Depart(client uint32, now time.Time) (r *Entry, newOwner uint32) {
	delete(l.created, client)
	l.guard.forgetClient(client)
	r = l.where[client]
	if r == nil {
		return nil, 0
	}
	return r, l.exit(client, r, now)
}

// exit removes client from r and hands ownership on.
func (l *Lobby) exit(client uint32, r *Entry, now time.Time) (newOwner uint32) {
	r.Members = slices.DeleteFunc(r.Members, func(c uint32) bool { return c == client })
	delete(l.where, client)
	if len(r.Members) == 0 {
		r.EmptySince = now
		if r.Owner == client {
			r.Owner = 0
		}
		return 0
	}
	if r.Owner == client {
		r.Owner = r.Members[0] // the longest present
		return r.Owner
	}
	return 0
}

// inRoom returns client's room, refusing the lobby.
func (l *Lobby) inRoom(client uint32) (*Entry, error) {
	r := l.where[client]
	if r == nil {
		return nil, refuse(gamemsg.RoomNotInRoom, "you are in the lobby; join a room first")
	}
	return r, nil
}

// owned returns client's room if client owns it.
func (l *Lobby) owned(client uint32, what string) (*Entry, error) {
	r, err := l.inRoom(client)
	if err != nil {
		return nil, err
	}
	if r.Owner != client {
		if r.Fixed {
			return nil, refuse(gamemsg.RoomNotOwner, "the server's own room has no owner; only its admin may %s it", what)
		}
		return nil, refuse(gamemsg.RoomNotOwner, "only the owner (client %d) may %s room %d", r.Owner, what, r.ID)
	}
	return r, nil
}

// Rename renames client's room (owner only).
func (l *Lobby) Rename(client uint32, name string) (*Entry, error) {
	r, err := l.owned(client, "rename")
	if err != nil {
		return nil, err
	}
	r.Name = name
	return r, nil
}

// Start starts the match of client's room (owner only, Waiting).
func (l *Lobby) Start(client uint32) (*Entry, error) {
	r, err := l.inRoom(client)
	if err != nil {
		return nil, err
	}
	if r.Fixed {
		return nil, refuse(gamemsg.RoomAlreadyStarted, "the server's match always runs")
	}
	if r, err = l.owned(client, "start"); err != nil {
		return nil, err
	}
	return r, l.start(r)
}

// StartByAdmin starts a room's match for an admin.
func (l *Lobby) StartByAdmin(r *Entry) error { return l.start(r) }

func (l *Lobby) start(r *Entry) error {
	switch r.Status {
	case gamemsg.RoomWaiting:
		r.Status = gamemsg.RoomPlaying
		return nil
	case gamemsg.RoomEnded:
		return refuse(gamemsg.RoomNotAllowed, "the match just ended; start again once the next map is loaded")
	}
	return refuse(gamemsg.RoomAlreadyStarted, "room %d plays already", r.ID)
}

// TogglePause pauses or resumes client's room (any member, or the owner
// only, as configured; never the server's own room, which its admin
// pauses). paused is the new state.
func (l *Lobby) TogglePause(client uint32) (r *Entry, paused bool, err error) {
	if r, err = l.inRoom(client); err != nil {
		return nil, false, err
	}
	if r.Fixed {
		return nil, false, refuse(gamemsg.RoomNotAllowed, "the server's match is paused by its admin only")
	}
	if l.cfg.Pause == PauseOwner && r.Owner != client {
		return nil, false, refuse(gamemsg.RoomNotOwner, "only the owner (client %d) may pause room %d", r.Owner, r.ID)
	}
	paused, err = l.togglePause(r)
	return r, paused, err
}

// TogglePauseByAdmin pauses or resumes a room for an admin.
func (l *Lobby) TogglePauseByAdmin(r *Entry) (bool, error) { return l.togglePause(r) }

func (l *Lobby) togglePause(r *Entry) (bool, error) {
	switch r.Status {
	case gamemsg.RoomPlaying:
		r.Status = gamemsg.RoomPaused
		return true, nil
	case gamemsg.RoomPaused:
		r.Status = gamemsg.RoomPlaying
		return false, nil
	case gamemsg.RoomWaiting:
		return false, refuse(gamemsg.RoomNotStarted, "room %d has not started", r.ID)
	}
	return false, refuse(gamemsg.RoomNotAllowed, "the match of room %d has ended", r.ID)
}

// Kick removes target from by's room (by owns it). newOwner as for Leave.
func (l *Lobby) Kick(by, target uint32, now time.Time) (r *Entry, newOwner uint32, err error) {
	if r, err = l.owned(by, "kick players from"); err != nil {
		return nil, 0, err
	}
	if target == by {
		return nil, 0, refuse(gamemsg.RoomNotAllowed, "to leave your room, leave it")
	}
	if !r.Has(target) {
		return nil, 0, refuse(gamemsg.RoomNoSuchPlayer, "client %d is not in room %d", target, r.ID)
	}
	return r, l.exit(target, r, now), nil
}

// KickByAdmin removes target from room r for an admin.
func (l *Lobby) KickByAdmin(r *Entry, target uint32, now time.Time) (newOwner uint32, err error) {
	if r.Fixed {
		return 0, refuse(gamemsg.RoomNotAllowed, "nobody leaves the server's own room but by disconnecting; use kick")
	}
	if !r.Has(target) {
		return 0, refuse(gamemsg.RoomNoSuchPlayer, "client %d is not in room %d", target, r.ID)
	}
	return l.exit(target, r, now), nil
}

// MatchEnded marks a room Ended.
func (l *Lobby) MatchEnded(r *Entry) {
	if r.Status == gamemsg.RoomPlaying || r.Status == gamemsg.RoomPaused {
		r.Status = gamemsg.RoomEnded
	}
}

// NextMap marks an Ended room Waiting again (the server's own room plays
// on) and reports whether it changed.
func (l *Lobby) NextMap(r *Entry) bool {
	if r.Status != gamemsg.RoomEnded {
		return false
	}
	if r.Fixed {
		r.Status = gamemsg.RoomPlaying
	} else {
		r.Status = gamemsg.RoomWaiting
	}
	return true
}

// Close removes a room and returns the players who were in it, now in the
// lobby. The server's own room is never closed.
func (l *Lobby) Close(id module.RoomID) (members []uint32, err error) {
	r := l.rooms[id]
	switch {
	case r == nil:
		return nil, refuse(gamemsg.RoomNoSuchRoom, "no room %d", id)
	case r.Fixed:
		return nil, refuse(gamemsg.RoomNotAllowed, "the server's own room closes with the server")
	}
	members = r.Members
	for _, c := range members {
		delete(l.where, c)
	}
	r.Members = nil
	delete(l.rooms, id)
	l.guard.forgetRoom(id)
	if n, ok := l.created[r.Creator]; ok {
		if n <= 1 {
			delete(l.created, r.Creator)
		} else {
			l.created[r.Creator] = n - 1
		}
	}
	return members, nil
}

// Expired lists the empty rooms whose last player left at least grace
// before now.
func (l *Lobby) Expired(now time.Time, grace time.Duration) []*Entry {
	var out []*Entry
	for _, r := range l.rooms {
		if !r.Fixed && len(r.Members) == 0 && !r.EmptySince.IsZero() && now.Sub(r.EmptySince) >= grace {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *Entry) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Info is the room as RoomList, RoomState and RoomUpdate carry it; the host
// fills in the map.
func (r *Entry) Info(mapName string) gamemsg.RoomInfo {
	ri := gamemsg.RoomInfo{ID: uint32(r.ID), Name: r.Name, Mode: r.Mode, Map: mapName,
		Players: uint16(min(len(r.Members), 0xFFFF)), Capacity: uint16(min(r.Capacity, 0xFFFF)), State: r.Status,
		Open: !r.Full()}
	if r.Verifier != nil {
		ri.Password, ri.Salt, ri.Iterations = true, r.Verifier.Salt, r.Verifier.Iterations
	}
	return ri
}
