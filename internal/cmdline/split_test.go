package cmdline

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplitLine(t *testing.T) {
	cases := []struct {
		name, line string
		want       []string
	}{
		{"empty", "", nil},
		{"blank", " \t \r\n", nil},
		{"words", "kick bob", []string{"kick", "bob"}},
		{"runs of spaces", "  kick \t bob  ", []string{"kick", "bob"}},
		{"single quotes", `say 'hello world'`, []string{"say", "hello world"}},
		{"single quotes keep backslash and double quote", `say 'a\b "c"'`, []string{"say", `a\b "c"`}},
		{"double quotes", `say "hello  world"`, []string{"say", "hello  world"}},
		{"double quotes escape quote and backslash", `say "a \"b\" c\\d"`, []string{"say", `a "b" c\d`}},
		{"double quotes keep other backslashes", `say "C:\dir\n"`, []string{"say", `C:\dir\n`}},
		{"double quotes keep single quote", `say "it's"`, []string{"say", "it's"}},
		{"escaped space", `say a\ b`, []string{"say", "a b"}},
		{"escaped quotes", `say \'a\" \\`, []string{"say", `'a"`, `\`}},
		{"escaped letter", `say \x`, []string{"say", "x"}},
		{"quotes join the word", `a'b c'd"e f"g`, []string{"ab cde fg"}},
		{"empty single quoted", `ban '' x`, []string{"ban", "", "x"}},
		{"empty double quoted", `ban "" x`, []string{"ban", "", "x"}},
		{"empty word at end", `ban x ''`, []string{"ban", "x", ""}},
		{"single quote inside single quotes", `'it'\''s'`, []string{"it's"}},
		{"utf-8", "say «héllo» '日本'", []string{"say", "«héllo»", "日本"}},
		{"escaped utf-8", `say \é`, []string{"say", "é"}},
		{"newline inside quotes", "say 'a\nb'", []string{"say", "a\nb"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitLine(tc.line)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("SplitLine(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
			}
		})
	}
}

func TestSplitLineErrors(t *testing.T) {
	cases := []struct{ line, want string }{
		{`say 'open`, "syntax error: unterminated single quote at byte 4; close it with ', or escape it as \\'"},
		{`say "open`, "syntax error: unterminated double quote at byte 4; close it with \", or escape it as \\\""},
		{`say "a \"`, "unterminated double quote at byte 4"},
		{`say 'a' "b`, "unterminated double quote at byte 8"},
		{`say a\`, "syntax error: the line ends with a lone backslash at byte 5; remove it, or write \\\\ for a backslash"},
		{`'`, "unterminated single quote at byte 0"},
	}
	for _, tc := range cases {
		got, err := SplitLine(tc.line)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("SplitLine(%q) = %q, %v; want error containing %q", tc.line, got, err, tc.want)
		}
	}
}

func TestJoinLine(t *testing.T) {
	cases := []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"kick", "bob"}, "kick bob"},
		{[]string{"ban", "10.0.0.1", "2h"}, "ban 10.0.0.1 2h"},
		{[]string{"ban", "::1"}, "ban ::1"},
		{[]string{"say", "hello world"}, "say 'hello world'"},
		{[]string{"say", ""}, "say ''"},
		{[]string{"say", "it's"}, `say 'it'\''s'`},
		{[]string{"say", `a\b`}, `say 'a\b'`},
		{[]string{"say", `"q"`}, `say '"q"'`},
		{[]string{"say", "héllo"}, "say 'héllo'"},
	}
	for _, tc := range cases {
		got := JoinLine(tc.words)
		if got != tc.want {
			t.Errorf("JoinLine(%q) = %q; want %q", tc.words, got, tc.want)
		}
		back, err := SplitLine(got)
		if err != nil || !slices.Equal(back, tc.words) {
			t.Errorf("SplitLine(JoinLine(%q)) = %q, %v", tc.words, back, err)
		}
	}
}

// FuzzJoinSplit checks SplitLine(JoinLine(words)) == words; the input is
// the words joined with NUL.
func FuzzJoinSplit(f *testing.F) {
	for _, s := range []string{"kick\x00bob", "say\x00hello world", "a\x00\x00b", "'\x00\"\x00\\", "x\x00it's\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Split(s, "\x00")
		back, err := SplitLine(JoinLine(words))
		if err != nil || !slices.Equal(back, words) {
			t.Fatalf("words %q: JoinLine %q splits to %q, %v", words, JoinLine(words), back, err)
		}
	})
}

// FuzzSplitLine checks that SplitLine never panics and that its words
// survive a JoinLine round trip.
func FuzzSplitLine(f *testing.F) {
	for _, s := range []string{"", "kick bob", `say "a \"b\""`, `a'b'\ c`, `'open`, `x\`, "\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := SplitLine(line)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("SplitLine(%q): %v does not wrap ErrSyntax", line, err)
			}
			return
		}
		back, err := SplitLine(JoinLine(words))
		if err != nil || !slices.Equal(back, words) {
			t.Fatalf("SplitLine(%q) = %q; round trip gives %q, %v", line, words, back, err)
		}
	})
}
