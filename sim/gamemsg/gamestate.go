package gamemsg

import "github.com/sparkhost/sparkhost/netstack/wire"

// GameStateSync (§9.2): the server's first message to an admitted client,
// carrying the session settings and the entity type schemas that
// EntitySpawn and EntityStateUpdate are decoded with.

// MaxFields is the largest field_count of an entity type: one bit per field in
// a u64 mask.
const MaxFields = 64

// GameStateSync is the payload of GameStateSync (type 14, at least 26 bytes).
type GameStateSync struct {
	ClientID        uint32  // the receiving client's own id
	ServerTime      float32 // seconds since the server process started
	TickRate        uint16  // Hz, > 0
	ReplicationRate uint16  // Hz, > 0
	ServerName      string  // ≤ 64 bytes of UTF-8 without NUL
	MOTD            string  // ≤ 256 bytes of UTF-8 without NUL
	Map             string  // ≤ 64 bytes of UTF-8 without NUL
	Mode            GameMode
	MatchState      MatchState
	TimeRemaining   float32 // seconds
	Types           []EntityTypeSchema
}

// EntityTypeSchema describes one replicated entity type: its fields, in bit
// order of the masks of EntitySpawn and EntityStateUpdate.
type EntityTypeSchema struct {
	TypeID uint16
	Name   string        // a valid name of ≤ 32 bytes
	Fields []FieldSchema // at most 64; Fields[i] is bit i of a mask
}

// FieldSchema describes one field of an entity type.
type FieldSchema struct {
	Name       string // a valid name of ≤ 32 bytes
	Kind       FieldKind
	Visibility Visibility
}

// Smallest encodings, used to bound counts against the bytes left before
// anything is allocated.
const (
	minTypeSchemaLen  = 2 + 2 + 1 // type_id, empty name, field_count
	minFieldSchemaLen = 2 + 1 + 1 // empty name, kind, visibility
)

// AppendGameStateSync appends the encoding of m to dst.
func AppendGameStateSync(dst []byte, m *GameStateSync) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.ClientID)
	w.F32(m.ServerTime)
	w.U16(m.TickRate)
	w.U16(m.ReplicationRate)
	w.Str(m.ServerName)
	w.Str(m.MOTD)
	w.Str(m.Map)
	w.U8(uint8(m.Mode))
	w.U8(uint8(m.MatchState))
	w.F32(m.TimeRemaining)
	w.U16(uint16(len(m.Types)))
	for i := range m.Types {
		t := &m.Types[i]
		w.U16(t.TypeID)
		w.Str(t.Name)
		w.U8(uint8(len(t.Fields)))
		for _, f := range t.Fields {
			w.Str(f.Name)
			w.U8(uint8(f.Kind))
			w.U8(uint8(f.Visibility))
		}
	}
	return w.Bytes()
}

// ParseGameStateSync parses a GameStateSync payload with the limits of §9.2.
func ParseGameStateSync(p []byte) (GameStateSync, error) {
	var m GameStateSync
	r := wire.NewReader(p)
	readGameStateSync(&r, &m)
	if err := wire.Finish(&r); err != nil {
		return GameStateSync{}, err
	}
	return m, nil
}

// scanGameStateSync is the allocation-free check of Registry.Validate.
func scanGameStateSync(p []byte) error {
	r := wire.NewReader(p)
	readGameStateSync(&r, nil)
	return wire.Finish(&r)
}

// readGameStateSync walks the payload and applies every rule; it fills m only
// when m is not nil, so the validation path builds no strings or slices.
func readGameStateSync(r *wire.Reader, m *GameStateSync) {
	var hdr GameStateSync
	hdr.ClientID = r.U32()
	hdr.ServerTime = r.FiniteF32()
	hdr.TickRate = r.U16()
	hdr.ReplicationRate = r.U16()
	if !r.HasError() && (hdr.TickRate == 0 || hdr.ReplicationRate == 0) {
		r.Fail(errZeroRate)
	}
	serverName := r.Text(MaxServerNameLen)
	motd := r.Text(MaxMOTDLen)
	mapName := r.Text(MaxMapLen)
	hdr.Mode = GameMode(r.U8())
	hdr.MatchState = MatchState(r.U8())
	if !hdr.Mode.Valid() || !hdr.MatchState.Valid() {
		r.Fail(errUnknownEnum)
	}
	hdr.TimeRemaining = r.FiniteF32()
	n := int(r.U16())
	if n*minTypeSchemaLen > r.Remaining() {
		r.Fail(errTruncated)
	}
	if r.HasError() {
		return
	}
	if m != nil {
		*m = hdr
		m.ServerName, m.MOTD, m.Map = string(serverName), string(motd), string(mapName)
		if n > 0 {
			m.Types = make([]EntityTypeSchema, n)
		}
	}
	for i := 0; i < n && !r.HasError(); i++ {
		var t *EntityTypeSchema
		if m != nil {
			t = &m.Types[i]
		}
		readTypeSchema(r, t)
	}
}

// readTypeSchema reads one EntityTypeSchema, filling t when it is not nil.
func readTypeSchema(r *wire.Reader, t *EntityTypeSchema) {
	typeID := r.U16()
	name := r.Name(wire.MaxNameLen)
	n := int(r.U8())
	switch {
	case n > MaxFields:
		r.Fail(errTooManyFields)
	case n*minFieldSchemaLen > r.Remaining():
		r.Fail(errTruncated)
	}
	if r.HasError() {
		return
	}
	if t != nil {
		t.TypeID, t.Name = typeID, string(name)
		if n > 0 {
			t.Fields = make([]FieldSchema, n)
		}
	}
	for i := 0; i < n && !r.HasError(); i++ {
		fname := r.Name(wire.MaxNameLen)
		f := FieldSchema{Kind: FieldKind(r.U8()), Visibility: Visibility(r.U8())}
		if !f.Kind.Valid() || !f.Visibility.Valid() {
			r.Fail(errUnknownEnum)
		}
		if t != nil && !r.HasError() {
			f.Name = string(fname)
			t.Fields[i] = f
		}
	}
}
