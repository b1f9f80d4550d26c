package wire

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// String screening of §1. Every function here reads its input in place and
// allocates nothing: they run on the receive path for every string of every
// packet.

// Length limits of the strings of §4, §5.4 and §9, in bytes.
const (
	MaxNameLen      = 32  // player, chat sender, entity type and field names
	MaxNameFieldLen = 64  // ClientFinished's name field (the rule allows 32)
	MaxTicketLen    = 256 // ClientFinished ticket
	MaxDetailLen    = 256 // Disconnect and ConnectRejected detail
)

// ValidUTF8NoNUL reports whether b is valid UTF-8 without a NUL byte: the rule
// every built-in str must pass (§1) and the screen of a module schema's string
// field (§10).
func ValidUTF8NoNUL(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// ValidName reports whether b is a valid name of §1: 1..maxLen bytes of UTF-8
// with no control character (category Cc, which includes NUL, tab and newline)
// and at least one character that is not Unicode White_Space.
func ValidName(b []byte, maxLen int) bool {
	if len(b) == 0 || len(b) > maxLen {
		return false
	}
	allSpace := true
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			return false // invalid encoding; an encoded U+FFFD is size 3 and valid
		}
		if isControl(r) {
			return false
		}
		if allSpace && !unicode.Is(unicode.White_Space, r) {
			allSpace = false
		}
		b = b[size:]
	}
	return !allSpace
}

// isControl reports whether r is in Unicode category Cc. The spec names the
// category, so test it rather than unicode.IsControl's documented Latin-1 shortcut
// (which happens to be the same set today).
func isControl(r rune) bool { return unicode.Is(unicode.Cc, r) }
