package wire

import "slices"

// ModuleSchemas (type 21, protocol v4, docs/protocol.md §10.2): the server's
// table of module message types, sent to a client after its admission and
// again whenever a module loads, unloads, crashes or reloads. It describes a
// Registry, so its codec lives beside it; when to send it is the host's
// decision.
//
//	revision u32, count u16, count × entry (ascending id, no repeats)
//	entry = id u16 (≥ 1000), direction u8 (1..3), channel u8 (0..2),
//	        min_len u32, max_len u32 (min ≤ max ≤ 65453),
//	        string_field_offset u32, flags u8 (bit 0 requires_admitted,
//	        bit 1 typed), owner str, name str (names: 1..64 bytes, §1's
//	        name rule), and when typed: field_count u8 (1..32), then
//	        field_count × field
//	field = name str (identifier, 1..32 bytes, unique), kind u8 (1..9),
//	        max u16 when kind is str or bytes (1..65535),
//	        when kind is array: elem u8 (1..8), elem_max u16 when elem is
//	        str or bytes, max_count u16 (1..65535)

// TypeModuleSchemas is the schema announcement (ServerToClient, Reliable,
// v4 sessions only; the revision orders announcements).
const TypeModuleSchemas MessageType = 21

// MaxSchemaNameLen bounds a module type's name and its owner's name.
const MaxSchemaNameLen = 64

// schemaEntryFixed is an entry's size without its two names' bytes.
const schemaEntryFixed = 2 + 1 + 1 + 4 + 4 + 4 + 1 + 2 + 2

// fieldEntryMin is the smallest encoded field: a 1-byte name and a kind.
const fieldEntryMin = 2 + 1 + 1

// Entry flags of the announcement.
const (
	schemaFlagAdmitted = 1 << 0 // requires_admitted
	schemaFlagTyped    = 1 << 1 // a field list follows the names
)

// ModuleSchema is one module message type with the module that owns it.
type ModuleSchema struct {
	Schema
	Owner string
}

// ModuleSchemas is the payload of the announcement.
type ModuleSchemas struct {
	// Revision increases with every change of the server's module types: a
	// client keeps the table of the highest revision it received.
	Revision uint32
	Types    []ModuleSchema // ascending ID
}

// AppendModuleSchemas appends the encoding of m. Types must be sorted by ID
// (Registry.ModuleSchemas returns them so).
func AppendModuleSchemas(dst []byte, m *ModuleSchemas) []byte {
	w := Writer{b: dst}
	w.U32(m.Revision)
	w.U16(uint16(len(m.Types)))
	for i := range m.Types {
		t := &m.Types[i]
		w.U16(uint16(t.ID))
		w.U8(uint8(t.Direction))
		w.U8(uint8(t.Channel))
		w.U32(t.MinLen)
		w.U32(t.MaxLen)
		w.U32(t.StringFieldOffset)
		var flags uint8
		if t.RequiresAdmitted {
			flags |= schemaFlagAdmitted
		}
		if t.Fields != nil {
			flags |= schemaFlagTyped
		}
		w.U8(flags)
		w.Str(t.Owner)
		w.Str(t.Name)
		if t.Fields != nil {
			appendFields(&w, t.Fields)
		}
	}
	return w.b
}

// appendFields appends a typed entry's field list.
func appendFields(w *Writer, fields []Field) {
	w.U8(uint8(len(fields)))
	for i := range fields {
		f := &fields[i]
		w.Str(f.Name)
		w.U8(uint8(f.Kind))
		switch {
		case f.Kind.HasMax():
			w.U16(f.Max)
		case f.Kind == KindArray:
			w.U8(uint8(f.Elem))
			if f.Elem.HasMax() {
				w.U16(f.ElemMax)
			}
			w.U16(f.Max)
		}
	}
}

var (
	errSchemaOrder = &payloadError{"schema entries not in ascending id order, repeated, or below 1000", nil}
	errSchemaRule  = &payloadError{"schema entry breaks the registration rules", nil}
	errSchemaCount = &payloadError{"more schema entries than the payload can hold", nil}
)

// ParseModuleSchemas parses an announcement: every entry must satisfy the
// rules of Registry.Register (§10), ids ascending without repeats, and
// nothing may follow the last entry. The result does not alias p.
func ParseModuleSchemas(p []byte) (ModuleSchemas, error) {
	var m ModuleSchemas
	err := scanModuleSchemas(p, func(e *schemaEntry) {
		s := e.schema
		s.Name = string(e.name)
		if e.flags&schemaFlagTyped != 0 {
			s.Fields = make([]Field, e.nfields)
			for i := range s.Fields {
				s.Fields[i] = e.fields[i]
				s.Fields[i].Name = string(e.fieldNames[i])
			}
		}
		m.Types = append(m.Types, ModuleSchema{Schema: s, Owner: string(e.owner)})
	})
	if err != nil {
		return ModuleSchemas{}, err
	}
	m.Revision = uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
	return m, nil
}

