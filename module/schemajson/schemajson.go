// Package schemajson is the JSON form of a server's module message schemas
// (docs/schemas.md), format "sparkhost-schemas/1": what `sparkhost schema
// export` writes and what client code generators read. Encode turns
// registry schemas into it; Decode reads it back strictly (unknown keys,
// unknown types and declarations the registry would refuse are errors), so
// an export round-trips to the schemas it came from.
package schemajson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Format is the value of the "format" key.
const Format = "sparkhost-schemas/1"

// File is the whole document.
type File struct {
	Format   string    `json:"format"`
	Messages []Message `json:"messages"`
}

// Message is one module message type.
type Message struct {
	ID               uint16  `json:"id"`
	Name             string  `json:"name"`
	Owner            string  `json:"owner"`
	Direction        string  `json:"direction"` // "c2s", "s2c" or "both"
	Channel          string  `json:"channel"`   // "unreliable", "reliable" or "reliable_ordered"
	MinLen           uint32  `json:"min_len"`
	MaxLen           uint32  `json:"max_len"`
	RequiresAdmitted bool    `json:"requires_admitted"`
	StringOffset     *uint32 `json:"string_offset,omitempty"` // absent: no screened string
	Fields           []Field `json:"fields,omitempty"`        // absent: an untyped message
}

// Field is a typed field, or (inside "of", without a name) an array's
// element type.
type Field struct {
	Name     string `json:"name,omitempty"`
	Type     string `json:"type"`                // u8 u16 u32 i32 f32 vec3 str bytes array
	Max      uint16 `json:"max,omitempty"`       // str, bytes: the most bytes
	Of       *Field `json:"of,omitempty"`        // array: the element type
	MaxCount uint16 `json:"max_count,omitempty"` // array: the most elements
}

var (
	directionNames = map[wire.Direction]string{wire.ClientToServer: "c2s", wire.ServerToClient: "s2c", wire.BothDirections: "both"}
	channelNames   = map[wire.Channel]string{wire.Unreliable: "unreliable", wire.Reliable: "reliable", wire.ReliableOrdered: "reliable_ordered"}
)

// Encode returns the document of schemas (in ascending id order).
func Encode(schemas []wire.ModuleSchema) File {
	f := File{Format: Format, Messages: []Message{}}
	for _, s := range schemas {
		m := Message{ID: uint16(s.ID), Name: s.Name, Owner: s.Owner, Direction: directionNames[s.Direction],
			Channel: channelNames[s.Channel], MinLen: s.MinLen, MaxLen: s.MaxLen, RequiresAdmitted: s.RequiresAdmitted}
		if s.StringFieldOffset != wire.NoStringFields {
			off := s.StringFieldOffset
			m.StringOffset = &off
		}
		for _, fd := range s.Fields {
			m.Fields = append(m.Fields, encodeField(fd))
		}
		f.Messages = append(f.Messages, m)
	}
	slices.SortFunc(f.Messages, func(a, b Message) int { return int(a.ID) - int(b.ID) })
	return f
}

func encodeField(fd wire.Field) Field {
	out := Field{Name: fd.Name, Type: fd.Kind.String()}
	switch {
	case fd.Kind.HasMax():
		out.Max = fd.Max
	case fd.Kind == wire.KindArray:
		out.MaxCount = fd.Max
		out.Of = &Field{Type: fd.Elem.String(), Max: fd.ElemMax}
	}
	return out
}

// Write writes the document of schemas as indented JSON with a final
// newline.
func Write(w io.Writer, schemas []wire.ModuleSchema) error {
	b, err := json.MarshalIndent(Encode(schemas), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrFormat is wrapped by every error of Decode.
var ErrFormat = errors.New("schemajson: not a valid sparkhost-schemas/1 document")

// Decode reads a document and returns its schemas in ascending id order.
// Every message must be one the registry accepts (each is registered in a
// scratch registry under its owner), with sizes and string offset that are
// exactly the ones its fields imply when it is typed.
func Decode(r io.Reader) ([]wire.ModuleSchema, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the document", ErrFormat)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrFormat, f.Format, Format)
	}
	reg := wire.NewRegistry()
	out := make([]wire.ModuleSchema, 0, len(f.Messages))
	for i, m := range f.Messages {
		s, err := decodeMessage(&m)
		if err == nil {
			err = reg.Register(m.Owner, s.Schema)
		}
		if err == nil {
			// Register derived the sizes of a typed schema; they must be the ones written.
			if got, _, _ := reg.Lookup(s.ID); !got.Equal(s.Schema) {
				err = fmt.Errorf("min_len, max_len or string_offset is not what its fields imply (%d..%d)", got.MinLen, got.MaxLen)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: messages[%d] (%q): %v", ErrFormat, i, m.Name, err)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b wire.ModuleSchema) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// DecodeBytes is Decode of b.
func DecodeBytes(b []byte) ([]wire.ModuleSchema, error) { return Decode(bytes.NewReader(b)) }

func decodeMessage(m *Message) (wire.ModuleSchema, error) {
	s := wire.ModuleSchema{Owner: m.Owner, Schema: wire.Schema{ID: wire.MessageType(m.ID), Name: m.Name,
		MinLen: m.MinLen, MaxLen: m.MaxLen, RequiresAdmitted: m.RequiresAdmitted, StringFieldOffset: wire.NoStringFields}}
	var ok bool
	if s.Direction, ok = lookup(directionNames, m.Direction); !ok {
		return s, fmt.Errorf(`direction %q is not "c2s", "s2c" or "both"`, m.Direction)
	}
	if s.Channel, ok = lookup(channelNames, m.Channel); !ok {
		return s, fmt.Errorf(`channel %q is not "unreliable", "reliable" or "reliable_ordered"`, m.Channel)
	}
	if m.StringOffset != nil {
		s.StringFieldOffset = *m.StringOffset
	}
	if m.Fields != nil {
		s.Fields = make([]wire.Field, len(m.Fields))
		for i := range m.Fields {
			fd, err := decodeField(&m.Fields[i])
			if err != nil {
				return s, fmt.Errorf("fields[%d] (%q): %v", i, m.Fields[i].Name, err)
			}
			s.Fields[i] = fd
		}
	}
	return s, nil
}

func decodeField(f *Field) (wire.Field, error) {
	k, ok := wire.ParseKind(f.Type)
	if !ok {
		return wire.Field{}, fmt.Errorf("type %q is not u8, u16, u32, i32, f32, vec3, str, bytes or array", f.Type)
	}
	out := wire.Field{Name: f.Name, Kind: k, Max: f.Max}
	switch {
	case k == wire.KindArray:
		if f.Of == nil || f.Max != 0 {
			return out, errors.New(`an array has "of" and "max_count", not "max"`)
		}
		if f.Of.Name != "" || f.Of.Of != nil || f.Of.MaxCount != 0 {
			return out, errors.New(`an array's "of" is {"type": ...} with "max" for str or bytes`)
		}
		ek, ok := wire.ParseKind(f.Of.Type)
		if !ok || ek == wire.KindArray {
			return out, fmt.Errorf("element type %q is not u8, u16, u32, i32, f32, vec3, str or bytes", f.Of.Type)
		}
		out.Max, out.Elem, out.ElemMax = f.MaxCount, ek, f.Of.Max
	case f.Of != nil || f.MaxCount != 0:
		return out, fmt.Errorf(`a %s has no "of" or "max_count"`, k)
	}
	return out, nil
}

func lookup[K comparable](names map[K]string, s string) (K, bool) {
	for k, n := range names {
		if n == s {
			return k, true
		}
	}
	var zero K
	return zero, false
}
