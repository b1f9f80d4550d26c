package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Typed message schemas (docs/protocol.md §10.1, §10.2). A module type may
// declare the fields of its payload; the receiver then checks the whole
// layout, not only the sizes and one string. Every field is a NetBuffer
// value, in order, with nothing after the last:
//
//	u8 u16 u32 i32   little-endian integers (1, 2, 4, 4 bytes)
//	f32              IEEE-754 binary32, finite (4 bytes)
//	vec3             three finite f32 (12 bytes)
//	str              u16 byte length ≤ max, then UTF-8 without NUL
//	bytes            u16 byte length ≤ max, then the bytes
//	array            u16 count ≤ max count, then count elements of one of
//	                 the kinds above (not an array)

// Kind is the type of a typed field; its value is the code the schema
// announcement carries (§10.2).
type Kind uint8

// The field kinds and their announcement codes.
const (
	KindU8    Kind = 1
	KindU16   Kind = 2
	KindU32   Kind = 3
	KindI32   Kind = 4
	KindF32   Kind = 5
	KindVec3  Kind = 6
	KindStr   Kind = 7
	KindBytes Kind = 8
	KindArray Kind = 9
)

// Bounds of a typed declaration.
const (
	MaxFields       = 32 // fields of one message type
	MaxFieldNameLen = 32 // bytes of a field's name
)

var kindNames = [...]string{KindU8: "u8", KindU16: "u16", KindU32: "u32", KindI32: "i32", KindF32: "f32",
	KindVec3: "vec3", KindStr: "str", KindBytes: "bytes", KindArray: "array"}