// CheckModuleSchemas is the allocation-free check of an announcement.
func CheckModuleSchemas(p []byte) error { return scanModuleSchemas(p, nil) }

// schemaEntry is one decoded entry; owner, name and the field names alias
// the payload. The fields of a typed entry are decoded into the fixed
// array (their Name left empty), so checking allocates nothing.
type schemaEntry struct {
	schema      Schema
	owner, name []byte
	flags       uint8
	nfields     int
	fields      [MaxFields]Field
	fieldNames  [MaxFields][]byte
}

// scanModuleSchemas checks an announcement, decoding each entry into one
// reused value; visit, when not nil, sees every valid entry in order.
func scanModuleSchemas(p []byte, visit func(*schemaEntry)) error {
	r := NewReader(p)
	r.U32()
	n := int(r.U16())
	if !r.HasError() && n > r.Remaining()/schemaEntryFixed {
		return errSchemaCount // judged before any entry is decoded
	}
	prev := -1
	var e schemaEntry
	for range n {
		readSchemaEntry(&r, &e)
		if r.HasError() {
			break
		}
		if int(e.schema.ID) <= prev || e.schema.ID < FirstUserDefined {
			r.Fail(errSchemaOrder)
			break
		}
		prev = int(e.schema.ID)
		e.schema.Name = "-" // checkRules wants a name; the real one is screened here
		if !ValidName(e.owner, MaxSchemaNameLen) || !ValidName(e.name, MaxSchemaNameLen) ||
			e.flags&^(schemaFlagAdmitted|schemaFlagTyped) != 0 ||
			string(e.owner) == BuiltinOwner ||
			checkRules("announced", &e.schema) != nil {
			r.Fail(errSchemaRule)
			break
		}
		if e.flags&schemaFlagTyped != 0 && !readEntryFields(&r, &e) {
			r.Fail(errSchemaRule)
			break
		}
		if visit != nil {
			visit(&e)
		}
	}
	return finish(&r)
}

func readSchemaEntry(r *Reader, e *schemaEntry) {
	e.schema = Schema{ID: MessageType(r.U16()), Direction: Direction(r.U8()), Channel: Channel(r.U8())}
	e.schema.MinLen, e.schema.MaxLen, e.schema.StringFieldOffset = r.U32(), r.U32(), r.U32()
	e.flags = r.U8()
	e.schema.RequiresAdmitted = e.flags&schemaFlagAdmitted != 0
	e.owner, e.name = r.StrBytes(), r.StrBytes()
	e.nfields = 0
}

// readEntryFields reads and checks a typed entry's field list: 1..32
// fields, each name a unique identifier, the kinds and maxima valid, and
// the entry's size rules exactly the ones the fields imply. A short read
// is latched in r; false means the list breaks a rule.
func readEntryFields(r *Reader, e *schemaEntry) bool {
	n := int(r.U8())
	if r.HasError() {
		return true // the overrun is latched
	}
	if n == 0 || n > MaxFields || n > r.Remaining()/fieldEntryMin {
		return false
	}
	for i := range n {
		name := r.StrBytes()
		f := Field{Kind: Kind(r.U8())}
		switch {
		case f.Kind.HasMax():
			f.Max = r.U16()
		case f.Kind == KindArray:
			f.Elem = Kind(r.U8())
			if f.Elem.HasMax() {
				f.ElemMax = r.U16()
			}
			f.Max = r.U16()
		}
		if r.HasError() {
			return true
		}
		if !ValidFieldName(name) {
			return false
		}
		for j := range i {
			if string(e.fieldNames[j]) == string(name) {
				return false
			}
		}
		e.fields[i], e.fieldNames[i] = f, name
	}
	e.nfields = n
	l, err := fieldLayout(e.fields[:n])
	return err == nil && l.max <= MaxPayload && uint64(e.schema.MinLen) == l.min &&
		uint64(e.schema.MaxLen) == l.max && e.schema.StringFieldOffset == l.strOff
}

// ModuleSchemas returns the module types now registered, with their owners,
// in ascending id order.
func (r *Registry) ModuleSchemas() []ModuleSchema {
	var out []ModuleSchema
	for _, t := range r.types() {
		if t.owner == BuiltinOwner || t.gone {
			continue
		}
		out = append(out, ModuleSchema{Schema: t.schema, Owner: t.owner})
	}
	slices.SortFunc(out, func(a, b ModuleSchema) int { return int(a.ID) - int(b.ID) })
	return out
}
