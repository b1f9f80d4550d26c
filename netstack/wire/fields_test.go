package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// richFields uses every kind once, arrays of a fixed and of a sized kind.
var richFields = []Field{
	{Name: "flag", Kind: KindU8},
	{Name: "hp", Kind: KindU16},
	{Name: "score", Kind: KindU32},
	{Name: "delta", Kind: KindI32},
	{Name: "speed", Kind: KindF32},
	{Name: "pos", Kind: KindVec3},
	{Name: "name", Kind: KindStr, Max: 16},
	{Name: "blob", Kind: KindBytes, Max: 8},
	{Name: "ids", Kind: KindArray, Elem: KindU32, Max: 4},
	{Name: "names", Kind: KindArray, Elem: KindStr, ElemMax: 5, Max: 3},
}

func richValues() []any {
	return []any{uint8(1), uint16(2), uint32(3), int32(-4), float32(1.5), Vec3{1, 2, 3}, "ann", []byte{9, 8},
		[]any{uint32(7), uint32(8)}, []any{"a", "bc"}}
}

func TestTypedRegistrationDerivesSizes(t *testing.T) {
	reg := NewRegistry()
	s := Schema{ID: 1000, Name: "greet", Direction: ClientToServer, Channel: Reliable,
		Fields: []Field{{Name: "name", Kind: KindStr, Max: 32}}}
	if err := reg.Register("hello", s); err != nil {
		t.Fatal(err)
	}
	got, _, _ := reg.Lookup(1000)
	if got.MinLen != 2 || got.MaxLen != 34 || got.StringFieldOffset != 0 {
		t.Fatalf("derived %d..%d string at %d, want 2..34 at 0", got.MinLen, got.MaxLen, got.StringFieldOffset)
	}
	s2 := Schema{ID: 1001, Name: "rich", Direction: BothDirections, Channel: Reliable, Fields: richFields}
	if err := s2.Normalize(); err != nil {
		t.Fatal(err)
	}
	// 1+2+4+4+4+12 fixed, then str 2..18, bytes 2..10, ids 2..18, names 2..23
	if s2.MinLen != 27+8 || s2.MaxLen != 27+18+10+18+23 || s2.StringFieldOffset != 27 {
		t.Fatalf("rich: %d..%d str at %d", s2.MinLen, s2.MaxLen, s2.StringFieldOffset)
	}
	// A str after a variable field has no fixed offset.
	s3 := Schema{ID: 1002, Name: "late", Direction: ClientToServer, Fields: []Field{{Name: "b", Kind: KindBytes, Max: 3}, {Name: "s", Kind: KindStr, Max: 3}}}
	if err := s3.Normalize(); err != nil || s3.StringFieldOffset != NoStringFields {
		t.Fatalf("late: %v, offset %d", err, s3.StringFieldOffset)
	}
}

