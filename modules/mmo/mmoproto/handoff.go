package mmoproto

import "github.com/sparkhost/sparkhost/netstack/wire"

// HandoffKey (1126, C→S) registers the session's handoff key: the Ed25519
// public key that the gateway tickets of this session's handoffs are bound
// to (docs/mmo.md §13). Answered by Result (OK, NotLoggedIn). A session
// without one is never handed over: its character stops at area borders.
type HandoffKey struct {
	RequestID uint32
	Key       [KeyLen]byte
}

// Type returns TypeHandoffKey.
func (*HandoffKey) Type() wire.MessageType { return TypeHandoffKey }

// Append appends m's encoding to dst.
func (m *HandoffKey) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.Raw(m.Key[:])
	return done(dst, &w)
}

func (m *HandoffKey) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	copy(m.Key[:], r.Bytes(KeyLen))
}

// Handoff (1127, S→C, unsolicited): the character crossed into the area
// Area, whose server is at Addr with identity Pin; its state is committed
// and this session is logged out. The client connects there (pinning Pin)
// and presents Ticket, with its proof, in the new session's ClientFinished
// (docs/protocol.md §3.13).
type Handoff struct {
	Area   string // ≤ MaxAreaField
	Addr   string // HOST:PORT, ≤ MaxAddrField
	Pin    string // "ed25519:…", ≤ MaxPinField
	Ticket []byte // the signed ticket, ≤ MaxTicketField
}

// Type returns TypeHandoff.
func (*Handoff) Type() wire.MessageType { return TypeHandoff }

// Append appends m's encoding to dst.
func (m *Handoff) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.Str(m.Area)
	w.Str(m.Addr)
	w.Str(m.Pin)
	w.U16(uint16(len(m.Ticket)))
	w.Raw(m.Ticket)
	return done(dst, &w)
}

func (m *Handoff) decode(r *wire.Reader) {
	m.Area = readStr(r, MaxAreaField)
	m.Addr = readStr(r, MaxAddrField)
	m.Pin = readStr(r, MaxPinField)
	n := int(r.U16())
	if n > MaxTicketField {
		r.Fail(errStringLong)
		return
	}
	if b := r.Bytes(n); n > 0 {
		m.Ticket = append([]byte(nil), b...)
	}
}

// TicketResult (1128, S→C, unsolicited) answers the gateway ticket of the
// session's ClientFinished: OK with the canonical account (the session is
// logged in; Entered with request id 0 follows), or the refusal's code
// (the session stays anonymous: log in with the password).
type TicketResult struct {
	Code    Code
	Account string // ≤ MaxNameField; empty on refusal
	Detail  string // ≤ MaxDetailField
}

// Type returns TypeTicketResult.
func (*TicketResult) Type() wire.MessageType { return TypeTicketResult }

// Append appends m's encoding to dst.
func (m *TicketResult) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U16(uint16(m.Code))
	w.Str(m.Account)
	w.Str(m.Detail)
	return done(dst, &w)
}

func (m *TicketResult) decode(r *wire.Reader) {
	m.Code = Code(r.U16())
	m.Account = readStr(r, MaxNameField)
	m.Detail = readStr(r, MaxDetailField)
}
