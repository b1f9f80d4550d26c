package mmoproto

import (
	"encoding/binary"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Register (1100, C→S) creates an account from a SCRAM-SHA-256 verifier the
// client computed; the password never travels. Answered by RegisterResult or
// Result (NameInvalid, AccountExists, IterationsTooLow, BadRequest,
// AlreadyLoggedIn, Internal).
type Register struct {
	RequestID  uint32
	Account    string // ≤ MaxNameField bytes
	Salt       [SaltLen]byte
	Iterations uint32
	StoredKey  [KeyLen]byte
	ServerKey  [KeyLen]byte
}

// Type returns TypeRegister.
func (*Register) Type() wire.MessageType { return TypeRegister }

// Append appends m's encoding to dst.
func (m *Register) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.Str(m.Account)
	w.Raw(m.Salt[:])
	w.U32(m.Iterations)
	w.Raw(m.StoredKey[:])
	w.Raw(m.ServerKey[:])
	return done(dst, &w)
}

func (m *Register) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	m.Account = readStr(r, MaxNameField)
	copy(m.Salt[:], r.Bytes(SaltLen))
	m.Iterations = r.U32()
	copy(m.StoredKey[:], r.Bytes(KeyLen))
	copy(m.ServerKey[:], r.Bytes(KeyLen))
}

// ParseRegister parses a Register payload.
func ParseRegister(p []byte) (Register, error) { return parseAs[Register](p) }

// RegisterResult (1101, S→C) confirms a registration with the account's
// canonical (lower-case) name.
type RegisterResult struct {
	RequestID uint32
	Account   string
}

// Type returns TypeRegisterResult.
func (*RegisterResult) Type() wire.MessageType { return TypeRegisterResult }

// Append appends m's encoding to dst.
func (m *RegisterResult) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.Str(m.Account)
	return done(dst, &w)
}

func (m *RegisterResult) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	m.Account = readStr(r, MaxNameField)
}

// ParseRegisterResult parses a RegisterResult payload.
func ParseRegisterResult(p []byte) (RegisterResult, error) { return parseAs[RegisterResult](p) }

// LoginStart (1102, C→S) carries the SCRAM client-first-message and the mmo
// protocol the client speaks. Answered by LoginChallenge or Result
// (Throttled, AlreadyLoggedIn, AuthFailed, BadRequest, ProtocolUnsupported).
type LoginStart struct {
	RequestID   uint32
	ClientFirst string // ≤ MaxSCRAMField bytes
	// Protocol is the mmo protocol the client speaks (docs/mmo.md §1.1), a
	// trailing u16; 0 leaves it out: a client of protocol 1, written before
	// the field existed.
	Protocol uint16
}

// Type returns TypeLoginStart.
func (*LoginStart) Type() wire.MessageType { return TypeLoginStart }

// Append appends m's encoding to dst.
func (m *LoginStart) Append(dst []byte) []byte {
	dst = appendIDStr(dst, m.RequestID, m.ClientFirst)
	if m.Protocol != 0 {
		dst = binary.LittleEndian.AppendUint16(dst, m.Protocol)
	}
	return dst
}

func (m *LoginStart) decode(r *wire.Reader) {
	m.RequestID, m.ClientFirst = r.U32(), readStr(r, MaxSCRAMField)
	if r.Remaining() == 2 {
		if m.Protocol = r.U16(); m.Protocol == 0 {
			r.Fail(errZeroProtocol)
		}
	}
}

// Speaks returns the mmo protocol the client stated: 1 when it stated none.
func (m *LoginStart) Speaks() uint16 { return max(m.Protocol, 1) }

var errZeroProtocol = &payloadError{"protocol 0 stated in LoginStart (leave the field out instead)", nil}

// ParseLoginStart parses a LoginStart payload.
func ParseLoginStart(p []byte) (LoginStart, error) { return parseAs[LoginStart](p) }

// LoginChallenge (1103, S→C) carries the SCRAM server-first-message.
type LoginChallenge struct {
	RequestID   uint32
	ServerFirst string
}

// Type returns TypeLoginChallenge.
func (*LoginChallenge) Type() wire.MessageType { return TypeLoginChallenge }

