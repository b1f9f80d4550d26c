package mmoproto

import "github.com/sparkhost/sparkhost/netstack/wire"

// Result (1125, S→C) answers a request that has no specific result, and every
// request that failed.
type Result struct {
	RequestID    uint32
	Code         Code   // any value parses; show an unknown one by its number
	RetryAfterMS uint32 // with Throttled: how long the lockout lasts; else 0
	Detail       string // ≤ MaxDetailField bytes, for the user; may be empty
}

// Type returns TypeResult.
func (*Result) Type() wire.MessageType { return TypeResult }

// Append appends m's encoding to dst.
func (m *Result) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.U16(uint16(m.Code))
	w.U32(m.RetryAfterMS)
	w.Str(m.Detail)
	return done(dst, &w)
}

func (m *Result) decode(r *wire.Reader) {
	m.RequestID, m.Code, m.RetryAfterMS = r.U32(), Code(r.U16()), r.U32()
	m.Detail = readStr(r, MaxDetailField)
}

// ParseResult parses a Result payload.
func ParseResult(p []byte) (Result, error) { return parseAs[Result](p) }

// Err returns nil for OK and otherwise an *Error carrying the code.
func (m *Result) Err() error {
	if m.Code == OK {
		return nil
	}
	return &Error{Code: m.Code, Detail: m.Detail}
}

// Error is a non-OK Result as a Go error, for a client to return and a
// server handler to produce: errors.As recovers the code.
type Error struct {
	Code   Code
	Detail string
}

// Error returns the code's name and the detail (or the code's text).
func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code.String() + ": " + e.Detail
	}
	return e.Code.String() + ": " + e.Code.Text()
}
