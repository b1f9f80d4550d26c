// Package tsgen generates TypeScript codecs for a server's module messages
// from the schema export (`sparkhost schema export`, format
// "sparkhost-schemas/1"): one interface per message, encode and decode
// functions that check every bound, the ids, channels and schemas as
// constants, and a decode dispatcher. The generated file imports the
// client runtime in clients/typescript/src (Reader, Writer, MessageSchema).
package tsgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/sparkhost/sparkhost/module/schemajson"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Format is the schema export format this generator reads.
const Format = "sparkhost-schemas/1"

// maxPayload is the protocol's largest payload (docs/protocol.md §2).
const maxPayload = 65453

// Bounds of a typed declaration (docs/protocol.md §10.1).
const (
	maxFields    = 32
	maxFieldName = 32
	noString     = 0xFFFFFFFF
)

// sequencePrefix is the length prefix of a bytes field and the count prefix
// of an array field, in bytes: a u16 like str's (the runtime's
// SEQUENCE_PREFIX_BYTES; change both together).
const sequencePrefix = 2

// DefaultRuntimeImport is the module specifier of the runtime in generated code.
const DefaultRuntimeImport = "./sparkhost"

// Options adjust the generated code.
type Options struct {
	// RuntimeImport is the import path of the client runtime (src/index.ts);
	// DefaultRuntimeImport when empty.
	RuntimeImport string
}

type export struct {
	Format   *string   `json:"format"`
	Messages []message `json:"messages"`
}

type message struct {
	ID               *int     `json:"id"`
	Name             string   `json:"name"`
	Owner            string   `json:"owner"`
	Direction        string   `json:"direction"`
	Channel          string   `json:"channel"`
	MinLen           *int     `json:"min_len"`
	MaxLen           *int     `json:"max_len"`
	RequiresAdmitted *bool    `json:"requires_admitted"`
	StringOffset     *int     `json:"string_offset"`
	Fields           *[]field `json:"fields"`
}

type field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Max      *int   `json:"max"`
	Of       *elem  `json:"of"`
	MaxCount *int   `json:"max_count"`
}

type elem struct {
	Type string `json:"type"`
	Max  *int   `json:"max"`
}

// reserved are the identifiers a generated file declares or imports besides
// the per-message ones.
var reserved = []string{"Reader", "Writer", "WireError", "Channel", "Direction", "MessageSchema", "Vec3", "Kind",
	"NO_STRING_FIELD", "readSequencePrefix", "writeSequencePrefix", "Decoded", "Sender", "SCHEMAS", "decode",
	"checkSize", "checkArray", "at", "M"}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fixed sizes of the scalar types.
var scalarSize = map[string]int{"u8": 1, "u16": 2, "u32": 4, "i32": 4, "f32": 4, "vec3": 12}

var directions = map[string]int{"c2s": 1, "s2c": 2, "both": 3}
var channels = map[string]string{"unreliable": "Channel.Unreliable", "reliable": "Channel.Reliable", "reliable_ordered": "Channel.ReliableOrdered"}

// Generate returns the TypeScript module for a schema export, importing the
// runtime from DefaultRuntimeImport.
func Generate(schemasJSON []byte) ([]byte, error) {
	return GenerateWith(schemasJSON, Options{})
}

// GenerateWith is Generate with options.
func GenerateWith(schemasJSON []byte, opt Options) ([]byte, error) {
	msgs, err := parse(schemasJSON)
	if err != nil {
		return nil, err
	}
	if opt.RuntimeImport == "" {
		opt.RuntimeImport = DefaultRuntimeImport
	}
	return emit(msgs, opt), nil
}

// checked is a validated message with its generated names.
type checked struct {
	message
	id, minLen, maxLen  int
	typeName, constName string
	typed               bool
	fields              []field
	stringOffset        int64 // noString when there is none
}

