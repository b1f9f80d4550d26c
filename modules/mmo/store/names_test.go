package store_test

import (
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		account bool
		char    bool
	}{
		{"abc", true, true},
		{"ABC_def_123", true, false},
		{"abcdefghijklmnop", true, true},
		{"abcdefghijklmnopq", true, false},
		{"abcdefghijklmnopqrstuvwx", true, false},
		{"abcdefghijklmnopqrstuvwxy", false, false},
		{"ab", false, false},
		{"a b", false, false},
		{"a-b", false, false},
		{"\u00e9t\u00e9", false, false},
		{"abc\x00", false, false},
	} {
		if _, err := store.AccountKey(tc.name); (err == nil) != tc.account || err != nil && !errors.Is(err, store.ErrAccountNameInvalid) {
			t.Errorf("AccountKey(%q) = %v", tc.name, err)
		}
		if _, err := store.CharacterKey(tc.name); (err == nil) != tc.char || err != nil && !errors.Is(err, store.ErrCharacterNameInvalid) {
			t.Errorf("CharacterKey(%q) = %v", tc.name, err)
		}
	}
	if k, err := store.AccountKey("Mixed_Case9"); err != nil || k != "mixed_case9" {
		t.Fatalf("AccountKey = %q, %v", k, err)
	}
	if k, err := store.CharacterKey("HeRo"); err != nil || k != "hero" {
		t.Fatalf("CharacterKey = %q, %v", k, err)
	}
}