func TestTypedRegistrationRefusals(t *testing.T) {
	many := make([]Field, MaxFields+1)
	for i := range many {
		many[i] = Field{Name: "f" + strings.Repeat("x", i), Kind: KindU8}
	}
	cases := []struct {
		name   string
		fields []Field
		mod    func(*Schema)
		want   string
	}{
		{"no fields", []Field{}, nil, "1..32 fields"},
		{"too many", many, nil, "at most 32"},
		{"bad name", []Field{{Name: "1x", Kind: KindU8}}, nil, "not an identifier"},
		{"space in name", []Field{{Name: "a b", Kind: KindU8}}, nil, "not an identifier"},
		{"duplicate", []Field{{Name: "a", Kind: KindU8}, {Name: "a", Kind: KindU16}}, nil, "used twice"},
		{"unknown kind", []Field{{Name: "a", Kind: 10}}, nil, "kind 10"},
		{"str without max", []Field{{Name: "a", Kind: KindStr}}, nil, "needs a max"},
		{"u8 with max", []Field{{Name: "a", Kind: KindU8, Max: 3}}, nil, "takes no max"},
		{"array of arrays", []Field{{Name: "a", Kind: KindArray, Elem: KindArray, Max: 3}}, nil, "not array"},
		{"array without count", []Field{{Name: "a", Kind: KindArray, Elem: KindU8}}, nil, "max count"},
		{"array of str without max", []Field{{Name: "a", Kind: KindArray, Elem: KindStr, Max: 2}}, nil, "needs a max"},
		{"too big", []Field{{Name: "a", Kind: KindArray, Elem: KindStr, ElemMax: 1000, Max: 1000}}, nil, "above MAX_PAYLOAD"},
		{"min differs", []Field{{Name: "a", Kind: KindU8}}, func(s *Schema) { s.MinLen = 2 }, "min_len 2"},
		{"max differs", []Field{{Name: "a", Kind: KindU8}}, func(s *Schema) { s.MaxLen = 2 }, "max_len 2"},
		{"offset differs", []Field{{Name: "a", Kind: KindU8}, {Name: "s", Kind: KindStr, Max: 2}}, func(s *Schema) { s.StringFieldOffset = 3 }, "string_field_offset 3"},
	}
	for _, c := range cases {
		s := Schema{ID: 1000, Name: "t", Direction: ClientToServer, Channel: Reliable, Fields: c.fields}
		if c.mod != nil {
			c.mod(&s)
		}
		err := NewRegistry().Register("m", s)
		if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadSchema saying %q", c.name, err, c.want)
		}
	}
	// Given sizes that agree are fine.
	s := Schema{ID: 1000, Name: "t", Direction: ClientToServer, MinLen: 1, MaxLen: 1, StringFieldOffset: NoStringFields, Fields: []Field{{Name: "a", Kind: KindU8}}}
	if err := NewRegistry().Register("m", s); err != nil {
		t.Fatal(err)
	}
}