func parse(data []byte) ([]checked, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ex export
	if err := dec.Decode(&ex); err != nil {
		return nil, fmt.Errorf("schema export: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schema export: data after the JSON object")
	}
	if ex.Format == nil {
		return nil, fmt.Errorf("schema export: no \"format\" (want %q)", Format)
	}
	if *ex.Format != Format {
		return nil, fmt.Errorf("schema export: format %q, this generator reads %q", *ex.Format, Format)
	}
	var out []checked
	ids := map[int]string{}
	names := map[string]string{} // generated identifier → message name
	for _, r := range reserved {
		names[r] = "(the runtime or the generated helpers)"
	}
	for i, m := range ex.Messages {
		c, err := check(m)
		if err != nil {
			if m.Name != "" {
				return nil, fmt.Errorf("message %q: %w", m.Name, err)
			}
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if other, ok := ids[c.id]; ok {
			return nil, fmt.Errorf("message %q: id %d is also %q", m.Name, c.id, other)
		}
		ids[c.id] = m.Name
		for _, ident := range []string{c.typeName, c.typeName + "Schema", c.constName} {
			if other, ok := names[ident]; ok {
				return nil, fmt.Errorf("message %q: its TypeScript name %s collides with message %q's", m.Name, ident, other)
			}
			names[ident] = m.Name
		}
		out = append(out, c)
	}
	// The server's own reader of the format is the last word: whatever the
	// registry would refuse is refused here too, so generated code never
	// describes a message the server does not accept.
	if _, err := schemajson.DecodeBytes(data); err != nil {
		return nil, fmt.Errorf("schema export: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

func check(m message) (checked, error) {
	c := checked{message: m}
	if m.ID == nil {
		return c, errors.New("no id")
	}
	c.id = *m.ID
	if c.id < 1000 || c.id > 65535 {
		return c, fmt.Errorf("id %d: module ids are 1000..65535", c.id)
	}
	if !identifier.MatchString(m.Name) || len(m.Name) > 64 {
		return c, fmt.Errorf("name %q: the generator needs an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes)", m.Name)
	}
	if !wire.ValidName([]byte(m.Owner), 64) || m.Owner == wire.BuiltinOwner { // the §1 name rule, as the registry applies it
		return c, fmt.Errorf("owner %q: a module name of 1..64 bytes of UTF-8 without control characters, not only white space, not \"builtin\"", m.Owner)
	}
	if _, ok := directions[m.Direction]; !ok {
		return c, fmt.Errorf("direction %q: one of c2s, s2c, both", m.Direction)
	}
	if _, ok := channels[m.Channel]; !ok {
		return c, fmt.Errorf("channel %q: one of unreliable, reliable, reliable_ordered", m.Channel)
	}
	if m.MinLen == nil || m.MaxLen == nil {
		return c, errors.New("min_len and max_len are required")
	}
	c.minLen, c.maxLen = *m.MinLen, *m.MaxLen
	if c.minLen < 0 || c.minLen > c.maxLen || c.maxLen > maxPayload {
		return c, fmt.Errorf("lengths %d..%d: need 0 ≤ min_len ≤ max_len ≤ %d", c.minLen, c.maxLen, maxPayload)
	}
	if m.RequiresAdmitted == nil {
		return c, errors.New("requires_admitted is required")
	}
	if m.StringOffset != nil && (*m.StringOffset < 0 || *m.StringOffset+2 > c.maxLen) {
		return c, fmt.Errorf("string_offset %d: its 2-byte length must fit max_len %d", *m.StringOffset, c.maxLen)
	}
	c.stringOffset = noString
	if m.StringOffset != nil {
		c.stringOffset = int64(*m.StringOffset)
	}
	c.typeName, c.constName = pascal(m.Name), upperSnake(m.Name)
	if m.Fields == nil {
		return c, nil
	}
	c.typed, c.fields = true, *m.Fields
	if len(c.fields) < 1 || len(c.fields) > maxFields {
		return c, fmt.Errorf("%d fields: a typed message declares 1..%d (leave \"fields\" out for an untyped one)", len(c.fields), maxFields)
	}
	seen := map[string]bool{}
	lo, hi := 0, 0
	strOff, fixed := int64(noString), true
	for _, f := range c.fields {
		if !identifier.MatchString(f.Name) || len(f.Name) > maxFieldName {
			return c, fmt.Errorf("field name %q: an identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d bytes)", f.Name, maxFieldName)
		}
		if seen[f.Name] {
			return c, fmt.Errorf("field %q appears twice", f.Name)
		}
		seen[f.Name] = true
		flo, fhi, err := checkField(f)
		if err != nil {
			return c, fmt.Errorf("field %q: %w", f.Name, err)
		}
		if f.Type == "str" && fixed && strOff == noString {
			strOff = int64(lo)
		}
		fixed = fixed && flo == fhi
		lo, hi = lo+flo, hi+fhi
	}
	// A typed message's size rules are derived from its fields (§10.1): the
	// export must carry exactly those, as the server's registry requires.
	switch {
	case hi > maxPayload:
		return c, fmt.Errorf("fields take up to %d bytes, above %d", hi, maxPayload)
	case lo != c.minLen || hi != c.maxLen:
		return c, fmt.Errorf("fields take %d..%d bytes, but min_len..max_len is %d..%d (a typed message's sizes are its fields')", lo, hi, c.minLen, c.maxLen)
	case strOff != c.stringOffset:
		want := "absent"
		if strOff != noString {
			want = fmt.Sprint(strOff)
		}
		return c, fmt.Errorf("string_offset must be %s: the offset of the first str when every field before it has a fixed size", want)
	}
	return c, nil
}

// checkField validates one field and returns its encoded size bounds.
func checkField(f field) (lo, hi int, err error) {
	if f.Type == "array" {
		if f.Max != nil {
			return 0, 0, errors.New("an array has max_count, not max")
		}
		if f.Of == nil {
			return 0, 0, errors.New("an array needs \"of\" (its element type)")
		}
		if f.Of.Type == "array" {
			return 0, 0, errors.New("arrays of arrays are not a schema type")
		}
		if f.MaxCount == nil || *f.MaxCount < 1 || *f.MaxCount > 65535 {
			return 0, 0, errors.New("an array needs max_count 1..65535")
		}
		_, ehi, err := sized(f.Of.Type, f.Of.Max)
		if err != nil {
			return 0, 0, fmt.Errorf("element: %w", err)
		}
		return sequencePrefix, sequencePrefix + *f.MaxCount*ehi, nil
	}
	if f.Of != nil || f.MaxCount != nil {
		return 0, 0, fmt.Errorf("\"of\" and \"max_count\" belong to arrays, not %s", f.Type)
	}
	return sized(f.Type, f.Max)
}

func sized(typ string, max *int) (lo, hi int, err error) {
	if n, ok := scalarSize[typ]; ok {
		if max != nil {
			return 0, 0, fmt.Errorf("%s takes no max", typ)
		}
		return n, n, nil
	}
	switch typ {
	case "str", "bytes":
		if max == nil || *max < 1 || *max > 65535 {
			return 0, 0, fmt.Errorf("%s needs max 1..65535", typ)
		}
		return 2, 2 + *max, nil
	}
	return 0, 0, fmt.Errorf("unknown type %q (u8 u16 u32 i32 f32 vec3 str bytes array)", typ)
}

// pascal turns hello_greet into HelloGreet.
func pascal(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	s := b.String()
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "M" + s
	}
	return s
}

// upperSnake turns hello_greet or helloGreet into HELLO_GREET.
func upperSnake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' && i > 0 && name[i-1] != '_' && !(name[i-1] >= 'A' && name[i-1] <= 'Z') {
			b.WriteByte('_')
		}
		b.WriteString(strings.ToUpper(string(r)))
	}
	return strings.Trim(b.String(), "_") + "_ID"
}

func lit(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
