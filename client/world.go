package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// World is a client's picture of the replicated entities (§9.3), kept from
// what the server sends: entity type schemas from GameStateSync, entities
// from EntitySpawn, their fields from EntityStateUpdate, their end from
// EntityDestroy. Feed it every message with Apply (the console does; a bot
// calls it from its own receive loop). It is safe for concurrent use.
//
// EntityStateUpdate is unreliable and may arrive late or twice: each field
// remembers the packet sequence of the value it holds and an older packet
// never overwrites a newer value. An update for an entity the client does
// not know (it arrived before the spawn, or after the destroy) is skipped
// and counted.
type World struct {
	mu       sync.Mutex
	types    map[uint16]*gamemsg.EntityTypeSchema
	entities map[uint32]*entityState
	maxSeq   uint32 // newest unreliable sequence applied
	haveSeq  bool
	self     uint32 // the client's id, from GameStateSync
	stats    WorldStats
}

// WorldStats counts what a World applied and refused.
type WorldStats struct {
	Spawns, Updates, Destroys uint64
	Unknown                   uint64 // updates (or destroys) of entities it does not know
	Stale                     uint64 // field values older than the one held, not applied
	Malformed                 uint64 // messages that did not parse against their schema
}

// Entity is a client's copy of one entity.
type Entity struct {
	ID       uint32
	Type     uint16
	TypeName string
	Owner    uint32
	// Visible is the fields_mask of its EntitySpawn: the fields this
	// client may see. Fields has one entry per field of the type; only the
	// Visible ones hold values.
	Visible uint64
	Fields  []gamemsg.FieldValue
	schema  *gamemsg.EntityTypeSchema
}

// entityState is an Entity and the sequence of each field's value.
type entityState struct {
	Entity
	seq [gamemsg.MaxFields]uint32
}

// NewWorld returns an empty World.
func NewWorld() *World {
	return &World{types: make(map[uint16]*gamemsg.EntityTypeSchema), entities: make(map[uint32]*entityState)}
}

// ErrUnknownEntityType is returned by Apply for an EntitySpawn of a type
// the GameStateSync did not describe.
var ErrUnknownEntityType = errors.New("client: EntitySpawn of a type GameStateSync did not describe")

// Change says what one message did to the World, so that a caller (the
// console, a bot) acts on it without parsing the message again.
type Change struct {
	Kind ChangeKind
	// Sync is the GameStateSync applied (Kind Synced).
	Sync gamemsg.GameStateSync
	// Entity is the entity spawned (Kind Spawned, a copy), or the one
	// destroyed (Kind Destroyed: its ID only).
	Entity Entity
}

// ChangeKind is what Apply did.
type ChangeKind uint8

// What Apply did with a message.
const (
	Unchanged ChangeKind = iota // not a world message, or one about an unknown entity
	Synced                      // a GameStateSync: the client's id and the entity types
	Spawned                     // an entity appeared
	Updated                     // an entity's fields changed
	Destroyed                   // an entity went
	Reset                       // the client entered or left a room's world: everything went
)

// Apply updates the world from one message; types other than
// GameStateSync, EntitySpawn, EntityStateUpdate and EntityDestroy, and the
// room messages that move the client to another room's world, are
// ignored. An error means the message was malformed for its schema and was
// not applied.
//
// Rooms (docs/protocol.md §13.4): every room has its own world, and a
// client that enters a room, leaves it, is kicked from it or sees it close
// starts from nothing: the RoomResult OK of its RoomCreate, RoomJoin or
// RoomLeave, or a RoomEvent that removes it, empties the world; the new
// room's GameStateSync and spawns follow.
func (w *World) Apply(m netstack.Message) error {
	_, err := w.ApplyChange(m)
	return err
}

