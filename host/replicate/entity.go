package replicate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// EntityInfo is what the server knows of an entity.
type EntityInfo struct {
	ID       uint32
	Type     uint16
	Owner    uint32
	Party    uint32
	Position wire.Vec3
	Global   bool
}

// entity is one live entity.
type entity struct {
	id         uint32
	t          *typeInfo
	owner      uint32
	party      uint32
	global     bool
	pos        wire.Vec3
	teleported bool   // since the last lag-compensation record
	data       []byte // the field values, encoded, at t.offset
	// stamp[i] is the tick of field i's latest change; lastChange is the
	// largest stamp.
	stamp      [gamemsg.MaxFields]uint64
	lastChange uint64
}

// Spawn creates an entity of one of block b's types and returns its id.
// It is sent to the clients it is relevant to at the next frame.
func (r *Replicator) Spawn(b Block, s module.Spawn) (uint32, error) {
	bs, err := r.block(b)
	if err != nil {
		return 0, err
	}
	t, ok := r.types[s.Type]
	if !ok || t.block != b {
		return 0, fmt.Errorf("%w: type %d", ErrUnknownType, s.Type)
	}
	if !s.Position.IsFinite() {
		return 0, fmt.Errorf("spawn: %w", ErrBadPosition)
	}
	if len(r.list) >= r.cfg.MaxEntities {
		return 0, fmt.Errorf("%w: %d live, the limit", ErrTooManyEntities, len(r.list))
	}
	id := s.ID
	if id == 0 {
		if id, err = r.allocate(b, bs); err != nil {
			return 0, err
		}
	} else if BlockOf(id) != b {
		return 0, fmt.Errorf("spawn %d: %w (%d..%d)", id, ErrNotYours, b.Range().First, b.Range().Last)
	} else if _, taken := r.byID[id]; taken {
		return 0, fmt.Errorf("spawn %d: %w", id, ErrIDInUse)
	}
	e := &entity{id: id, t: t, owner: s.Owner, party: s.Party, global: s.Global, teleported: true, data: make([]byte, t.size)}
	if err := e.set(s.Fields, 0); err != nil {
		return 0, fmt.Errorf("spawn: %w", err)
	}
	e.setPos(s.Position, 0)
	clear(e.stamp[:]) // the spawn carries every value
	e.lastChange = 0
	r.byID[id] = e
	i, _ := slices.BinarySearchFunc(r.list, id, func(e *entity, id uint32) int { return cmpU32(e.id, id) })
	r.list = slices.Insert(r.list, i, e)
	bs.count++
	if s.ID == 0 {
		bs.next = id + 1
	}
	return id, nil
}

// allocate finds a free id in the block, from its cursor on.
func (r *Replicator) allocate(b Block, bs *blockState) (uint32, error) {
	rg := b.Range()
	id := bs.next
	for range bs.count + 1 {
		if id < rg.First || id > rg.Last {
			id = rg.First
		}
		if _, taken := r.byID[id]; !taken {
			return id, nil
		}
		id++
	}
	return 0, fmt.Errorf("%w: block %d is full", ErrTooManyEntities, b)
}

// entity returns block b's live entity id.
func (r *Replicator) entity(b Block, id uint32) (*entity, error) {
	if _, err := r.block(b); err != nil {
		return nil, err
	}
	if BlockOf(id) != b {
		return nil, fmt.Errorf("entity %d: %w", id, ErrNotYours)
	}
	e, ok := r.byID[id]
	if !ok {
		return nil, fmt.Errorf("entity %d: %w", id, ErrNoEntity)
	}
	return e, nil
}

// Destroy removes an entity; the clients that know it are sent
// EntityDestroy at the next frame.
func (r *Replicator) Destroy(b Block, id uint32) error {
	e, err := r.entity(b, id)
	if err != nil {
		return err
	}
	delete(r.byID, id)
	i, _ := slices.BinarySearchFunc(r.list, id, func(e *entity, id uint32) int { return cmpU32(e.id, id) })
	r.list = slices.Delete(r.list, i, i+1)
	r.gone = append(r.gone, gone{id: e.id, tick: r.stamp()})
	r.blocks[b].count--
	return nil
}

// SetPosition moves an entity (and writes its PositionField). A teleport
// (a respawn, a teleporter) is not interpolated across by lag
// compensation.
func (r *Replicator) SetPosition(b Block, id uint32, pos wire.Vec3, teleport bool) error {
	e, err := r.entity(b, id)
	if err != nil {
		return err
	}
	if !pos.IsFinite() {
		return fmt.Errorf("entity %d: %w", id, ErrBadPosition)
	}
	e.setPos(pos, r.stamp())
	e.teleported = e.teleported || teleport
	return nil
}

// SetFields writes field values (Index and the member of Kind, which must
// be the field's kind). A field whose value does not change is not sent.
// All of them or none: an invalid value changes nothing.
func (r *Replicator) SetFields(b Block, id uint32, vals ...gamemsg.FieldValue) error {
	e, err := r.entity(b, id)
	if err != nil {
		return err
	}
	if err := e.set(vals, r.stamp()); err != nil {
		return fmt.Errorf("entity %d: %w", id, err)
	}
	return nil
}

