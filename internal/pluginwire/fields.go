package pluginwire

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Entity field values travel in Action.fields as a sequence of
//
//	index u8, kind u8, value (the kind's width of §9.2, little-endian)
//
// self-describing, so the server decodes them without knowing the entity's
// type; it then checks each kind against the type's schema. At most
// wire.MaxFields values, indices below wire.MaxFields.

// ErrBadFields is returned by ParseFieldValues for a malformed encoding.
var ErrBadFields = errors.New("pluginwire: malformed entity field values")

// AppendFieldValues appends the encoding of vals to dst.
func AppendFieldValues(dst []byte, vals []wire.FieldValue) []byte {
	for i := range vals {
		v := &vals[i]
		dst = append(dst, uint8(v.Index), uint8(v.Kind))
		dst = wire.AppendFieldValue(dst, v)
	}
	return dst
}

// ParseFieldValues decodes an encoding of AppendFieldValues. Every value
// must have a known kind, an index below wire.MaxFields and, for floats,
// finite components; at most wire.MaxFields values.
func ParseFieldValues(b []byte) ([]wire.FieldValue, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := wire.NewReader(b)
	var vals []wire.FieldValue
	for r.Remaining() > 0 {
		if len(vals) == wire.MaxFields {
			return nil, fmt.Errorf("%w: more than %d values", ErrBadFields, wire.MaxFields)
		}
		v := wire.FieldValue{Index: int(r.U8()), Kind: wire.FieldKind(r.U8())}
		if r.HasError() || v.Index >= wire.MaxFields || !v.Kind.Valid() {
			return nil, fmt.Errorf("%w: value %d: index %d kind %d", ErrBadFields, len(vals), v.Index, v.Kind)
		}
		switch v.Kind {
		case wire.KindBool:
			v.Bool = r.Bool()
		case wire.KindInt32:
			v.Int = r.I32()
		case wire.KindUint32:
			v.Uint = r.U32()
		case wire.KindFloat:
			v.Float = r.FiniteF32()
		case wire.KindVec3:
			v.Vec = r.Vec3()
			if !v.Vec.IsFinite() {
				r.Fail(ErrBadFields)
			}
		}
		if r.HasError() {
			return nil, fmt.Errorf("%w: value %d (field %d, %s): %v", ErrBadFields, len(vals), v.Index, v.Kind, r.Err())
		}
		vals = append(vals, v)
	}
	return vals, nil
}