func TestValidateTypedLayout(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Register("m", Schema{ID: 1000, Name: "rich", Direction: BothDirections, Channel: Reliable, Fields: richFields}); err != nil {
		t.Fatal(err)
	}
	good, err := AppendFields(nil, richFields, richValues())
	if err != nil {
		t.Fatal(err)
	}
	h := Header{Type: 1000, Channel: Reliable}
	if err := reg.Validate(ClientToServer, &h, good); err != nil {
		t.Fatalf("good payload: %v", err)
	}
	vals, err := DecodeFields(richFields, good)
	if err != nil || !reflect.DeepEqual(vals, richValues()) {
		t.Fatalf("decoded %#v, %v", vals, err)
	}
	const strAt = 27
	mutate := func(f func(p []byte) []byte) []byte { return f(bytes.Clone(good)) }
	bad := map[string][]byte{
		"trailing byte":    append(bytes.Clone(good), 0),
		"truncated":        good[:len(good)-1],
		"NUL in str":       mutate(func(p []byte) []byte { p[strAt+2] = 0; return p }),
		"bad UTF-8":        mutate(func(p []byte) []byte { p[strAt+2] = 0xFF; return p }),
		"str over max":     mutate(func(p []byte) []byte { p[strAt] = 17; return p }),
		"NaN f32":          mutate(func(p []byte) []byte { copy(p[11:], []byte{0, 0, 0xC0, 0x7F}); return p }),
		"infinite vec3":    mutate(func(p []byte) []byte { copy(p[19:], []byte{0, 0, 0x80, 0x7F}); return p }),
		"array over count": mutate(func(p []byte) []byte { p[strAt+5+4] = 5; return p }),
	}
	for name, p := range bad {
		err := reg.Validate(ClientToServer, &h, p)
		if !errors.Is(err, ErrMalformedPayload) && !errors.Is(err, ErrBadSize) {
			t.Errorf("%s: %v, want a malformed payload", name, err)
		}
		if _, err := DecodeFields(richFields, p); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestAppendFieldsRefusesBadValues(t *testing.T) {
	f := []Field{{Name: "s", Kind: KindStr, Max: 3}}
	for _, v := range []any{"four", "a\x00", 3, nil} {
		if _, err := AppendFields(nil, f, []any{v}); !errors.Is(err, ErrFieldValue) {
			t.Errorf("%#v: %v", v, err)
		}
	}
	if _, err := AppendFields(nil, []Field{{Name: "x", Kind: KindF32}}, []any{float32(math.Inf(1))}); err == nil {
		t.Error("infinite float encoded")
	}
}

func TestModuleSchemasTypedRoundTrip(t *testing.T) {
	reg := NewRegistry()
	for _, s := range []Schema{
		{ID: 1000, Name: "greet", Direction: ClientToServer, Channel: Reliable, RequiresAdmitted: true, Fields: []Field{{Name: "name", Kind: KindStr, Max: 32}}},
		{ID: 1001, Name: "rich", Direction: BothDirections, Channel: ReliableOrdered, Fields: richFields},
		{ID: 1002, Name: "raw", Direction: ServerToClient, Channel: Unreliable, MinLen: 0, MaxLen: 10, StringFieldOffset: NoStringFields},
	} {
		if err := reg.Register("m", s); err != nil {
			t.Fatal(err)
		}
	}
	m := ModuleSchemas{Revision: reg.Revision(), Types: reg.ModuleSchemas()}
	p := AppendModuleSchemas(nil, &m)
	got, err := ParseModuleSchemas(p)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	// The greet entry, byte for byte as docs/protocol.md §10.2 lays it out.
	want := []byte{0xe8, 0x03, 1, 1, 2, 0, 0, 0, 34, 0, 0, 0, 0, 0, 0, 0, 0x03, 1, 0, 'm', 5, 0, 'g', 'r', 'e', 'e', 't',
		1, 4, 0, 'n', 'a', 'm', 'e', 7, 32, 0}
	if !bytes.Equal(p[6:6+len(want)], want) {
		t.Fatalf("greet entry\n got % x\nwant % x", p[6:6+len(want)], want)
	}
	// An entry whose sizes disagree with its fields is refused.
	c := m
	c.Types = append([]ModuleSchema(nil), m.Types...)
	c.Types[0].MaxLen = 33
	if _, err := ParseModuleSchemas(AppendModuleSchemas(nil, &c)); err == nil {
		t.Error("entry with sizes that disagree with its fields accepted")
	}
}

// FuzzCheckFields: a field list (encoded as in an announcement) and a
// payload. CheckFields never panics; a payload it accepts decodes, and
// re-encodes to the same bytes; DecodeFields refuses what it refuses.
func FuzzCheckFields(f *testing.F) {
	decl := func(fields []Field) []byte { w := Writer{}; appendFields(&w, fields); return w.b }
	good, _ := AppendFields(nil, richFields, richValues())
	f.Add(decl(richFields), good)
	f.Add(decl([]Field{{Name: "name", Kind: KindStr, Max: 32}}), []byte{3, 0, 'a', 'n', 'n'})
	f.Add(decl([]Field{{Name: "ids", Kind: KindArray, Elem: KindU16, Max: 2}}), []byte{3, 0, 1, 0, 2, 0, 3, 0})
	f.Fuzz(func(t *testing.T, d, p []byte) {
		r := NewReader(d)
		var e schemaEntry
		if ok := readEntryFields(&r, &e); r.HasError() || e.nfields == 0 {
			_ = ok
			return
		}
		fields := e.fields[:e.nfields]
		if _, err := fieldLayout(fields); err != nil {
			return
		}
		err := CheckFields(fields, p)
		vals, derr := DecodeFields(fields, p)
		if (err == nil) != (derr == nil) {
			t.Fatalf("CheckFields %v, DecodeFields %v", err, derr)
		}
		if err != nil {
			return
		}
		out, err := AppendFields(nil, fields, vals)
		if err != nil || !bytes.Equal(out, p) {
			t.Fatalf("re-encoding: %v\n in % x\nout % x", err, p, out)
		}
	})
}
