package mmoproto

import "github.com/sparkhost/sparkhost/netstack/wire"

// MoveIntent (1115, C→S) sets the movement direction: DX and DY finite and
// within -1..1, normalised by the server (so speed is fixed); 0, 0 stops.
// Answered by Result (OK, NotInWorld, BadRequest).
type MoveIntent struct {
	RequestID uint32
	DX, DY    float32
}

// Type returns TypeMoveIntent.
func (*MoveIntent) Type() wire.MessageType { return TypeMoveIntent }

// Append appends m's encoding to dst.
func (m *MoveIntent) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.F32(m.DX)
	w.F32(m.DY)
	return done(dst, &w)
}

func (m *MoveIntent) decode(r *wire.Reader) {
	m.RequestID, m.DX, m.DY = r.U32(), r.FiniteF32(), r.FiniteF32()
}

// ParseMoveIntent parses a MoveIntent payload; the range is the server's
// check (BadRequest), finiteness the parser's.
func ParseMoveIntent(p []byte) (MoveIntent, error) { return parseAs[MoveIntent](p) }

// Stop (1116, C→S) stops moving. Answered by Result (OK, NotInWorld).
type Stop struct{ RequestID uint32 }

// Type returns TypeStop.
func (*Stop) Type() wire.MessageType { return TypeStop }

// Append appends m's encoding to dst.
func (m *Stop) Append(dst []byte) []byte { return appendID(dst, m.RequestID) }

func (m *Stop) decode(r *wire.Reader) { m.RequestID = r.U32() }

// ParseStop parses a Stop payload.
func ParseStop(p []byte) (Stop, error) { return parseAs[Stop](p) }

// Where (1117, C→S) asks for the character's position. Answered by
// WhereResult or Result (NotInWorld).
type Where struct{ RequestID uint32 }

// Type returns TypeWhere.
func (*Where) Type() wire.MessageType { return TypeWhere }

// Append appends m's encoding to dst.
func (m *Where) Append(dst []byte) []byte { return appendID(dst, m.RequestID) }

func (m *Where) decode(r *wire.Reader) { m.RequestID = r.U32() }

// ParseWhere parses a Where payload.
func ParseWhere(p []byte) (Where, error) { return parseAs[Where](p) }

// WhereResult (1118, S→C): the character's world id, position and current
// unit direction (0, 0 when stopped).
type WhereResult struct {
	RequestID uint32
	ID        uint32
	X, Y      float32
	DX, DY    float32
}

// Type returns TypeWhereResult.
func (*WhereResult) Type() wire.MessageType { return TypeWhereResult }

// Append appends m's encoding to dst.
func (m *WhereResult) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.U32(m.ID)
	w.F32(m.X)
	w.F32(m.Y)
	w.F32(m.DX)
	w.F32(m.DY)
	return done(dst, &w)
}

func (m *WhereResult) decode(r *wire.Reader) {
	m.RequestID, m.ID = r.U32(), r.U32()
	m.X, m.Y, m.DX, m.DY = r.FiniteF32(), r.FiniteF32(), r.FiniteF32(), r.FiniteF32()
}

// ParseWhereResult parses a WhereResult payload.
func ParseWhereResult(p []byte) (WhereResult, error) { return parseAs[WhereResult](p) }

// PositionUpload (1119, C→S) is the older client-authoritative position
// upload. It is registered so that it is counted and answered, and it is
// always refused: Result (PositionUploadRefused). Its floats are not checked.
type PositionUpload struct {
	RequestID uint32
	X, Y      float32
}

// Type returns TypePositionUpload.
func (*PositionUpload) Type() wire.MessageType { return TypePositionUpload }

// Append appends m's encoding to dst.
func (m *PositionUpload) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.F32(m.X)
	w.F32(m.Y)
	return done(dst, &w)
}

func (m *PositionUpload) decode(r *wire.Reader) { m.RequestID, m.X, m.Y = r.U32(), r.F32(), r.F32() }

// ParsePositionUpload parses a PositionUpload payload.
func ParsePositionUpload(p []byte) (PositionUpload, error) { return parseAs[PositionUpload](p) }

