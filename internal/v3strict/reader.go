package v3strict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
)

// reader reads a payload field by field; the first short read sets err
// and every later read returns zero.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("payload ends inside a field")

func (r *reader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// f32 reads a float, which must be finite (§1).
func (r *reader) f32(field string) float32 {
	v := math.Float32frombits(r.u32())
	if r.err == nil && (math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)) {
		r.err = fmt.Errorf("%s is not finite", field)
	}
	return v
}

// str reads a NetBuffer string's bytes (checking the length against the
// bytes left before taking them).
func (r *reader) str() []byte {
	n := int(r.u16())
	return r.take(n)
}

// text reads a str of at most max bytes of valid UTF-8 without NUL.
func (r *reader) text(field string, max int) string {
	b := r.str()
	if r.err == nil && (len(b) > max || !utf8.Valid(b) || hasNUL(b)) {
		r.err = fmt.Errorf("%s %q: not ≤ %d bytes of UTF-8 without NUL", field, b, max)
	}
	return string(b)
}

// name reads a str under the name rule of §1: 1..max bytes of UTF-8, no
// NUL or control character, not all white space.
func (r *reader) name(field string, max int) string {
	b := r.str()
	if r.err == nil && !validName(b, max) {
		r.err = fmt.Errorf("%s %q breaks the name rule (1..%d bytes of UTF-8, no control character, not all white space)", field, b, max)
	}
	return string(b)
}

// finish reports a short read, or trailing bytes after the last field.
func (r *reader) finish() error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the last field", len(r.b))
	}
	return nil
}

func hasNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// validName is §1's name rule.
func validName(b []byte, max int) bool {
	if len(b) == 0 || len(b) > max || !utf8.Valid(b) {
		return false
	}
	blank := true
	for _, r := range string(b) {
		if unicode.Is(unicode.Cc, r) {
			return false
		}
		if !unicode.Is(unicode.White_Space, r) {
			blank = false
		}
	}
	return !blank
}

// validChatText is §4's chat text: 1..256 bytes of UTF-8, no control character.
func validChatText(b []byte) bool {
	if len(b) == 0 || len(b) > 256 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.Is(unicode.Cc, r) {
			return false
		}
	}
	return true
}
