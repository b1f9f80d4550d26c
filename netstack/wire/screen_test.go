package wire

import (
	"strings"
	"testing"
)

func TestValidUTF8NoNUL(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", "", true},
		{"ascii", "hello", true},
		{"multibyte", "héllo wörld ✓ 🎮", true},
		{"control allowed", "a\tb\nc", true},
		{"encoded U+FFFD", "\uFFFD", true},
		{"NUL", "a\x00b", false},
		{"lone continuation", "\x80", false},
		{"truncated sequence", "\xe2\x9c", false},
		{"overlong", "\xc0\xaf", false},
		{"surrogate", "\xed\xa0\x80", false},
		{"above U+10FFFF", "\xf4\x90\x80\x80", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidUTF8NoNUL([]byte(tc.in)); got != tc.want {
				t.Errorf("ValidUTF8NoNUL(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"simple", "alice", true},
		{"inner spaces", "the great one", true},
		{"leading space", " bob", true},
		{"unicode", "Zoë 🎮", true},
		{"exactly 32 bytes", strings.Repeat("x", 32), true},
		{"32 bytes multibyte", strings.Repeat("é", 16), true},
		{"empty", "", false},
		{"33 bytes", strings.Repeat("x", 33), false},
		{"33 bytes multibyte", strings.Repeat("é", 16) + "x", false},
		{"space only", "   ", false},
		{"no-break space only", "\u00a0\u00a0", false},
		{"ideographic space only", "\u3000", false},
		{"line separator only", "\u2028", false},
		{"zero width space is not White_Space", "\u200b", true},
		{"NUL", "al\x00ice", false},
		{"tab", "al\tice", false},
		{"newline", "alice\n", false},
		{"DEL", "al\x7fice", false},
		{"C1 control NEL", "al\u0085ice", false},
		{"C1 control U+009F", "\u009f", false},
		{"invalid utf8", "al\xffice", false},
		{"surrogate", "\xed\xa0\x80", false},
		{"U+FFFD is a character", "\uFFFD", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidName([]byte(tc.in), MaxNameLen); got != tc.want {
				t.Errorf("ValidName(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestScreenAllocations(t *testing.T) {
	name := []byte("Zoë the 🎮 player")
	text := []byte("hello there, ünïcode text")
	allocs := testing.AllocsPerRun(100, func() {
		_ = ValidUTF8NoNUL(text)
		_ = ValidName(name, MaxNameLen)
	})
	if allocs != 0 {
		t.Fatalf("screening allocates %v times per run, want 0", allocs)
	}
}