// String returns the kind's name as declarations and the JSON export spell
// it ("u8", "str", "array", ...).
func (k Kind) String() string {
	if k >= KindU8 && k <= KindArray {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind returns the kind named s ("u8", "u16", "u32", "i32", "f32",
// "vec3", "str", "bytes", "array").
func ParseKind(s string) (Kind, bool) {
	for k := KindU8; k <= KindArray; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// HasMax reports whether the kind takes a maximum byte length (str, bytes).
func (k Kind) HasMax() bool { return k == KindStr || k == KindBytes }

// fixedSize is the encoded size of a fixed-size kind, 0 for the others.
func (k Kind) fixedSize() uint64 {
	switch k {
	case KindU8:
		return 1
	case KindU16:
		return 2
	case KindU32, KindI32, KindF32:
		return 4
	case KindVec3:
		return 12
	}
	return 0
}

// Field is one field of a typed message schema.
type Field struct {
	Name string // an identifier: 1..32 bytes of ASCII letters, digits and '_', not starting with a digit
	Kind Kind
	// Max is, for KindStr and KindBytes, the most bytes (1..65535); for
	// KindArray, the most elements (1..65535); 0 for the other kinds.
	Max uint16
	// Elem is, for KindArray, the element's kind (any but KindArray);
	// ElemMax is then, for a str or bytes element, its most bytes. Both are
	// 0 for the other kinds.
	Elem    Kind
	ElemMax uint16
}

// ValidFieldName reports whether s may name a field: 1..32 bytes, an ASCII
// letter or '_' first, then letters, digits or '_'.
func ValidFieldName[S ~string | ~[]byte](s S) bool {
	if len(s) == 0 || len(s) > MaxFieldNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// layout is what a field list implies for the size rules.
type layout struct {
	min, max uint64
	strOff   uint32 // the first str's offset when every field before it has a fixed size, else NoStringFields
}

// fieldLayout checks the kinds and bounds of fields (not their names) and
// derives their size rules; the error says what to change.
func fieldLayout(fields []Field) (layout, error) {
	l := layout{strOff: NoStringFields}
	if len(fields) > MaxFields {
		return l, fmt.Errorf("%d fields; a message may declare at most %d", len(fields), MaxFields)
	}
	fixed := true // every field so far has a fixed size
	for i := range fields {
		f := &fields[i]
		lo, hi, err := fieldSize(f)
		if err != nil {
			return l, fmt.Errorf("field %d (%q): %w", i+1, f.Name, err)
		}
		if f.Kind == KindStr && fixed && l.strOff == NoStringFields {
			l.strOff = uint32(l.min)
		}
		fixed = fixed && lo == hi
		l.min += lo
		l.max += hi
	}
	return l, nil
}

// fieldSize returns the smallest and largest encoding of one field.
func fieldSize(f *Field) (lo, hi uint64, err error) {
	switch {
	case f.Kind.fixedSize() > 0:
		if f.Max != 0 || f.Elem != 0 || f.ElemMax != 0 {
			return 0, 0, fmt.Errorf("a %s takes no max, elem or elem_max", f.Kind)
		}
		n := f.Kind.fixedSize()
		return n, n, nil
	case f.Kind.HasMax():
		if f.Max == 0 || f.Elem != 0 || f.ElemMax != 0 {
			return 0, 0, fmt.Errorf("a %s needs a max of 1..65535 bytes and takes no elem", f.Kind)
		}
		return 2, 2 + uint64(f.Max), nil
	case f.Kind == KindArray:
		if f.Max == 0 {
			return 0, 0, fmt.Errorf("an array needs a max count of 1..65535")
		}
		elem := Field{Kind: f.Elem, Max: f.ElemMax}
		if f.Elem == KindArray || f.Elem.fixedSize() == 0 && !f.Elem.HasMax() {
			return 0, 0, fmt.Errorf("an array's elements are u8, u16, u32, i32, f32, vec3, str or bytes, not %s", f.Elem)
		}
		_, eh, err := fieldSize(&elem)
		if err != nil {
			return 0, 0, fmt.Errorf("its elements: %w", err)
		}
		return 2, 2 + uint64(f.Max)*eh, nil
	}
	return 0, 0, fmt.Errorf("kind %d is not u8, u16, u32, i32, f32, vec3, str, bytes or array", f.Kind)
}

// checkFieldDecl checks a typed schema's fields and fills in the size rules
// they imply: MinLen and MaxLen, when given (not 0), must equal the derived
// ones; StringFieldOffset must be 0, NoStringFields or the derived one (the
// first str's offset when every field before it has a fixed size), and
// becomes the derived one.
func checkFieldDecl(s *Schema) error {
	if len(s.Fields) > MaxFields {
		return fmt.Errorf("%d fields; a message may declare at most %d", len(s.Fields), MaxFields)
	}
	for i := range s.Fields {
		name := s.Fields[i].Name
		if !ValidFieldName(name) {
			return fmt.Errorf("field %d: name %q is not an identifier of 1..%d bytes (letters, digits, '_', not starting with a digit)", i+1, name, MaxFieldNameLen)
		}
		for j := range i {
			if s.Fields[j].Name == name {
				return fmt.Errorf("field %d: name %q is used twice", i+1, name)
			}
		}
	}
	l, err := fieldLayout(s.Fields)
	if err != nil {
		return err
	}
	return applyLayout(s, l)
}

// applyLayout sets s's size rules from l, refusing given rules that differ.
func applyLayout(s *Schema, l layout) error {
	switch {
	case l.max > MaxPayload:
		return fmt.Errorf("the fields can take %d bytes, above MAX_PAYLOAD %d; lower a max", l.max, MaxPayload)
	case s.MinLen != 0 && uint64(s.MinLen) != l.min:
		return fmt.Errorf("min_len %d differs from the %d bytes the fields take at least; leave it out", s.MinLen, l.min)
	case s.MaxLen != 0 && uint64(s.MaxLen) != l.max:
		return fmt.Errorf("max_len %d differs from the %d bytes the fields take at most; leave it out", s.MaxLen, l.max)
	case s.StringFieldOffset != 0 && s.StringFieldOffset != NoStringFields && s.StringFieldOffset != l.strOff:
		return fmt.Errorf("string_field_offset %d is not where the fields put their first str; leave it out", s.StringFieldOffset)
	}
	s.MinLen, s.MaxLen, s.StringFieldOffset = uint32(l.min), uint32(l.max), l.strOff
	return nil
}

// Normalize checks a typed schema's field declaration (names unique
// identifiers, at most MaxFields, kinds and maxima valid) and fills in the
// size rules it implies (see Registry.Register). An untyped schema is left
// as it is. Module loaders call it to report a bad declaration where it is
// written; Register calls it too.
func (s *Schema) Normalize() error {
	if s.Fields == nil {
		return nil
	}
	if len(s.Fields) == 0 {
		return fmt.Errorf("%w: type %d (%q): a typed message declares 1..%d fields", ErrBadSchema, s.ID, s.Name, MaxFields)
	}
	if err := checkFieldDecl(s); err != nil {
		return fmt.Errorf("%w: type %d (%q): %v", ErrBadSchema, s.ID, s.Name, err)
	}
	return nil
}

// Typed reports whether s declares its fields.
func (s *Schema) Typed() bool { return len(s.Fields) > 0 }

// Layout errors of a typed payload (each matches ErrMalformedPayload).
var (
	errFieldShort  = &payloadError{"payload ends inside a declared field", nil}
	errFieldLong   = &payloadError{"str, bytes or array longer than its declared max", nil}
	errFieldString = &payloadError{"declared str is not UTF-8 without NUL", nil}
	errFieldFloat  = &payloadError{"declared f32 or vec3 is NaN or infinite", nil}
	errFieldTrail  = &payloadError{"bytes after the last declared field", nil}
)

// CheckFields checks p against a typed field list: every field present and
// within its bounds, every str valid UTF-8 without NUL, every f32 finite,
// every array count within its max, and nothing after the last field. It
// never allocates and never panics.
func CheckFields(fields []Field, p []byte) error {
	off := 0
	for i := range fields {
		f := &fields[i]
		var err error
		if f.Kind == KindArray {
			off, err = checkArray(f, p, off)
		} else {
			off, err = checkValue(f.Kind, f.Max, p, off)
		}
		if err != nil {
			return err
		}
	}
	if off != len(p) {
		return errFieldTrail
	}
	return nil
}

// checkArray checks an array field at off and returns the offset after it.
func checkArray(f *Field, p []byte, off int) (int, error) {
	if len(p)-off < 2 {
		return off, errFieldShort
	}
	n := int(binary.LittleEndian.Uint16(p[off:]))
	off += 2
	if n > int(f.Max) {
		return off, errFieldLong
	}
	for range n {
		var err error
		if off, err = checkValue(f.Elem, f.ElemMax, p, off); err != nil {
			return off, err
		}
	}
	return off, nil
}

// checkValue checks one value of kind k (not an array) at off and returns
// the offset after it.
func checkValue(k Kind, max uint16, p []byte, off int) (int, error) {
	left := len(p) - off
	if n := int(k.fixedSize()); n > 0 {
		if left < n {
			return off, errFieldShort
		}
		switch k {
		case KindF32:
			if !finiteBits(p[off:]) {
				return off, errFieldFloat
			}
		case KindVec3:
			if !finiteBits(p[off:]) || !finiteBits(p[off+4:]) || !finiteBits(p[off+8:]) {
				return off, errFieldFloat
			}
		}
		return off + n, nil
	}
	if left < 2 {
		return off, errFieldShort
	}
	n := int(binary.LittleEndian.Uint16(p[off:]))
	switch {
	case n > int(max):
		return off, errFieldLong
	case n > left-2:
		return off, errFieldShort
	}
	body := p[off+2 : off+2+n]
	if k == KindStr && !ValidUTF8NoNUL(body) {
		return off, errFieldString
	}
	return off + 2 + n, nil
}

func finiteBits(b []byte) bool {
	return finite32(math.Float32frombits(binary.LittleEndian.Uint32(b)))
}

// FieldsText renders a field list as a declaration reads, for logs and the
// console: "name str(32), hp u16, ids array(16) of u32".
func FieldsText(fields []Field) string {
	var b strings.Builder
	for i := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		f := &fields[i]
		b.WriteString(f.Name + " " + kindText(f.Kind, f.Max))
		if f.Kind == KindArray {
			b.WriteString(" of " + kindText(f.Elem, f.ElemMax))
		}
	}
	return b.String()
}

func kindText(k Kind, max uint16) string {
	if k.HasMax() || k == KindArray {
		return fmt.Sprintf("%s(%d)", k, max)
	}
	return k.String()
}

// Equal reports whether s and o are the same declaration, fields included
// (a Schema holds a slice, so == does not compile).
func (s Schema) Equal(o Schema) bool {
	return s.ID == o.ID && s.Name == o.Name && s.Direction == o.Direction && s.Channel == o.Channel &&
		s.MinLen == o.MinLen && s.MaxLen == o.MaxLen && s.StringFieldOffset == o.StringFieldOffset &&
		s.RequiresAdmitted == o.RequiresAdmitted && (s.Fields == nil) == (o.Fields == nil) && slices.Equal(s.Fields, o.Fields)
}