// SetOwner gives an entity to another client (0: none); the clients whose
// visible fields change get it spawned again.
func (r *Replicator) SetOwner(b Block, id, owner uint32) error {
	e, err := r.entity(b, id)
	if err != nil {
		return err
	}
	e.owner = owner
	return nil
}

// SetParty puts an entity in a party (0: none).
func (r *Replicator) SetParty(b Block, id, party uint32) error {
	e, err := r.entity(b, id)
	if err != nil {
		return err
	}
	e.party = party
	return nil
}

// Entity returns what the server knows of a live entity.
func (r *Replicator) Entity(id uint32) (EntityInfo, bool) {
	e, ok := r.byID[id]
	if !ok {
		return EntityInfo{}, false
	}
	return EntityInfo{ID: e.id, Type: e.t.ID, Owner: e.owner, Party: e.party, Position: e.pos, Global: e.global}, true
}

// Fields returns a live entity's field values, one per field of its type.
func (r *Replicator) Fields(id uint32) ([]gamemsg.FieldValue, bool) {
	e, ok := r.byID[id]
	if !ok {
		return nil, false
	}
	vals, err := gamemsg.DecodeFields(&gamemsg.EntityTypeSchema{Fields: e.t.Fields}, e.t.all(), e.t.all(), e.data)
	if err != nil {
		return nil, false // unreachable: the data was encoded by set
	}
	return vals, true
}

// Entities returns the ids of every live entity, ascending.
func (r *Replicator) Entities() []uint32 {
	out := make([]uint32, len(r.list))
	for i, e := range r.list {
		out[i] = e.id
	}
	return out
}

// setPos moves the entity and mirrors the position field.
func (e *entity) setPos(p wire.Vec3, tick uint64) {
	e.pos = p
	if e.t.pos >= 0 {
		var b [12]byte
		putVec(b[:], p)
		e.write(e.t.pos, b[:], tick)
	}
}

// set validates every value, then writes them.
func (e *entity) set(vals []gamemsg.FieldValue, tick uint64) error {
	for i := range vals {
		v := &vals[i]
		switch {
		case v.Index < 0 || v.Index >= len(e.t.Fields):
			return fmt.Errorf("%w: field index %d; type %q has %d fields", ErrBadField, v.Index, e.t.Name, len(e.t.Fields))
		case v.Kind != e.t.Fields[v.Index].Kind:
			return fmt.Errorf("%w: field %q is a %s, not a %s", ErrBadField, e.t.Fields[v.Index].Name, e.t.Fields[v.Index].Kind, v.Kind)
		case v.Kind == gamemsg.KindFloat && (math.IsNaN(float64(v.Float)) || math.IsInf(float64(v.Float), 0)),
			v.Kind == gamemsg.KindVec3 && !v.Vec.IsFinite():
			return fmt.Errorf("%w: field %q is not finite", ErrBadField, e.t.Fields[v.Index].Name)
		}
	}
	var b [12]byte
	for i := range vals {
		v := &vals[i]
		w := v.Kind.Width()
		switch v.Kind {
		case gamemsg.KindBool:
			b[0] = 0
			if v.Bool {
				b[0] = 1
			}
		case gamemsg.KindInt32:
			binary.LittleEndian.PutUint32(b[:], uint32(v.Int))
		case gamemsg.KindUint32:
			binary.LittleEndian.PutUint32(b[:], v.Uint)
		case gamemsg.KindFloat:
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v.Float))
		case gamemsg.KindVec3:
			putVec(b[:], v.Vec)
		}
		if v.Index == e.t.pos {
			e.pos = v.Vec
		}
		e.write(v.Index, b[:w], tick)
	}
	return nil
}

// write stores field i's encoding and stamps it when it changed.
func (e *entity) write(i int, enc []byte, tick uint64) {
	off := int(e.t.offset[i])
	dst := e.data[off : off+len(enc)]
	if bytes.Equal(dst, enc) {
		return
	}
	copy(dst, enc)
	e.stamp[i] = tick
	e.lastChange = max(e.lastChange, tick)
}

func putVec(b []byte, v wire.Vec3) {
	binary.LittleEndian.PutUint32(b[0:], math.Float32bits(v.X))
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(v.Y))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(v.Z))
}

// changedAfter returns the fields whose latest change is stamped after
// tick f.
func (e *entity) changedAfter(f uint64) uint64 {
	if e.lastChange <= f {
		return 0
	}
	var m uint64
	for i := range e.t.Fields {
		if e.stamp[i] > f {
			m |= 1 << i
		}
	}
	return m
}

// appendFields appends the encoded values of the fields of mask, in
// ascending bit order.
func (e *entity) appendFields(dst []byte, mask uint64) []byte {
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		off := int(e.t.offset[i])
		dst = append(dst, e.data[off:off+e.t.Fields[i].Kind.Width()]...)
	}
	return dst
}
