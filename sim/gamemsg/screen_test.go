package gamemsg

import (
	"strings"
	"testing"
)

func TestValidChatText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"simple", "gg", true},
		{"spaces only are text", "   ", true},
		{"256 bytes", strings.Repeat("a", 256), true},
		{"unicode", "gg wp 👍", true},
		{"empty", "", false},
		{"257 bytes", strings.Repeat("a", 257), false},
		{"newline", "gg\nwp", false},
		{"tab", "\t", false},
		{"NUL", "\x00", false},
		{"C1 control", "a\u0080", false},
		{"invalid utf8", "\xc3", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidChatText([]byte(tc.in)); got != tc.want {
				t.Errorf("ValidChatText(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestValidChatTextAllocates(t *testing.T) {
	text := []byte("hello there, ünïcode text")
	if allocs := testing.AllocsPerRun(100, func() { _ = ValidChatText(text) }); allocs != 0 {
		t.Fatalf("ValidChatText allocates %v times per run, want 0", allocs)
	}
}
