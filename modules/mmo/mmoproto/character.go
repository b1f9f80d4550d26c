package mmoproto

import "github.com/sparkhost/sparkhost/netstack/wire"

// CharacterListRequest (1108, C→S) asks for the account's characters.
// Answered by CharacterList or Result (NotLoggedIn, Internal).
type CharacterListRequest struct{ RequestID uint32 }

// Type returns TypeCharacterListRequest.
func (*CharacterListRequest) Type() wire.MessageType { return TypeCharacterListRequest }

// Append appends m's encoding to dst.
func (m *CharacterListRequest) Append(dst []byte) []byte { return appendID(dst, m.RequestID) }

func (m *CharacterListRequest) decode(r *wire.Reader) { m.RequestID = r.U32() }

// ParseCharacterListRequest parses a CharacterListRequest payload.
func ParseCharacterListRequest(p []byte) (CharacterListRequest, error) {
	return parseAs[CharacterListRequest](p)
}

// CharacterInfo is one entry of CharacterList: a character and its saved
// position.
type CharacterInfo struct {
	Name string // ≤ MaxNameField bytes
	X, Y float32
}

// CharacterList (1109, S→C) lists the account's characters, oldest first.
type CharacterList struct {
	RequestID  uint32
	Characters []CharacterInfo // ≤ MaxListedCharacters
}

// Type returns TypeCharacterList.
func (*CharacterList) Type() wire.MessageType { return TypeCharacterList }

// Append appends m's encoding to dst.
func (m *CharacterList) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.U8(uint8(len(m.Characters)))
	for i := range m.Characters {
		c := &m.Characters[i]
		w.Str(c.Name)
		w.F32(c.X)
		w.F32(c.Y)
	}
	return done(dst, &w)
}

func (m *CharacterList) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	n := readCount(r, int(r.U8()), MaxListedCharacters, characterEntryMin)
	if n == 0 {
		return
	}
	m.Characters = make([]CharacterInfo, n)
	for i := range m.Characters {
		c := &m.Characters[i]
		c.Name = readStr(r, MaxNameField)
		c.X, c.Y = r.FiniteF32(), r.FiniteF32()
	}
}

// ParseCharacterList parses a CharacterList payload.
func ParseCharacterList(p []byte) (CharacterList, error) { return parseAs[CharacterList](p) }

// CharacterCreate (1110, C→S) creates a character for the account. Answered
// by Result (OK, NameInvalid, CharacterExists, TooManyCharacters,
// NotLoggedIn, Internal).
type CharacterCreate struct {
	RequestID uint32
	Name      string
}

// Type returns TypeCharacterCreate.
func (*CharacterCreate) Type() wire.MessageType { return TypeCharacterCreate }

// Append appends m's encoding to dst.
func (m *CharacterCreate) Append(dst []byte) []byte { return appendIDStr(dst, m.RequestID, m.Name) }

func (m *CharacterCreate) decode(r *wire.Reader) {
	m.RequestID, m.Name = r.U32(), readStr(r, MaxNameField)
}

// ParseCharacterCreate parses a CharacterCreate payload.
func ParseCharacterCreate(p []byte) (CharacterCreate, error) { return parseAs[CharacterCreate](p) }

// CharacterDelete (1111, C→S) deletes one of the account's characters.
// Answered by Result (OK, NoSuchCharacter, NotYourCharacter, AlreadyInWorld
// when it is the one being played, NotLoggedIn, Internal).
type CharacterDelete struct {
	RequestID uint32
	Name      string
}

// Type returns TypeCharacterDelete.
func (*CharacterDelete) Type() wire.MessageType { return TypeCharacterDelete }

// Append appends m's encoding to dst.
func (m *CharacterDelete) Append(dst []byte) []byte { return appendIDStr(dst, m.RequestID, m.Name) }

func (m *CharacterDelete) decode(r *wire.Reader) {
	m.RequestID, m.Name = r.U32(), readStr(r, MaxNameField)
}

// ParseCharacterDelete parses a CharacterDelete payload.
func ParseCharacterDelete(p []byte) (CharacterDelete, error) { return parseAs[CharacterDelete](p) }

// Enter (1112, C→S) enters the world with one of the account's characters.
// Answered by Entered or Result (NotLoggedIn, NoSuchCharacter,
// NotYourCharacter, AlreadyInWorld, Internal).
type Enter struct {
	RequestID uint32
	Name      string
}

// Type returns TypeEnter.
func (*Enter) Type() wire.MessageType { return TypeEnter }

// Append appends m's encoding to dst.
func (m *Enter) Append(dst []byte) []byte { return appendIDStr(dst, m.RequestID, m.Name) }

func (m *Enter) decode(r *wire.Reader) { m.RequestID, m.Name = r.U32(), readStr(r, MaxNameField) }

// ParseEnter parses an Enter payload.
func ParseEnter(p []byte) (Enter, error) { return parseAs[Enter](p) }

// Entered (1113, S→C) confirms Enter: the character's world id and position,
// and the world's parameters (area, speed in units/s, radii in units).
type Entered struct {
	RequestID      uint32
	ID             uint32
	X, Y           float32
	Width, Height  float32
	Speed          float32
	InterestRadius float32
	GreetRadius    float32
	Name           string
}

// Type returns TypeEntered.
func (*Entered) Type() wire.MessageType { return TypeEntered }

// Append appends m's encoding to dst.
func (m *Entered) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.U32(m.ID)
	for _, f := range [...]float32{m.X, m.Y, m.Width, m.Height, m.Speed, m.InterestRadius, m.GreetRadius} {
		w.F32(f)
	}
	w.Str(m.Name)
	return done(dst, &w)
}

func (m *Entered) decode(r *wire.Reader) {
	m.RequestID, m.ID = r.U32(), r.U32()
	for _, f := range [...]*float32{&m.X, &m.Y, &m.Width, &m.Height, &m.Speed, &m.InterestRadius, &m.GreetRadius} {
		*f = r.FiniteF32()
	}
	m.Name = readStr(r, MaxNameField)
}

// ParseEntered parses an Entered payload.
func ParseEntered(p []byte) (Entered, error) { return parseAs[Entered](p) }

// Leave (1114, C→S) leaves the world (the position is saved). Answered by
// Result (OK, NotInWorld).
type Leave struct{ RequestID uint32 }

// Type returns TypeLeave.
func (*Leave) Type() wire.MessageType { return TypeLeave }

// Append appends m's encoding to dst.
func (m *Leave) Append(dst []byte) []byte { return appendID(dst, m.RequestID) }

func (m *Leave) decode(r *wire.Reader) { m.RequestID = r.U32() }

// ParseLeave parses a Leave payload.
func ParseLeave(p []byte) (Leave, error) { return parseAs[Leave](p) }
