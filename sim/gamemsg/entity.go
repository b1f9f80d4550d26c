package gamemsg

import (
	"math/bits"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Entity replication payloads of §9.3. Field data has no framing of its own:
// its layout follows from a mask and the entity type's schema (from
// GameStateSync), so there are two levels of parsing. The structural parse
// (ParseEntitySpawn, ParseEntityStateUpdate, and Registry.Validate) checks what
// the bytes alone can prove; the schema-aware parse decodes the fields and
// requires the data to match the schema exactly.

const (
	entitySpawnFixedLen  = 4 + 1 + 8 + 2 + 4 // entity_id … owner
	entityUpdateFixedLen = 4 + 8             // entity_id, dirty_mask
)

// EntitySpawn is the payload of EntitySpawn (type 7, at least 19 bytes). The
// field_count byte of the wire is not stored: it must equal
// popcount(FieldsMask), and AppendEntitySpawn writes it so.
type EntitySpawn struct {
	EntityID   uint32
	FieldsMask uint64 // the fields this client may see; bit i is schema field i
	TypeID     uint16
	Owner      uint32 // client id
	Data       []byte // values of the FieldsMask fields in ascending bit order
}

// AppendEntitySpawn appends the encoding of m to dst. Build Data with
// AppendFieldValue in ascending bit order.
func AppendEntitySpawn(dst []byte, m *EntitySpawn) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.EntityID)
	w.U8(uint8(bits.OnesCount64(m.FieldsMask)))
	w.U64(m.FieldsMask)
	w.U16(m.TypeID)
	w.U32(m.Owner)
	w.Raw(m.Data)
	return w.Bytes()
}

// ParseEntitySpawn is the structural parse of EntitySpawn: the fixed part, and
// field_count == popcount(fields_mask). Data is not decoded; see
// ParseEntitySpawnFields.
func ParseEntitySpawn(p []byte) (EntitySpawn, error) {
	m, data, err := scanEntitySpawn(p)
	if err != nil {
		return EntitySpawn{}, err
	}
	m.Data = clone(data)
	return m, nil
}

func scanEntitySpawn(p []byte) (EntitySpawn, []byte, error) {
	r := wire.NewReader(p)
	m := EntitySpawn{EntityID: r.U32()}
	count := int(r.U8())
	m.FieldsMask = r.U64()
	m.TypeID = r.U16()
	m.Owner = r.U32()
	if !r.HasError() && count != bits.OnesCount64(m.FieldsMask) {
		r.Fail(errFieldCount)
	}
	data := r.Bytes(r.Remaining())
	return m, data, wire.Finish(&r)
}

// ParseEntitySpawnFields parses an EntitySpawn against the schema of its type:
// TypeID must be s.TypeID, FieldsMask may name only fields s defines, and Data
// must hold exactly those fields' values. Values come back in ascending bit
// order.
func ParseEntitySpawnFields(p []byte, s *EntityTypeSchema) (EntitySpawn, []FieldValue, error) {
	m, data, err := scanEntitySpawn(p)
	if err != nil {
		return EntitySpawn{}, nil, err
	}
	if m.TypeID != s.TypeID {
		return EntitySpawn{}, nil, errTypeMismatch
	}
	vals, err := DecodeFields(s, m.FieldsMask, m.FieldsMask, data)
	if err != nil {
		return EntitySpawn{}, nil, err
	}
	m.Data = clone(data)
	return m, vals, nil
}

// EntityStateUpdate is the payload of EntityStateUpdate (type 9, at least 12
// bytes): new values of an entity's dirty fields.
type EntityStateUpdate struct {
	EntityID  uint32
	DirtyMask uint64 // bit i set: schema field i changed
	Data      []byte // values of the dirty and visible fields in ascending bit order
}

// AppendEntityStateUpdate appends the encoding of m to dst. A sender should
// clear from DirtyMask the fields the receiver may not see, so the mask leaks
// nothing about them; Data holds the values of the remaining bits.
func AppendEntityStateUpdate(dst []byte, m *EntityStateUpdate) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.EntityID)
	w.U64(m.DirtyMask)
	w.Raw(m.Data)
	return w.Bytes()
}