// ApplyChange is Apply that also says what changed (see Change): the one
// parse of the message, shared with whoever reacts to it.
func (w *World) ApplyChange(m netstack.Message) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ch Change
	var err error
	switch m.Header.Type {
	case gamemsg.TypeGameStateSync:
		if ch.Sync, err = gamemsg.ParseGameStateSync(m.Payload); err == nil {
			w.self = ch.Sync.ClientID
			w.sync(ch.Sync.Types)
			ch.Kind = Synced
		}
	case gamemsg.TypeEntitySpawn:
		var e *entityState
		if e, err = w.spawn(m.Payload); err == nil {
			ch.Kind, ch.Entity = Spawned, e.copy()
		}
	case gamemsg.TypeEntityStateUpdate:
		var known bool
		if known, err = w.update(m.Header.Sequence, m.Payload); err == nil && known {
			ch.Kind = Updated
		}
	case gamemsg.TypeEntityDestroy:
		var d gamemsg.EntityDestroy
		if d, err = gamemsg.ParseEntityDestroy(m.Payload); err == nil {
			if _, ok := w.entities[d.EntityID]; ok {
				delete(w.entities, d.EntityID)
				w.stats.Destroys++
				ch.Kind, ch.Entity.ID = Destroyed, d.EntityID
			} else {
				w.stats.Unknown++
			}
		}
	case gamemsg.TypeRoomResult:
		var rr gamemsg.RoomResult
		if rr, err = gamemsg.ParseRoomResult(m.Payload); err == nil && rr.Code == gamemsg.RoomOK {
			switch rr.Request {
			case gamemsg.TypeRoomCreate, gamemsg.TypeRoomJoin, gamemsg.TypeRoomLeave:
				w.reset()
				ch.Kind = Reset
			}
		}
	case gamemsg.TypeRoomEvent:
		var ev gamemsg.RoomEvent
		if ev, err = gamemsg.ParseRoomEvent(m.Payload); err == nil {
			if ev.Kind == gamemsg.RoomClosed || ev.Kind == gamemsg.RoomLeft && ev.Client == w.self && w.self != 0 {
				w.reset()
				ch.Kind = Reset
			}
		}
	}
	if err != nil {
		w.stats.Malformed++
		return Change{}, err
	}
	return ch, nil
}

// reset forgets every entity and type: the client moved to another world.
func (w *World) reset() {
	clear(w.entities)
	clear(w.types)
}

// sync installs the schemas of a GameStateSync. An entity whose type is
// gone or changed is dropped (the server destroys them first).
func (w *World) sync(types []gamemsg.EntityTypeSchema) {
	next := make(map[uint16]*gamemsg.EntityTypeSchema, len(types))
	for i := range types {
		t := &types[i]
		if old, ok := w.types[t.TypeID]; ok && sameSchema(old, t) {
			next[t.TypeID] = old
			continue
		}
		next[t.TypeID] = t
	}
	for id, e := range w.entities {
		if next[e.Type] != e.schema {
			delete(w.entities, id)
		}
	}
	w.types = next
}

func sameSchema(a, b *gamemsg.EntityTypeSchema) bool {
	return a.Name == b.Name && slices.Equal(a.Fields, b.Fields)
}

func (w *World) spawn(p []byte) (*entityState, error) {
	sp, err := gamemsg.ParseEntitySpawn(p)
	if err != nil {
		return nil, err
	}
	s, ok := w.types[sp.TypeID]
	if !ok {
		return nil, fmt.Errorf("%w: entity %d type %d", ErrUnknownEntityType, sp.EntityID, sp.TypeID)
	}
	_, vals, err := gamemsg.ParseEntitySpawnFields(p, s)
	if err != nil {
		return nil, err
	}
	e := &entityState{Entity: Entity{ID: sp.EntityID, Type: sp.TypeID, TypeName: s.Name, Owner: sp.Owner,
		Visible: sp.FieldsMask, Fields: make([]gamemsg.FieldValue, len(s.Fields)), schema: s}}
	for i, f := range s.Fields {
		e.Fields[i] = gamemsg.FieldValue{Index: i, Kind: f.Kind}
	}
	for _, v := range vals {
		e.Fields[v.Index] = v
	}
	// An update sent before this spawn but received after it must not
	// overwrite the spawn's values.
	for i := range e.seq {
		e.seq[i] = w.maxSeq
	}
	w.entities[sp.EntityID] = e
	w.stats.Spawns++
	return e, nil
}

