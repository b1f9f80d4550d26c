package wire

import (
	"errors"
	"fmt"
)

// The values of a typed payload, for tools that handle any module's
// messages (the console, generated clients' tests): a field's value is
// uint8, uint16, uint32, int32, float32, Vec3, string (str), []byte (bytes)
// or, for an array, []any of its elements.

// DecodeFields checks p against fields (CheckFields) and returns one value
// per field. The values do not alias p.
func DecodeFields(fields []Field, p []byte) ([]any, error) {
	if err := CheckFields(fields, p); err != nil {
		return nil, err
	}
	r := NewReader(p)
	out := make([]any, len(fields))
	for i := range fields {
		f := &fields[i]
		if f.Kind != KindArray {
			out[i] = readValue(&r, f.Kind)
			continue
		}
		elems := make([]any, r.U16()) // at most f.Max: CheckFields passed
		for j := range elems {
			elems[j] = readValue(&r, f.Elem)
		}
		out[i] = elems
	}
	return out, r.Finish()
}

// readValue reads one value of a kind that is not an array.
func readValue(r *Reader, k Kind) any {
	switch k {
	case KindU8:
		return r.U8()
	case KindU16:
		return r.U16()
	case KindU32:
		return r.U32()
	case KindI32:
		return r.I32()
	case KindF32:
		return r.F32()
	case KindVec3:
		return r.Vec3()
	case KindStr:
		return r.Str()
	default:
		return append([]byte{}, r.StrBytes()...)
	}
}

// ErrFieldValue is wrapped by AppendFields for a value that does not fit
// its field.
var ErrFieldValue = errors.New("wire: value does not fit its field")

// AppendFields appends the encoding of vals, one per field, in the Go types
// DecodeFields returns. It fails, naming the field, for a missing value, a
// value of another type, a str that is not UTF-8 without NUL, a float that
// is not finite, or a str, bytes or array over its max.
func AppendFields(dst []byte, fields []Field, vals []any) ([]byte, error) {
	if len(vals) != len(fields) {
		return dst, fmt.Errorf("%w: %d values for %d fields", ErrFieldValue, len(vals), len(fields))
	}
	w := Writer{b: dst}
	for i := range fields {
		f := &fields[i]
		if err := appendField(&w, f, vals[i]); err != nil {
			return dst, fmt.Errorf("%w: field %q: %v", ErrFieldValue, f.Name, err)
		}
	}
	return w.b, nil
}

func appendField(w *Writer, f *Field, v any) error {
	if f.Kind != KindArray {
		return appendValue(w, f.Kind, f.Max, v)
	}
	elems, ok := v.([]any)
	switch {
	case !ok:
		return fmt.Errorf("want a list of %s, have %T", f.Elem, v)
	case len(elems) > int(f.Max):
		return fmt.Errorf("%d elements, at most %d", len(elems), f.Max)
	}
	w.U16(uint16(len(elems)))
	for j, e := range elems {
		if err := appendValue(w, f.Elem, f.ElemMax, e); err != nil {
			return fmt.Errorf("element %d: %v", j+1, err)
		}
	}
	return nil
}

func appendValue(w *Writer, k Kind, max uint16, v any) error {
	wrong := func() error { return fmt.Errorf("want a %s, have %T", k, v) }
	switch k {
	case KindU8:
		x, ok := v.(uint8)
		if !ok {
			return wrong()
		}
		w.U8(x)
	case KindU16:
		x, ok := v.(uint16)
		if !ok {
			return wrong()
		}
		w.U16(x)
	case KindU32:
		x, ok := v.(uint32)
		if !ok {
			return wrong()
		}
		w.U32(x)
	case KindI32:
		x, ok := v.(int32)
		if !ok {
			return wrong()
		}
		w.I32(x)
	case KindF32:
		x, ok := v.(float32)
		if !ok {
			return wrong()
		}
		if !finite32(x) {
			return errors.New("a float must be finite")
		}
		w.F32(x)
	case KindVec3:
		x, ok := v.(Vec3)
		if !ok {
			return wrong()
		}
		if !x.IsFinite() {
			return errors.New("a vec3 must be finite")
		}
		w.Vec3(x)
	case KindStr:
		x, ok := v.(string)
		switch {
		case !ok:
			return wrong()
		case len(x) > int(max):
			return fmt.Errorf("%d bytes, at most %d", len(x), max)
		case !ValidUTF8NoNUL([]byte(x)):
			return errors.New("a str must be UTF-8 without NUL")
		}
		w.Str(x)
	case KindBytes:
		x, ok := v.([]byte)
		switch {
		case !ok:
			return wrong()
		case len(x) > int(max):
			return fmt.Errorf("%d bytes, at most %d", len(x), max)
		}
		w.StrBytes(x)
	default:
		return fmt.Errorf("kind %d cannot be encoded", k)
	}
	return nil
}
