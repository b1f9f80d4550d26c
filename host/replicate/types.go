package replicate

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Errors of the type registry; returned errors wrap them and say which
// type, field or module is at fault.
var (
	ErrBadType   = errors.New("replicate: invalid entity type")
	ErrTypeTaken = errors.New("replicate: entity type id already declared")
	ErrTooLarge  = errors.New("replicate: entity types do not fit one GameStateSync")
)

// typeInfo is a registered type with what the frame loop needs precomputed.
type typeInfo struct {
	module.EntityType
	block  Block
	owner  string
	offset [gamemsg.MaxFields]uint16 // byte offset of each field in an entity's data
	size   int                       // bytes of one entity's data
	pos    int                       // index of PositionField, -1 for none
	hasBox bool
	// Masks of the fields of each visibility.
	public, private, party, spectator uint64
}

// gssFixedMax is the largest GameStateSync without types: the fixed fields
// and the longest server name, motd and map (§9.2).
const gssFixedMax = 4 + 4 + 2 + 2 + (2 + gamemsg.MaxServerNameLen) + (2 + gamemsg.MaxMOTDLen) + (2 + gamemsg.MaxMapLen) + 1 + 1 + 4 + 2

// schemaLen is the encoded size of one EntityTypeSchema.
func schemaLen(t *module.EntityType) int {
	n := 2 + 2 + len(t.Name) + 1
	for _, f := range t.Fields {
		n += 2 + len(f.Name) + 2
	}
	return n
}

// newTypeInfo checks t and precomputes its layout.
func newTypeInfo(t module.EntityType, b Block, owner string) (*typeInfo, error) {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%w: module %q, entity type %d (%q): %s", ErrBadType, owner, t.ID, t.Name, fmt.Sprintf(why, args...))
	}
	if !wire.ValidName([]byte(t.Name), wire.MaxNameLen) {
		return nil, bad("the name must be 1..%d bytes of UTF-8 without control characters", wire.MaxNameLen)
	}
	if len(t.Fields) > gamemsg.MaxFields {
		return nil, bad("%d fields; at most %d", len(t.Fields), gamemsg.MaxFields)
	}
	ti := &typeInfo{block: b, owner: owner, pos: -1}
	ti.EntityType = t
	ti.Fields = slices.Clone(t.Fields)
	off := 0
	for i, f := range ti.Fields {
		switch {
		case !wire.ValidName([]byte(f.Name), wire.MaxNameLen):
			return nil, bad("field %d: the name must be 1..%d bytes of UTF-8 without control characters", i, wire.MaxNameLen)
		case !f.Kind.Valid():
			return nil, bad("field %q: unknown kind %d", f.Name, f.Kind)
		case !f.Visibility.Valid():
			return nil, bad("field %q: unknown visibility %d", f.Name, f.Visibility)
		case slices.ContainsFunc(ti.Fields[:i], func(o gamemsg.FieldSchema) bool { return o.Name == f.Name }):
			return nil, bad("field %q is declared twice", f.Name)
		}
		ti.offset[i] = uint16(off)
		off += f.Kind.Width()
		bit := uint64(1) << i
		switch f.Visibility {
		case gamemsg.VisibilityPublic:
			ti.public |= bit
		case gamemsg.VisibilityPrivate:
			ti.private |= bit
		case gamemsg.VisibilityParty:
			ti.party |= bit
		case gamemsg.VisibilitySpectator:
			ti.spectator |= bit
		}
		if f.Name == t.PositionField {
			if f.Kind != gamemsg.KindVec3 {
				return nil, bad("position field %q is a %s; it must be a vec3", f.Name, f.Kind)
			}
			ti.pos = i
		}
	}
	ti.size = off
	if t.PositionField != "" && ti.pos < 0 {
		return nil, bad("position field %q is not one of its fields", t.PositionField)
	}
	box := t.Box
	if !box.Min.IsFinite() || !box.Max.IsFinite() || box.Min.X > box.Max.X || box.Min.Y > box.Max.Y || box.Min.Z > box.Max.Z {
		return nil, bad("the box must be finite with min ≤ max on every axis")
	}
	ti.hasBox = box != lagcomp.AABB{}
	return ti, nil
}

