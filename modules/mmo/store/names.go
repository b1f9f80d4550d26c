package store

import (
	"errors"
	"strings"
)

// Name rules. Both kinds of name are unique without regard to case; the
// lower-case form is the key.
const (
	AccountNameMin   = 3
	AccountNameMax   = 24
	CharacterNameMin = 3
	CharacterNameMax = 16
)

var (
	// ErrAccountNameInvalid: not 3..24 of a-z, A-Z, 0-9 and _.
	ErrAccountNameInvalid = errors.New("store: account names are 3-24 characters of a-z, 0-9 and _")
	// ErrCharacterNameInvalid: not 3..16 ASCII letters.
	ErrCharacterNameInvalid = errors.New("store: character names are 3-16 letters A-Z, a-z")
)

// AccountKey returns the canonical form of an account name: the name in lower
// case. Upper-case letters are accepted and folded, so "Alice" and "alice" are
// one account.
func AccountKey(name string) (string, error) {
	if len(name) < AccountNameMin || len(name) > AccountNameMax {
		return "", ErrAccountNameInvalid
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return "", ErrAccountNameInvalid
		}
	}
	return strings.ToLower(name), nil
}

// CharacterKey checks a character name and returns its key (lower case). The
// name itself is kept as typed for display.
func CharacterKey(name string) (string, error) {
	if len(name) < CharacterNameMin || len(name) > CharacterNameMax {
		return "", ErrCharacterNameInvalid
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", ErrCharacterNameInvalid
		}
	}
	return strings.ToLower(name), nil
}
