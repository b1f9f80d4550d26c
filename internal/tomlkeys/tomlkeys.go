// Package tomlkeys finds the line of every key of a TOML file, for
// messages that name the file, the line and the key: the TOML decoder
// reports positions only for syntax errors. The server's config and the
// modules' own config files use it.
package tomlkeys

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Lines maps a dotted key, spelled as toml.Key.String spells it
// ("server.port", and "server" for a table), to the 1-based line of the file
// that first names it. The TOML decoder reports positions only for syntax
// errors, so this small scanner recovers them for every other message.
//
// It knows just enough TOML to find keys: [table] and [[array]] headers,
// dotted and quoted keys before "=", comments, and strings, so that text
// inside a (multi-line) string is never taken for a key. Keys inside inline
// tables are not located; LineOf falls back to the nearest located parent.
type Lines map[string]int

// Locate scans TOML text. It never fails: text it cannot follow (a syntax
// error) simply locates nothing; the decoder reports it.
func Locate(text []byte) Lines {
	s := keyScanner{lines: Lines{}}
	text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	for i, line := range strings.Split(string(text), "\n") {
		s.scanLine(strings.TrimSuffix(line, "\r"), i+1)
	}
	return s.lines
}

// LineOf returns the line of key, or of its nearest located parent, or 0.
func (kl Lines) LineOf(key toml.Key) int {
	for n := len(key); n > 0; n-- {
		if line, ok := kl[key[:n].String()]; ok {
			return line
		}
	}
	return 0
}

type keyScanner struct {
	lines     Lines
	table     []string // path of the current [table] header
	multiline string   // the open multi-line string's delimiter, or ""
}

func (s *keyScanner) scanLine(line string, n int) {
	rest := line
	if s.multiline != "" {
		var closed bool
		if rest, closed = s.closeMultiline(rest); !closed {
			return
		}
	} else {
		rest = s.statement(rest, n)
	}
	s.skipValue(rest)
}

// statement records the key a line starts with, if any, and returns the rest
// of the line (the value) for skipValue.
func (s *keyScanner) statement(line string, n int) string {
	text := strings.TrimLeft(line, " \t")
	if strings.HasPrefix(text, "[") {
		closer := "]"
		text = text[1:]
		if strings.HasPrefix(text, "[") {
			closer, text = "]]", text[1:]
		}
		path, after, ok := parseKeyPath(text)
		after = strings.TrimLeft(after, " \t")
		if !ok || !strings.HasPrefix(after, closer) {
			return ""
		}
		s.table = path
		s.record(path, 1, n)
		return after[len(closer):]
	}
	path, after, ok := parseKeyPath(text)
	after = strings.TrimLeft(after, " \t")
	if !ok || !strings.HasPrefix(after, "=") {
		return line // a continuation line of a multi-line array
	}
	full := append(append([]string(nil), s.table...), path...)
	s.record(full, len(s.table)+1, n)
	return after[1:]
}

// record locates every prefix of path from length min on (a dotted key
// defines its parent tables where it stands) unless already located.
func (s *keyScanner) record(path []string, min, n int) {
	for i := max(min, 1); i <= len(path); i++ {
		k := toml.Key(path[:i]).String()
		if _, ok := s.lines[k]; !ok {
			s.lines[k] = n
		}
	}
}

// skipValue walks a value to its end of line, noting a multi-line string left
// open; a comment ends the walk.
func (s *keyScanner) skipValue(rest string) {
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '#':
			return
		case strings.HasPrefix(rest[i:], `"""`), strings.HasPrefix(rest[i:], `'''`):
			s.multiline = rest[i : i+3]
			after, closed := s.closeMultiline(rest[i+3:])
			if !closed {
				return
			}
			rest, i = after, -1
		case c == '"':
			i += 1 + stringEnd(rest[i+1:], '"', true)
		case c == '\'':
			i += 1 + stringEnd(rest[i+1:], '\'', false)
		}
	}
}

// closeMultiline looks for the end of the open multi-line string in text and
// returns what follows it.
func (s *keyScanner) closeMultiline(text string) (string, bool) {
	escapes := s.multiline == `"""`
	for i := 0; i < len(text); i++ {
		if escapes && text[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(text[i:], s.multiline) {
			// Up to two quotes may end the string's content: """a""""" is "a""".
			end := i + 3
			for end < len(text) && end < i+5 && text[end] == s.multiline[0] {
				end++
			}
			s.multiline = ""
			return text[end:], true
		}
	}
	return "", false
}

// stringEnd returns the index in text of the quote that ends a one-line
// string, or len(text) when the line ends first.
func stringEnd(text string, quote byte, escapes bool) int {
	for i := 0; i < len(text); i++ {
		switch {
		case escapes && text[i] == '\\':
			i++
		case text[i] == quote:
			return i
		}
	}
	return len(text)
}

// parseKeyPath reads a dotted key (bare, "basic" or 'literal' parts) from the
// start of text, skipping blanks around the dots.
func parseKeyPath(text string) (path []string, rest string, ok bool) {
	for {
		text = strings.TrimLeft(text, " \t")
		var part string
		switch {
		case strings.HasPrefix(text, `"`):
			end := stringEnd(text[1:], '"', true) + 1
			if end >= len(text) {
				return nil, "", false
			}
			part, text = text[1:end], text[end+1:]
			if unquoted, err := strconv.Unquote(`"` + part + `"`); err == nil {
				part = unquoted
			}
		case strings.HasPrefix(text, "'"):
			end := strings.IndexByte(text[1:], '\'') + 1
			if end == 0 {
				return nil, "", false
			}
			part, text = text[1:end], text[end+1:]
		default:
			end := 0
			for end < len(text) && isBareKeyChar(text[end]) {
				end++
			}
			if end == 0 {
				return nil, "", false
			}
			part, text = text[:end], text[end:]
		}
		path = append(path, part)
		text = strings.TrimLeft(text, " \t")
		if !strings.HasPrefix(text, ".") {
			return path, text, true
		}
		text = text[1:]
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
