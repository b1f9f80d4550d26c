package supervisor

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Rooms. A module instance serves one scope — a room, or the whole server
// (scope 0) — or, for a module whose manifest sets Rooms, every room of its
// mode at once (module/room.go). A scope has members (the clients who see
// it), a world (the room's entities; none for the whole server on a server
// with a lobby) and a route table that the network goroutines read to hand
// a client's module message to the instance of the client's room.
//
// Routing: a message of a module type from client C goes to the instance
// that owns the type in C's room, else to the one in a scope that holds
// every admitted client (the whole server, or the one room of a server
// that runs one match). Nothing else ever sees it: a module in room A
// never receives what a client of room B sends. A message no scope of the
// client routes is dropped and counted (Unrouted).

// RoomSpec is what the manager is given of a room to run modules in: its
// id, its world and the hooks into the host's room (its facts, its
// scoreboard, its area). The host owns the room itself (host/rooms: its
// players, match and world); the manager runs the room's modules.
type RoomSpec struct {
	ID module.RoomID
	// World is the room's entity world; nil gives its modules no entities.
	World *replicate.Replicator
	// Info returns the room's facts as of this tick (its Map, MatchState,
	// Players and Room).
	Info func() module.ServerInfo
	// AddScore adds to a client's score in the room's match.
	AddScore func(client uint32, score, kills, deaths int32)
	// SetArea is Host.SetArea of the room's modules: the area the room's
	// world announces (a valid name or "").
	SetArea func(name string)
	// Everyone: the room holds every admitted client (a server that runs
	// one match). Its members follow admissions; JoinRoom and LeaveRoom are
	// not used for it.
	Everyone bool
}

// scope is one room, or the whole server (ID 0), with the instances that
// serve it. Game thread, but for routes.
type scope struct {
	RoomSpec
	m       *Manager
	members map[uint32]struct{} // not used when Everyone
	atts    []*attachment       // the instances serving it, in start order
	routes  atomic.Pointer[routeTable]
}

// routeTable is what the network goroutines read for a scope: immutable
// once published, and holding nothing the game thread changes.
type routeTable struct {
	types  map[wire.MessageType]*instance
	inputs []*instance
}

// attachment is one instance serving one scope.
type attachment struct {
	inst  *instance
	sc    *scope
	block replicate.Block // the instance's entity ids in the scope's world
	host  *moduleHost     // the Host scoped to this room
}

// Errors of rooms.
var (
	ErrNoRoomScope = errors.New("no such room")
	ErrRoomExists  = errors.New("room already open")
)

func (m *Manager) newScope(r RoomSpec) *scope {
	sc := &scope{RoomSpec: r, m: m, members: make(map[uint32]struct{})}
	if sc.Info == nil {
		sc.Info = m.cfg.Server
	}
	if sc.AddScore == nil {
		sc.AddScore = func(uint32, int32, int32, int32) {}
	}
	if sc.SetArea == nil {
		sc.SetArea = func(string) {}
	}
	sc.routes.Store(&routeTable{})
	return sc
}

// has reports whether client is a member.
func (sc *scope) has(client uint32) bool {
	if sc.Everyone {
		_, ok := sc.m.clients[client]
		return ok
	}
	_, ok := sc.members[client]
	return ok
}

