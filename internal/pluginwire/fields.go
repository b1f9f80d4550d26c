package pluginwire

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Entity field values travel in Action.fields as a sequence of
//
//	index u8, kind u8, value (the kind's width of §9.2, little-endian)
//
// self-describing, so the server decodes them without knowing the entity's
// type; it then checks each kind against the type's schema. At most
// gamemsg.MaxFields values, indices below gamemsg.MaxFields.

// ErrBadFields is returned by ParseFieldValues for a malformed encoding.
var ErrBadFields = errors.New("pluginwire: malformed entity field values")

// AppendFieldValues appends the encoding of vals to dst.
func AppendFieldValues(dst []byte, vals []gamemsg.FieldValue) []byte {
	for i := range vals {
		v := &vals[i]
		dst = append(dst, uint8(v.Index), uint8(v.Kind))
		dst = gamemsg.AppendFieldValue(dst, v)
	}
	return dst
}

// ParseFieldValues decodes an encoding of AppendFieldValues. Every value
// must have a known kind, an index below gamemsg.MaxFields and, for floats,
// finite components; at most gamemsg.MaxFields values.
func ParseFieldValues(b []byte) ([]gamemsg.FieldValue, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := wire.NewReader(b)
	var vals []gamemsg.FieldValue
	for r.Remaining() > 0 {
		if len(vals) == gamemsg.MaxFields {
			return nil, fmt.Errorf("%w: more than %d values", ErrBadFields, gamemsg.MaxFields)
		}
		v := gamemsg.FieldValue{Index: int(r.U8()), Kind: gamemsg.FieldKind(r.U8())}
		if r.HasError() || v.Index >= gamemsg.MaxFields || !v.Kind.Valid() {
			return nil, fmt.Errorf("%w: value %d: index %d kind %d", ErrBadFields, len(vals), v.Index, v.Kind)
		}
		switch v.Kind {
		case gamemsg.KindBool:
			v.Bool = r.Bool()
		case gamemsg.KindInt32:
			v.Int = r.I32()
		case gamemsg.KindUint32:
			v.Uint = r.U32()
		case gamemsg.KindFloat:
			v.Float = r.FiniteF32()
		case gamemsg.KindVec3:
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