// Appearance is one entry of Appear.
type Appearance struct {
	ID   uint32
	X, Y float32
	Name string // ≤ MaxNameField bytes
}

// Appear (1120, S→C, unsolicited): characters that entered the receiver's
// interest circle (including, once, the receiver's own character).
type Appear struct {
	Tick    uint32 // the world tick of the replication step (low 32 bits)
	Entries []Appearance
}

// Type returns TypeAppear.
func (*Appear) Type() wire.MessageType { return TypeAppear }

// Append appends m's encoding to dst.
func (m *Appear) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.Tick)
	writeAppearances(&w, m.Entries)
	return done(dst, &w)
}

func (m *Appear) decode(r *wire.Reader) {
	m.Tick = r.U32()
	m.Entries = readAppearances(r)
}

// ParseAppear parses an Appear payload.
func ParseAppear(p []byte) (Appear, error) { return parseAs[Appear](p) }

// Disappear (1121, S→C, unsolicited): characters that left the receiver's
// interest circle or the world.
type Disappear struct {
	Tick uint32
	IDs  []uint32
}

// Type returns TypeDisappear.
func (*Disappear) Type() wire.MessageType { return TypeDisappear }

// Append appends m's encoding to dst.
func (m *Disappear) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.Tick)
	writeIDs(&w, m.IDs)
	return done(dst, &w)
}

func (m *Disappear) decode(r *wire.Reader) {
	m.Tick = r.U32()
	m.IDs = readIDs(r)
}

// ParseDisappear parses a Disappear payload.
func ParseDisappear(p []byte) (Disappear, error) { return parseAs[Disappear](p) }

// Position is one entry of Positions.
type Position struct {
	ID   uint32
	X, Y float32
}

// Positions (1122, S→C, unsolicited): the new positions of characters in the
// receiver's interest circle that moved since the previous step (the
// receiver's own character included).
type Positions struct {
	Tick    uint32
	Entries []Position
}

// Type returns TypePositions.
func (*Positions) Type() wire.MessageType { return TypePositions }

// Append appends m's encoding to dst.
func (m *Positions) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.Tick)
	writePositions(&w, m.Entries)
	return done(dst, &w)
}

func (m *Positions) decode(r *wire.Reader) {
	m.Tick = r.U32()
	m.Entries = readPositions(r)
}

// ParsePositions parses a Positions payload.
func ParsePositions(p []byte) (Positions, error) { return parseAs[Positions](p) }

// WorldUpdate (1131, S→C, unsolicited): one replication step for the
// receiver — what Appear, Positions and Disappear carry, in one message and
// applied in that order: the characters that came into its interest
// circle, the new positions of those in it that moved, and those that
// left. A step too large for one message is split over several (each list
// in order: the appearances first).
type WorldUpdate struct {
	Tick      uint32 // the world tick of the replication step (low 32 bits)
	Appear    []Appearance
	Positions []Position
	Disappear []uint32
}

// Type returns TypeWorldUpdate.
func (*WorldUpdate) Type() wire.MessageType { return TypeWorldUpdate }

// The sizes of WorldUpdate's parts, for a sender that splits a step: the
// fixed fields (the tick and the three counts), an entry of each list.
const (
	WorldUpdateHeader  = worldUpdateMin
	PositionEntrySize  = positionEntry
	DisappearEntrySize = disappearEntry
)

// AppearanceSize is the encoded size of an appearance with this name.
func AppearanceSize(name string) int { return appearEntryMin + len(name) }

// Size is the length of m's encoding.
func (m *WorldUpdate) Size() int {
	n := WorldUpdateHeader + PositionEntrySize*len(m.Positions) + DisappearEntrySize*len(m.Disappear)
	for i := range m.Appear {
		n += AppearanceSize(m.Appear[i].Name)
	}
	return n
}

// Append appends m's encoding to dst.
func (m *WorldUpdate) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.Tick)
	writeAppearances(&w, m.Appear)
	writePositions(&w, m.Positions)
	writeIDs(&w, m.Disappear)
	return done(dst, &w)
}

