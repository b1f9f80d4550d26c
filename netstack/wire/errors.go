package wire

import "errors"

// Errors of Registry.Validate and the payload parsers. Every one of them means
// "drop, count malformedDropped" (§3), except ErrNameInvalid, which the server
// answers with Disconnect(NameInvalid) (§5.4). Match them with errors.Is: a
// parser returns a more specific error that matches ErrMalformedPayload (and,
// where one caused it, the Reader error such as ErrOverrun or ErrTrailing).
var (
	// ErrUnknownType: the type is neither built in nor registered (§3, §10).
	ErrUnknownType = errors.New("wire: message type is neither built in nor registered")
	// ErrTypeNotLoaded: a module type whose module is not loaded now (it
	// unloaded, crashed and is restarting, or is reloading); §10.
	ErrTypeNotLoaded = errors.New("wire: message type belongs to a module that is not loaded now")
	// ErrTypeFailed: a module type whose module failed for good (only an
	// operator starts it again): refused NotLoaded at once, never held.
	ErrTypeFailed = errors.New("wire: message type belongs to a module that failed and is not coming back by itself")
	// ErrWrongDirection: the type may not travel in this direction (§4).
	ErrWrongDirection = errors.New("wire: message type not allowed in this direction")
	// ErrWrongChannel: the packet's channel differs from the type's (§4).
	ErrWrongChannel = errors.New("wire: message type not allowed on this channel")
	// ErrBadSize: the payload size is outside the type's size rule (§4, §10).
	ErrBadSize = errors.New("wire: payload size outside the type's size rule")
	// ErrMalformedPayload: the payload fails its schema (§1, §4, §9, §10).
	ErrMalformedPayload = errors.New("wire: malformed payload")
	// ErrNameInvalid: a ClientFinished whose structure parsed carries a name
	// that breaks the name rule of §5.4. It does not match ErrMalformedPayload,
	// because the server must answer it instead of dropping it.
	ErrNameInvalid = errors.New("wire: ClientFinished name breaks the name rule (1..32 bytes UTF-8, no control character, not all white space)")
)

// payloadError is a malformed payload together with the rule it broke. The
// values are built once, so the per-packet path reports a precise cause without
// allocating.
type payloadError struct {
	rule  string
	cause error // a Reader error behind it, or nil
}

func (e *payloadError) Error() string { return "wire: malformed payload: " + e.rule }

// Is makes errors.Is match ErrMalformedPayload and the Reader error behind e
// without an Unwrap that would allocate a slice.
func (e *payloadError) Is(target error) bool {
	return target == ErrMalformedPayload || (e.cause != nil && target == e.cause)
}

var (
	errTruncated     = &payloadError{"payload ends inside a field", ErrOverrun}
	errTrailing      = &payloadError{"trailing bytes after the last field", ErrTrailing}
	errBool          = &payloadError{"bool byte is not 0 or 1", ErrBadBool}
	errNonFinite     = &payloadError{"float is NaN or infinite", ErrNonFinite}
	errBadString     = &payloadError{"string is not valid UTF-8 or contains NUL", nil}
	errStringLong    = &payloadError{"string longer than its field allows", nil}
	errBadName       = &payloadError{"name is empty, too long, not UTF-8, has a control character or is all white space", nil}
	errBadText       = &payloadError{"chat text is empty, over 256 bytes, not UTF-8 or has a control character", nil}
	errSenderSet     = &payloadError{"a client's ChatMessage carries a non-empty sender", nil}
	errTicketLong    = &payloadError{"ticket longer than 256 bytes", nil}
	errOutOfRange    = &payloadError{"value outside its range", nil}
	errUnknownEnum   = &payloadError{"enumeration value not defined by the protocol", nil}
	errReservedBits  = &payloadError{"reserved bits set", nil}
	errZeroRate      = &payloadError{"tick or replication rate is 0", nil}
	errTooManyFields = &payloadError{"entity type has more than 64 fields", nil}
	errFieldCount    = &payloadError{"field_count differs from popcount(fields_mask)", nil}
	errBeyondSchema  = &payloadError{"mask has bits beyond the type's field count", nil}
	errTypeMismatch  = &payloadError{"type_id differs from the schema's", nil}
	errScoreCount    = &payloadError{"ScoreUpdate length is not 2 + 16·n", nil}
	errPlainOnly     = &payloadError{"type travels only in plain handshake frames", nil}
	errStringOffset  = &payloadError{"screened string does not lie within the payload", nil}
)

// finish turns the Reader's final state into a parser result: nil when every
// byte was consumed without error, else a payloadError.
func finish(r *Reader) error {
	switch err := r.Finish(); err {
	case nil:
		return nil
	case ErrOverrun:
		return errTruncated
	case ErrTrailing:
		return errTrailing
	case ErrBadBool:
		return errBool
	case ErrNonFinite:
		return errNonFinite
	default:
		return err // a payloadError latched with Reader.Fail
	}
}

// readStr reads a built-in str of at most max bytes that must be UTF-8 without
// NUL (§1). The result aliases the Reader's input.
func readStr(r *Reader, max int) []byte {
	b := r.StrBytes()
	if len(b) > max {
		r.Fail(errStringLong)
	} else if !ValidUTF8NoNUL(b) {
		r.Fail(errBadString)
	}
	return b
}

// readName reads a str that must be a valid name of at most max bytes (§1).
func readName(r *Reader, max int) []byte {
	b := r.StrBytes()
	if !r.HasError() && !ValidName(b, max) {
		r.Fail(errBadName)
	}
	return b
}

// cloneBytes copies b so a parsed message never aliases the receive buffer,
// which the caller reuses for the next datagram. Empty stays nil.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