// ParseEntityStateUpdate is the structural parse of EntityStateUpdate. Data is
// not decoded; see ParseEntityStateUpdateFields.
func ParseEntityStateUpdate(p []byte) (EntityStateUpdate, error) {
	m, data, err := scanEntityStateUpdate(p)
	if err != nil {
		return EntityStateUpdate{}, err
	}
	m.Data = clone(data)
	return m, nil
}

func scanEntityStateUpdate(p []byte) (EntityStateUpdate, []byte, error) {
	r := wire.NewReader(p)
	m := EntityStateUpdate{EntityID: r.U32(), DirtyMask: r.U64()}
	data := r.Bytes(r.Remaining())
	return m, data, wire.Finish(&r)
}

// ParseEntityStateUpdateFields parses an EntityStateUpdate against the schema
// of the entity's type. visible is the FieldsMask of the entity's EntitySpawn:
// §9.3 puts in the data only fields that are dirty and visible, so Data must
// hold exactly the values of DirtyMask & visible. DirtyMask may name only
// fields s defines.
func ParseEntityStateUpdateFields(p []byte, s *EntityTypeSchema, visible uint64) (EntityStateUpdate, []FieldValue, error) {
	m, data, err := scanEntityStateUpdate(p)
	if err != nil {
		return EntityStateUpdate{}, nil, err
	}
	vals, err := DecodeFields(s, m.DirtyMask, m.DirtyMask&visible, data)
	if err != nil {
		return EntityStateUpdate{}, nil, err
	}
	m.Data = clone(data)
	return m, vals, nil
}

// FieldValue is one decoded replicated field. Only the member of its Kind is
// meaningful.
type FieldValue struct {
	Index int // field index in the type schema = its bit in the masks
	Kind  FieldKind
	Bool  bool
	Int   int32
	Uint  uint32
	Float float32   // finite
	Vec   wire.Vec3 // finite
}

// AppendFieldValue appends the encoding of v (by v.Kind) to dst. An undefined
// kind appends nothing.
func AppendFieldValue(dst []byte, v *FieldValue) []byte {
	w := wire.AppendWriter(dst)
	switch v.Kind {
	case KindBool:
		w.Bool(v.Bool)
	case KindInt32:
		w.I32(v.Int)
	case KindUint32:
		w.U32(v.Uint)
	case KindFloat:
		w.F32(v.Float)
	case KindVec3:
		w.Vec3(v.Vec)
	}
	return w.Bytes()
}

// DecodeFields decodes data as the values of the fields of present, in
// ascending bit order, with the widths of s. mask is the mask as received:
// any bit at or above len(s.Fields) in it is malformed, present or not. data
// must be consumed exactly; floats must be finite (they are game state).
func DecodeFields(s *EntityTypeSchema, mask, present uint64, data []byte) ([]FieldValue, error) {
	// A schema of 64 fields admits every bit of a u64 mask.
	if n := len(s.Fields); n < MaxFields && mask>>uint(n) != 0 {
		return nil, errBeyondSchema
	}
	present &= mask
	r := wire.NewReader(data)
	var vals []FieldValue
	if present != 0 {
		vals = make([]FieldValue, 0, bits.OnesCount64(present)) // ≤ 64, bounded
	}
	for m := present; m != 0 && !r.HasError(); m &= m - 1 {
		i := bits.TrailingZeros64(m)
		v := FieldValue{Index: i, Kind: s.Fields[i].Kind}
		switch v.Kind {
		case KindBool:
			v.Bool = r.Bool()
		case KindInt32:
			v.Int = r.I32()
		case KindUint32:
			v.Uint = r.U32()
		case KindFloat:
			v.Float = r.FiniteF32()
		case KindVec3:
			v.Vec = r.FiniteVec3()
		default:
			r.Fail(errUnknownEnum) // a schema that did not come through ParseGameStateSync
		}
		vals = append(vals, v)
	}
	if err := wire.Finish(&r); err != nil {
		return nil, err
	}
	return vals, nil
}