func (m *WorldUpdate) decode(r *wire.Reader) {
	m.Tick = r.U32()
	m.Appear = readAppearances(r)
	m.Positions = readPositions(r)
	m.Disappear = readIDs(r)
}

// The three replication lists, each a u16 count and its entries, as
// Appear, Positions, Disappear and WorldUpdate carry them. A count is
// checked against the bytes left before anything is allocated.

func writeAppearances(w *wire.Writer, entries []Appearance) {
	w.U16(uint16(len(entries)))
	for i := range entries {
		e := &entries[i]
		w.U32(e.ID)
		w.F32(e.X)
		w.F32(e.Y)
		w.Str(e.Name)
	}
}

func readAppearances(r *wire.Reader) []Appearance {
	n := readCount(r, int(r.U16()), wire.MaxPayload, appearEntryMin)
	if n == 0 {
		return nil
	}
	entries := make([]Appearance, n)
	for i := range entries {
		e := &entries[i]
		e.ID, e.X, e.Y = r.U32(), r.FiniteF32(), r.FiniteF32()
		e.Name = readStr(r, MaxNameField)
	}
	return entries
}

func writePositions(w *wire.Writer, entries []Position) {
	w.U16(uint16(len(entries)))
	for _, e := range entries {
		w.U32(e.ID)
		w.F32(e.X)
		w.F32(e.Y)
	}
}

func readPositions(r *wire.Reader) []Position {
	n := readCount(r, int(r.U16()), wire.MaxPayload, positionEntry)
	if n == 0 {
		return nil
	}
	entries := make([]Position, n)
	for i := range entries {
		entries[i] = Position{ID: r.U32(), X: r.FiniteF32(), Y: r.FiniteF32()}
	}
	return entries
}

func writeIDs(w *wire.Writer, ids []uint32) {
	w.U16(uint16(len(ids)))
	for _, id := range ids {
		w.U32(id)
	}
}

func readIDs(r *wire.Reader) []uint32 {
	n := readCount(r, int(r.U16()), wire.MaxPayload, disappearEntry)
	if n == 0 {
		return nil
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = r.U32()
	}
	return ids
}

// ParseWorldUpdate parses a WorldUpdate payload.
func ParseWorldUpdate(p []byte) (WorldUpdate, error) { return parseAs[WorldUpdate](p) }

// Greet (1123, C→S) greets the character named Target. Answered by Result
// (OK, NotInWorld, TargetNotInWorld, GreetSelf, TooFar).
type Greet struct {
	RequestID uint32
	Target    string
}

// Type returns TypeGreet.
func (*Greet) Type() wire.MessageType { return TypeGreet }

// Append appends m's encoding to dst.
func (m *Greet) Append(dst []byte) []byte { return appendIDStr(dst, m.RequestID, m.Target) }

func (m *Greet) decode(r *wire.Reader) { m.RequestID, m.Target = r.U32(), readStr(r, MaxNameField) }

// ParseGreet parses a Greet payload.
func ParseGreet(p []byte) (Greet, error) { return parseAs[Greet](p) }

// Greeting (1124, S→C, unsolicited) delivers a greeting to its target and to
// the characters near the greeter.
type Greeting struct {
	FromID, ToID     uint32
	FromName, ToName string
}

// Type returns TypeGreeting.
func (*Greeting) Type() wire.MessageType { return TypeGreeting }

// Append appends m's encoding to dst.
func (m *Greeting) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.FromID)
	w.U32(m.ToID)
	w.Str(m.FromName)
	w.Str(m.ToName)
	return done(dst, &w)
}

func (m *Greeting) decode(r *wire.Reader) {
	m.FromID, m.ToID = r.U32(), r.U32()
	m.FromName = readStr(r, MaxNameField)
	m.ToName = readStr(r, MaxNameField)
}

// ParseGreeting parses a Greeting payload.
func ParseGreeting(p []byte) (Greeting, error) { return parseAs[Greeting](p) }
