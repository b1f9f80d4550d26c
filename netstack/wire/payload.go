package wire

import "sync"

// Helpers for payload codecs defined outside this package (the game
// messages of sim/msg): they build on the same Reader, Writer and error
// rules as the transport's own messages, so every payload parser reports a
// malformed payload the same way.

// AppendWriter returns a Writer that appends to dst (dst's contents are
// kept; compare NewWriter, which starts at dst[:0]).
func AppendWriter(dst []byte) Writer { return Writer{b: dst} }

// Malformed returns a malformed-payload error for a broken rule: it matches
// ErrMalformedPayload (and cause, when not nil) with errors.Is. Build these
// once, as package variables, so that a parser reports them without
// allocating.
func Malformed(rule string, cause error) error { return &payloadError{rule: rule, cause: cause} }

// Finish turns a Reader's final state into a parser result: nil when every
// byte was consumed without error, else an error matching
// ErrMalformedPayload (an error latched with Reader.Fail is returned as is).
func Finish(r *Reader) error { return finish(r) }

// Text reads a str of at most max bytes that must be valid UTF-8 without
// NUL (§1); a failure is latched. The result aliases the input.
func (r *Reader) Text(max int) []byte { return readStr(r, max) }

// Name reads a str that must be a valid name of at most max bytes (§1); a
// failure is latched. The result aliases the input.
func (r *Reader) Name(max int) []byte { return readName(r, max) }

// FiniteVec3 reads a vec3 whose components must all be finite; a NaN or an
// infinity latches ErrNonFinite.
func (r *Reader) FiniteVec3() Vec3 {
	v := r.Vec3()
	if !v.IsFinite() {
		r.Fail(ErrNonFinite)
		return Vec3{}
	}
	return v
}

// typeNames names the message types defined outside this package
// (RegisterTypeName), for MessageType.String.
var typeNames struct {
	sync.RWMutex
	m map[MessageType]string
}

// RegisterTypeName names a built-in type defined by a layer above the
// transport (sim/msg names the game messages), so that logs print its name.
func RegisterTypeName(t MessageType, name string) {
	typeNames.Lock()
	defer typeNames.Unlock()
	if typeNames.m == nil {
		typeNames.m = make(map[MessageType]string)
	}
	typeNames.m[t] = name
}

func registeredName(t MessageType) (string, bool) {
	typeNames.RLock()
	defer typeNames.RUnlock()
	n, ok := typeNames.m[t]
	return n, ok
}

// The errors Reader.Text and Reader.Name latch, for callers that match them.
var (
	// ErrTextTooLong: a str longer than its field allows.
	ErrTextTooLong error = errStringLong
	// ErrTextInvalid: a str that is not valid UTF-8 or contains NUL.
	ErrTextInvalid error = errBadString
)

// ErrNameRule is what Reader.Name latches for a str that breaks the name
// rule of §1 (empty, too long, not UTF-8, a control character, or all white
// space).
var ErrNameRule error = errBadName