// Append appends m's encoding to dst.
func (m *LoginChallenge) Append(dst []byte) []byte {
	return appendIDStr(dst, m.RequestID, m.ServerFirst)
}

func (m *LoginChallenge) decode(r *wire.Reader) {
	m.RequestID, m.ServerFirst = r.U32(), readStr(r, MaxSCRAMField)
}

// ParseLoginChallenge parses a LoginChallenge payload.
func ParseLoginChallenge(p []byte) (LoginChallenge, error) { return parseAs[LoginChallenge](p) }

// LoginFinish (1104, C→S) carries the SCRAM client-final-message. Answered by
// LoginResult or Result (AuthFailed, Throttled, OutOfOrder, BadRequest).
type LoginFinish struct {
	RequestID   uint32
	ClientFinal string
}

// Type returns TypeLoginFinish.
func (*LoginFinish) Type() wire.MessageType { return TypeLoginFinish }

// Append appends m's encoding to dst.
func (m *LoginFinish) Append(dst []byte) []byte {
	return appendIDStr(dst, m.RequestID, m.ClientFinal)
}

func (m *LoginFinish) decode(r *wire.Reader) {
	m.RequestID, m.ClientFinal = r.U32(), readStr(r, MaxSCRAMField)
}

// ParseLoginFinish parses a LoginFinish payload.
func ParseLoginFinish(p []byte) (LoginFinish, error) { return parseAs[LoginFinish](p) }

// LoginResult (1105, S→C) confirms a login: the account's canonical name and
// the SCRAM server-final-message, which the client must verify (it proves the
// server holds the account's verifier).
type LoginResult struct {
	RequestID   uint32
	Account     string
	ServerFinal string
}

// Type returns TypeLoginResult.
func (*LoginResult) Type() wire.MessageType { return TypeLoginResult }

// Append appends m's encoding to dst.
func (m *LoginResult) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.Str(m.Account)
	w.Str(m.ServerFinal)
	return done(dst, &w)
}

func (m *LoginResult) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	m.Account = readStr(r, MaxNameField)
	m.ServerFinal = readStr(r, MaxSCRAMField)
}

// ParseLoginResult parses a LoginResult payload.
func ParseLoginResult(p []byte) (LoginResult, error) { return parseAs[LoginResult](p) }

// Logout (1106, C→S) ends the login (leaving the world first). Answered by
// Result (OK, NotLoggedIn).
type Logout struct{ RequestID uint32 }

// Type returns TypeLogout.
func (*Logout) Type() wire.MessageType { return TypeLogout }

// Append appends m's encoding to dst.
func (m *Logout) Append(dst []byte) []byte { return appendID(dst, m.RequestID) }

func (m *Logout) decode(r *wire.Reader) { m.RequestID = r.U32() }

// ParseLogout parses a Logout payload.
func ParseLogout(p []byte) (Logout, error) { return parseAs[Logout](p) }

// LoggedOut (1107, S→C, unsolicited) tells a client its login ended without
// its asking: see LoggedOutReason.
type LoggedOut struct {
	Reason LoggedOutReason // any byte parses; unknown reasons read as a plain logout
	Detail string          // ≤ MaxDetailField bytes, for the user
}

// Type returns TypeLoggedOut.
func (*LoggedOut) Type() wire.MessageType { return TypeLoggedOut }

// Append appends m's encoding to dst.
func (m *LoggedOut) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U8(uint8(m.Reason))
	w.Str(m.Detail)
	return done(dst, &w)
}

func (m *LoggedOut) decode(r *wire.Reader) {
	m.Reason = LoggedOutReason(r.U8())
	m.Detail = readStr(r, MaxDetailField)
}

// ParseLoggedOut parses a LoggedOut payload.
func ParseLoggedOut(p []byte) (LoggedOut, error) { return parseAs[LoggedOut](p) }

// appendID appends a bare request id: the whole payload of the requests that
// carry nothing else.
func appendID(dst []byte, id uint32) []byte {
	w := newWriter(dst)
	w.U32(id)
	return done(dst, &w)
}

// appendIDStr appends a request id and one str.
func appendIDStr(dst []byte, id uint32, s string) []byte {
	w := newWriter(dst)
	w.U32(id)
	w.Str(s)
	return done(dst, &w)
}