// update applies an EntityStateUpdate; known is false for an entity the
// World does not know (counted, skipped).
func (w *World) update(seq uint32, p []byte) (known bool, err error) {
	up, err := gamemsg.ParseEntityStateUpdate(p)
	if err != nil {
		return false, err
	}
	e, ok := w.entities[up.EntityID]
	if !ok {
		w.stats.Unknown++
		return false, nil
	}
	_, vals, err := gamemsg.ParseEntityStateUpdateFields(p, e.schema, e.Visible)
	if err != nil {
		return false, err
	}
	for _, v := range vals {
		if w.haveSeq && int32(seq-e.seq[v.Index]) <= 0 && e.seq[v.Index] != 0 {
			w.stats.Stale++
			continue
		}
		e.Fields[v.Index] = v
		e.seq[v.Index] = seq
	}
	if !w.haveSeq || int32(seq-w.maxSeq) > 0 {
		w.maxSeq, w.haveSeq = seq, true
	}
	w.stats.Updates++
	return true, nil
}

// Entities returns a copy of every known entity, by id.
func (w *World) Entities() []Entity {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Entity, 0, len(w.entities))
	for _, e := range w.entities {
		out = append(out, e.copy())
	}
	slices.SortFunc(out, func(a, b Entity) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Range calls fn for every known entity, in no particular order, until fn
// returns false. Unlike Entities it copies nothing, for a reader of every
// frame (a bot): the *Entity is the World's own, valid during the call
// only and read-only, and fn must not call the World's methods.
func (w *World) Range(fn func(e *Entity) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.entities {
		if !fn(&e.Entity) {
			return
		}
	}
}

// Entity returns a copy of one entity.
func (w *World) Entity(id uint32) (Entity, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.entities[id]
	if !ok {
		return Entity{}, false
	}
	return e.copy(), true
}

// Types returns the entity type schemas of the last GameStateSync.
func (w *World) Types() []gamemsg.EntityTypeSchema {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]gamemsg.EntityTypeSchema, 0, len(w.types))
	for _, t := range w.types {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b gamemsg.EntityTypeSchema) int { return cmp.Compare(a.TypeID, b.TypeID) })
	return out
}

// Stats returns the counters.
func (w *World) Stats() WorldStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func (e *entityState) copy() Entity {
	c := e.Entity
	c.Fields = slices.Clone(e.Fields)
	return c
}

// Field returns the value of the field named name; ok is false when the
// type has no such field or this client may not see it.
func (e *Entity) Field(name string) (gamemsg.FieldValue, bool) {
	if e.schema == nil {
		return gamemsg.FieldValue{}, false
	}
	for i, f := range e.schema.Fields {
		if f.Name == name {
			return e.Fields[i], e.Visible&(1<<i) != 0
		}
	}
	return gamemsg.FieldValue{}, false
}

// Position returns the entity's position as the client sees it: its
// visible vec3 field named "position" or "pos", else its first visible
// vec3 field. ok is false when it has none.
func (e *Entity) Position() (wire.Vec3, bool) {
	if e.schema == nil {
		return wire.Vec3{}, false
	}
	first := -1
	for i, f := range e.schema.Fields {
		if f.Kind != gamemsg.KindVec3 || e.Visible&(1<<i) == 0 {
			continue
		}
		if f.Name == "position" || f.Name == "pos" {
			return e.Fields[i].Vec, true
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return wire.Vec3{}, false
	}
	return e.Fields[first].Vec, true
}
