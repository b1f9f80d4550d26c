// Package trust owns the server identity and the client's trust store of
// protocol-v3.md §12: the server's Ed25519 key file, the pin text that names a
// public key, and the client's known_hosts file with trust on first use.
//
// It never overwrites an identity or a recorded key, never accepts a key file
// that others can read, and never turns a damaged known_hosts into an empty one
// (that would silently re-open every pinned server to trust on first use).
// Checking the handshake signature is the caller's job: §5.3 says a key may be
// recorded only after its signature verified.
package trust

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// PinPrefix opens every pin.
const PinPrefix = "ed25519:"

// pinKeyLen is the length of 32 bytes in base64url without padding.
const pinKeyLen = 43

// ErrBadPin is wrapped by every ParsePin error.
var ErrBadPin = errors.New("trust: bad pin")

// Pin returns the pin of an Ed25519 public key: "ed25519:" followed by the key in
// base64url without padding (43 characters). Like crypto/ed25519, it panics if
// pub is not 32 bytes long: that is a programming error, not input.
func Pin(pub []byte) string {
	if len(pub) != 32 {
		panic(fmt.Sprintf("trust: Pin of a %d-byte key, want 32", len(pub)))
	}
	return PinPrefix + base64.RawURLEncoding.EncodeToString(pub)
}

// ParsePin parses the text Pin produces, and only that text: the exact prefix,
// 43 characters of the base64url alphabet, no padding, and a last character
// whose unused low bits are zero (so each key has exactly one pin).
func ParsePin(s string) ([32]byte, error) {
	var key [32]byte
	bad := func(format string, args ...any) ([32]byte, error) {
		return [32]byte{}, fmt.Errorf("%w %q: "+format+"; a pin is \"ed25519:\" followed by 43 base64url characters",
			append([]any{ErrBadPin, s}, args...)...)
	}
	text, ok := strings.CutPrefix(s, PinPrefix)
	if !ok {
		return bad("does not start with %q", PinPrefix)
	}
	if strings.Contains(text, "=") {
		return bad("has '=' padding (pins are base64url without padding)")
	}
	if len(text) != pinKeyLen {
		return bad("key is %d characters, want %d", len(text), pinKeyLen)
	}
	for i := 0; i < len(text); i++ {
		if !isBase64URL(text[i]) {
			return bad("character %q is not base64url (A-Z a-z 0-9 - _)", rune(text[i]))
		}
	}
	n, err := base64.RawURLEncoding.Strict().Decode(key[:], []byte(text))
	if err != nil || n != len(key) {
		return bad("last character is not a canonical encoding")
	}
	return key, nil
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