// schema is the type as GameStateSync carries it.
func (t *typeInfo) schema() gamemsg.EntityTypeSchema {
	return gamemsg.EntityTypeSchema{TypeID: t.ID, Name: t.Name, Fields: t.Fields}
}

// all is the mask of every field of the type.
func (t *typeInfo) all() uint64 {
	if len(t.Fields) == gamemsg.MaxFields {
		return ^uint64(0)
	}
	return uint64(1)<<uint(len(t.Fields)) - 1
}

// dataLen is the encoded size of the fields of mask.
func (t *typeInfo) dataLen(mask uint64) int {
	n := 0
	for m := mask; m != 0; m &= m - 1 {
		n += t.Fields[bits.TrailingZeros64(m)].Kind.Width()
	}
	return n
}

// schemaSet is an immutable snapshot of the registered types for
// GameStateSync, published for the network goroutines.
type schemaSet struct {
	version uint64
	types   []gamemsg.EntityTypeSchema // by type id
}

// SetTypes replaces the entity types of block b (owned by module owner) with
// types: all of them or none. It refuses, naming the type and the modules
// involved, an invalid type, an id declared twice, an id another block owns,
// or a set of types that no longer fits one GameStateSync. On success every
// entity of the block is destroyed (its types may have changed under it)
// and clients get a fresh GameStateSync at the next replication frame.
func (r *Replicator) SetTypes(b Block, owner string, types []module.EntityType) error {
	bs, err := r.block(b)
	if err != nil {
		return err
	}
	infos := make([]*typeInfo, 0, len(types))
	size := 0
	for _, ti := range r.types {
		if ti.block != b {
			size += schemaLen(&ti.EntityType)
		}
	}
	for _, t := range types {
		ti, err := newTypeInfo(t, b, owner)
		if err != nil {
			return err
		}
		if prev, ok := r.types[t.ID]; ok && prev.block != b {
			return fmt.Errorf("%w: module %q cannot declare entity type %d (%q): module %q owns it (as %q)",
				ErrTypeTaken, owner, t.ID, t.Name, prev.owner, prev.Name)
		}
		if slices.ContainsFunc(infos, func(o *typeInfo) bool { return o.ID == t.ID }) {
			return fmt.Errorf("%w: module %q declares entity type %d twice", ErrTypeTaken, owner, t.ID)
		}
		size += schemaLen(&t)
		infos = append(infos, ti)
	}
	if size > wire.MaxPayload-gssFixedMax {
		return fmt.Errorf("%w: module %q: with its entity types the schemas take %d bytes, more than the %d a GameStateSync holds; use fewer or shorter names",
			ErrTooLarge, owner, size, wire.MaxPayload-gssFixedMax)
	}
	r.clearBlock(b)
	bs.owner = owner
	bs.hist = nil
	for _, ti := range infos {
		r.types[ti.ID] = ti
		bs.types = append(bs.types, ti.ID)
		if ti.hasBox && bs.hist == nil {
			bs.hist = r.newHistory()
		}
	}
	if len(infos) > 0 {
		r.publishSchemas()
	}
	return nil
}

// publishSchemas makes a new schema version for GameStateSync.
func (r *Replicator) publishSchemas() {
	ids := make([]uint16, 0, len(r.types))
	for id := range r.types {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	set := &schemaSet{version: r.schemas.Load().version + 1, types: make([]gamemsg.EntityTypeSchema, len(ids))}
	for i, id := range ids {
		set.types[i] = r.types[id].schema()
	}
	r.schemas.Store(set)
}

// Schemas returns the entity type schemas for a GameStateSync and their
// version; a client that was sent an older version gets a fresh
// GameStateSync at the next replication frame. Safe from any goroutine; the
// slice must not be modified.
func (r *Replicator) Schemas() (version uint64, types []gamemsg.EntityTypeSchema) {
	s := r.schemas.Load()
	return s.version, s.types
}