// memberIDs lists the members in id order.
func (sc *scope) memberIDs() []uint32 {
	var ids []uint32
	if sc.Everyone {
		ids = make([]uint32, 0, len(sc.m.clients))
		for id := range sc.m.clients {
			ids = append(ids, id)
		}
	} else {
		ids = make([]uint32, 0, len(sc.members))
		for id := range sc.members {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// find returns the attachment of the module named name in the scope.
func (sc *scope) find(name string) *attachment {
	for _, a := range sc.atts {
		if a.inst.manifest.Name == name {
			return a
		}
	}
	return nil
}

// refresh publishes the scope's route table from its running instances.
func (sc *scope) refresh() {
	rt := &routeTable{types: make(map[wire.MessageType]*instance)}
	for _, a := range sc.atts {
		inst := a.inst
		if inst.state != StateRunning || inst.mod == nil {
			continue
		}
		for _, s := range inst.manifest.Messages {
			if s.Direction&wire.ClientToServer != 0 {
				rt.types[s.ID] = inst
			}
		}
		if inst.manifest.Inputs {
			rt.inputs = append(rt.inputs, inst)
		}
	}
	sc.routes.Store(rt)
}

// refreshRoutes republishes every scope's routes (an instance started,
// stopped, crashed or changed its manifest).
func (m *Manager) refreshRoutes() {
	m.server.refresh()
	for _, sc := range m.rooms {
		sc.refresh()
	}
	wide := []*scope{m.server}
	for _, sc := range m.rooms {
		if sc.Everyone {
			wide = append(wide, sc)
		}
	}
	m.wide.Store(&wide)
}

// scopeOf returns the scope of id (0: the whole server).
func (m *Manager) scopeOf(id module.RoomID) *scope {
	if id == 0 {
		return m.server
	}
	return m.rooms[id]
}

// NoMatch returns the name of the first module of the room whose manifest
// says it is not a match (Manifest.NoMatch), or "": the host then keeps no
// match state for the room. A module that crashed or is restarting keeps
// its manifest, so the room does not flip to a match and back.
func (m *Manager) NoMatch(room module.RoomID) string {
	sc := m.scopeOf(room)
	if sc == nil {
		return ""
	}
	for _, a := range sc.atts {
		if a.inst.manifest.NoMatch {
			return a.inst.manifest.Name
		}
	}
	return ""
}

// OpenRoom makes a room known; StartInRoom then runs modules in it.
func (m *Manager) OpenRoom(r RoomSpec) error {
	if r.ID == 0 {
		return fmt.Errorf("%w: room 0 is the whole server", ErrRoomExists)
	}
	if _, ok := m.rooms[r.ID]; ok {
		return fmt.Errorf("%w: %d", ErrRoomExists, r.ID)
	}
	m.rooms[r.ID] = m.newScope(r)
	m.refreshRoutes()
	return nil
}

// SetDefaultRoom makes Load, Unload and the match events without a room
// act in room id (a server that runs one match: its one room); 0 is the
// whole server, the default.
func (m *Manager) SetDefaultRoom(id module.RoomID) error {
	sc := m.scopeOf(id)
	if sc == nil {
		return fmt.Errorf("%w %d", ErrNoRoomScope, id)
	}
	m.def = sc
	return nil
}

// StartInRoom runs the module of spec in a room. A module that serves many
// rooms (Manifest.Rooms) and runs already takes the room on; otherwise a
// fresh instance starts for the room. It returns the module's name.
func (m *Manager) StartInRoom(room module.RoomID, spec Spec) (string, error) {
	sc := m.rooms[room]
	if sc == nil {
		return "", fmt.Errorf("%w %d", ErrNoRoomScope, room)
	}
	for _, inst := range m.mods {
		if inst.multi && inst.spec.Source == spec.Source && inst.state != StateFailed {
			if sc.find(inst.manifest.Name) != nil {
				return "", fmt.Errorf("module %s already runs in room %d", inst.manifest.Name, room)
			}
			return inst.manifest.Name, m.attach(inst, sc)
		}
	}
	return m.load(sc, spec)
}

// attach adds a room to an instance that serves many.
func (m *Manager) attach(inst *instance, sc *scope) error {
	a, err := inst.newAttachment(sc)
	if err != nil {
		return err
	}
	if inst.mod != nil {
		if err := a.setTypes(inst.manifest); err != nil {
			a.release()
			return err
		}
	}
	inst.rooms = append(inst.rooms, a)
	sc.atts = append(sc.atts, a)
	if inst.state == StateRunning && inst.mod != nil {
		inst.greet(a)
	}
	sc.refresh()
	inst.record(fmt.Sprintf("room %d opened", sc.ID))
	return nil
}

// CloseRoom stops the room's modules: an instance of the room alone is
// unloaded; one that serves many rooms is told EventRoomClose and keeps
// the others. The room's members must have left it (LeaveRoom) first.
func (m *Manager) CloseRoom(room module.RoomID) error {
	sc := m.rooms[room]
	if sc == nil {
		return fmt.Errorf("%w %d", ErrNoRoomScope, room)
	}
	for _, a := range slices.Clone(sc.atts) {
		inst := a.inst
		if inst.multi && len(inst.rooms) > 1 {
			m.detach(a)
			continue
		}
		m.remove(inst)
	}
	for id := range sc.members {
		m.where.Delete(id)
	}
	delete(m.rooms, room)
	if m.def == sc {
		m.def = m.server
	}
	m.refreshRoutes()
	return nil
}

// detach takes one room from an instance that serves many.
func (m *Manager) detach(a *attachment) {
	inst, sc := a.inst, a.sc
	inst.rooms = slices.DeleteFunc(inst.rooms, func(x *attachment) bool { return x == a })
	sc.atts = slices.DeleteFunc(sc.atts, func(x *attachment) bool { return x == a })
	if inst.state == StateRunning && inst.mod != nil {
		inst.late = append(inst.late, module.Event{Kind: module.EventRoomClose, Room: sc.ID})
	}
	a.release()
	sc.refresh()
	inst.record(fmt.Sprintf("room %d closed", sc.ID))
}

// remove unloads an instance and forgets it.
func (m *Manager) remove(inst *instance) {
	rooms := inst.roomIDs()
	m.unload(inst, "")
	inst.abandonPreparation()
	inst.releaseAll()
	m.mods = slices.DeleteFunc(m.mods, func(i *instance) bool { return i == inst })
	m.refreshRoutes()
	inst.log.Info("module unloaded", "rooms", rooms)
}

// JoinRoom puts an admitted client in a room: its modules get EventAdmitted
// and its messages go to them from now on.
func (m *Manager) JoinRoom(client uint32, room module.RoomID) error {
	sc := m.rooms[room]
	if sc == nil {
		return fmt.Errorf("%w %d", ErrNoRoomScope, room)
	}
	if sc.Everyone {
		return nil
	}
	ci, ok := m.clients[client]
	if !ok {
		return fmt.Errorf("client %d: %w", client, module.ErrNoClient)
	}
	if prev, ok := m.where.Load(client); ok {
		m.LeaveRoom(client, prev.(*scope).ID, gamemsg.LeaveAsked, wire.DisconnectUnknown)
	}
	sc.members[client] = struct{}{}
	m.where.Store(client, sc)
	for _, a := range sc.atts {
		if a.inst.state == StateRunning {
			a.inst.pending = append(a.inst.pending, module.Event{Kind: module.EventAdmitted, Room: sc.ID, Client: client, Name: ci.Name})
		}
	}
	return nil
}

// LeaveRoom takes a client out of its room: the room's modules get
// EventLeft (with reason, DisconnectUnknown when the client stays
// connected, and leave) after the tick's messages.
func (m *Manager) LeaveRoom(client uint32, room module.RoomID, leave gamemsg.LeaveReason, reason wire.DisconnectReason) {
	sc := m.rooms[room]
	if sc == nil || sc.Everyone {
		return
	}
	if _, ok := sc.members[client]; !ok {
		return
	}
	delete(sc.members, client)
	if v, ok := m.where.Load(client); ok && v.(*scope) == sc {
		m.where.Delete(client)
	}
	for _, a := range sc.atts {
		inst := a.inst
		if inst.state == StateRunning {
			inst.late = append(inst.late, module.Event{Kind: module.EventLeft, Room: sc.ID, Client: client, Reason: reason, Leave: leave})
		}
	}
}

// Announce queues a room event (a match event, a pause) for every running
// instance of the room, after the tick's messages.
func (m *Manager) Announce(room module.RoomID, ev module.Event) {
	sc := m.scopeOf(room)
	if sc == nil {
		return
	}
	ev.Room = sc.ID
	for _, a := range sc.atts {
		if a.inst.state == StateRunning {
			a.inst.late = append(a.inst.late, ev)
		}
	}
}

// routeMessage runs on a network goroutine for every validated message of
// a module type: it hands it to the instance of the client's room that
// owns the type.
func (m *Manager) routeMessage(client uint32, h *wire.Header, payload []byte) {
	if v, ok := m.where.Load(client); ok {
		sc := v.(*scope)
		if inst := sc.routes.Load().types[h.Type]; inst != nil {
			inst.receive(sc.ID, client, h, payload)
			return
		}
	}
	for _, sc := range *m.wide.Load() {
		if inst := sc.routes.Load().types[h.Type]; inst != nil {
			inst.receive(sc.ID, client, h, payload)
			return
		}
	}
	m.unrouted.Add(1)
}

// inputSubscribers lists the instances a client's ClientInput goes to.
func (m *Manager) inputSubscribers(client uint32, dst []inputTarget) []inputTarget {
	if v, ok := m.where.Load(client); ok {
		sc := v.(*scope)
		for _, inst := range sc.routes.Load().inputs {
			dst = append(dst, inputTarget{inst, sc.ID})
		}
	}
	for _, sc := range *m.wide.Load() {
		for _, inst := range sc.routes.Load().inputs {
			dst = append(dst, inputTarget{inst, sc.ID})
		}
	}
	return dst
}

type inputTarget struct {
	inst *instance
	room module.RoomID
}

// Unrouted counts the module messages dropped because no module of the
// sender's room (or of the whole server) owns their type; safe from any
// goroutine.
func (m *Manager) Unrouted() uint64 { return m.unrouted.Load() }

// Rooms lists the open rooms' ids in order.
func (m *Manager) Rooms() []module.RoomID {
	ids := make([]module.RoomID, 0, len(m.rooms))
	for id := range m.rooms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// RoomModules lists the modules serving a room, with their states.
func (m *Manager) RoomModules(room module.RoomID) []Status {
	sc := m.scopeOf(room)
	if sc == nil {
		return nil
	}
	out := make([]Status, 0, len(sc.atts))
	for _, a := range sc.atts {
		out = append(out, a.inst.status())
	}
	return out
}

// newAttachment reserves the instance's entity ids in sc's world.
func (inst *instance) newAttachment(sc *scope) (*attachment, error) {
	a := &attachment{inst: inst, sc: sc}
	a.host = &moduleHost{inst: inst, att: a}
	if sc.World != nil {
		b, err := sc.World.ReserveBlock()
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", inst.spec.Source, err)
		}
		a.block = b
	}
	return a, nil
}

// setTypes registers the manifest's entity types in the room's world
// (destroying the instance's entities there: a reload replaces them).
func (a *attachment) setTypes(man module.Manifest) error {
	if a.sc.World == nil {
		if len(man.EntityTypes) > 0 {
			return fmt.Errorf("module %s declares entity types: %w", man.Name, module.ErrNoWorld)
		}
		return nil
	}
	if err := a.sc.World.SetTypes(a.block, man.Name, man.EntityTypes); err != nil {
		return fmt.Errorf("module %s: %w", man.Name, err)
	}
	return nil
}

// clear destroys the instance's entities in the room (it detached).
func (a *attachment) clear() {
	if a.sc.World != nil && a.block != 0 {
		a.sc.World.Clear(a.block)
	}
}

// release gives the block back (its entities and types go with it).
func (a *attachment) release() {
	if a.sc.World != nil && a.block != 0 {
		a.sc.World.ReleaseBlock(a.block)
	}
	a.block = 0
}

// greet queues what a running instance learns of a room it starts serving:
// EventRoomOpen (for a module that serves many) and an EventAdmitted for
// every member.
func (inst *instance) greet(a *attachment) {
	sc := a.sc
	if inst.multi {
		inst.pending = append(inst.pending, module.Event{Kind: module.EventRoomOpen, Room: sc.ID,
			RoomInfo: sc.Info().Room, EntityIDs: a.block.Range()})
	}
	for _, id := range sc.memberIDs() {
		inst.pending = append(inst.pending, module.Event{Kind: module.EventAdmitted, Room: sc.ID, Client: id, Name: inst.m.clients[id].Name, Present: true})
	}
}
