package mmoproto

import (
	"errors"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// ErrMalformed is matched by every parse error.
var ErrMalformed = errors.New("mmoproto: malformed payload")

// payloadError is a malformed payload with the rule it broke; the values are
// built once so a parse failure does not allocate.
type payloadError struct {
	rule  string
	cause error // the wire.Reader error behind it, or nil
}

func (e *payloadError) Error() string { return "mmoproto: malformed payload: " + e.rule }

func (e *payloadError) Is(target error) bool {
	return target == ErrMalformed || (e.cause != nil && target == e.cause)
}

var (
	errTruncated   = &payloadError{"payload ends inside a field", wire.ErrOverrun}
	errTrailing    = &payloadError{"trailing bytes after the last field", wire.ErrTrailing}
	errNonFinite   = &payloadError{"position or direction is NaN or infinite", wire.ErrNonFinite}
	errBadString   = &payloadError{"string is not valid UTF-8 or contains NUL", nil}
	errStringLong  = &payloadError{"string longer than its field allows", nil}
	errCount       = &payloadError{"list count exceeds its bound or the bytes that remain", nil}
	errUnknownType = &payloadError{"not an mmo message type", nil}
)

// decoder reads a message's fields; errors latch in the Reader.
type decoder interface{ decode(r *wire.Reader) }

// parseAs decodes p as an M and requires every byte to be consumed.
func parseAs[M any, P interface {
	*M
	decoder
}](p []byte) (M, error) {
	var m M
	r := wire.NewReader(p)
	P(&m).decode(&r)
	if err := finish(&r); err != nil {
		var zero M
		return zero, err
	}
	return m, nil
}

func finish(r *wire.Reader) error {
	switch err := r.Finish(); err {
	case nil:
		return nil
	case wire.ErrOverrun:
		return errTruncated
	case wire.ErrTrailing:
		return errTrailing
	case wire.ErrNonFinite:
		return errNonFinite
	default:
		return err // a payloadError latched with Reader.Fail
	}
}

// readStr reads a str of at most limit bytes that must be UTF-8 without NUL,
// and copies it.
func readStr(r *wire.Reader, limit int) string {
	b := r.StrBytes()
	switch {
	case len(b) > limit:
		r.Fail(errStringLong)
		return ""
	case !wire.ValidUTF8NoNUL(b):
		r.Fail(errBadString)
		return ""
	}
	return string(b)
}

// readCount checks a list count n against limit entries and against the
// bytes that remain for entries of at least entryMin bytes, before anything
// is allocated.
func readCount(r *wire.Reader, n int, limit, entryMin int) int {
	if r.HasError() {
		return 0
	}
	if n > limit || n*entryMin > r.Remaining() {
		r.Fail(errCount)
		return 0
	}
	return n
}

// newWriter returns a Writer that writes into dst's spare capacity; done
// appends what it wrote to dst (a copy onto itself when it fitted).
func newWriter(dst []byte) wire.Writer { return wire.NewWriter(dst[len(dst):]) }

func done(dst []byte, w *wire.Writer) []byte { return append(dst, w.Bytes()...) }
