// Package cmdline splits and joins command lines the way operators and
// scripts type them (POSIX-shell quoting without expansion). The admin
// console and the player console share it.
package cmdline

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by SplitLine's errors: a quote left open or a line
// ending in a lone backslash.
var ErrSyntax = errors.New("syntax error")

// SplitLine splits a command line into words the way a POSIX shell would,
// without any expansion:
//
//   - words are separated by unquoted spaces, tabs, CR, LF, VT or FF;
//   - '...' keeps everything up to the next ' literally;
//   - "..." keeps everything literally except \" and \\, which stand for "
//     and \ (a backslash before any other character stays a backslash);
//   - outside quotes, a backslash makes the next byte literal (\  is a space
//     inside a word, \' a quote);
//   - quoted parts join the word around them (a'b c'd is one word, "" an
//     empty one).
//
// An unterminated quote or a line ending in a lone backslash is an error
// wrapping ErrSyntax that says where and what to do. A blank line gives no
// words. JoinLine is the inverse.
func SplitLine(line string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // word holds a word, possibly empty ("")
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case isSpace(c):
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
			continue
		case c == '\\':
			if i+1 == len(line) {
				return nil, fmt.Errorf("%w: the line ends with a lone backslash at byte %d; remove it, or write \\\\ for a backslash", ErrSyntax, i)
			}
			i++
			word.WriteByte(line[i])
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated single quote at byte %d; close it with ', or escape it as \\'", ErrSyntax, i)
			}
			word.WriteString(line[i+1 : i+1+end])
			i += 1 + end
		case c == '"':
			n, err := readDoubleQuoted(line, i, &word)
			if err != nil {
				return nil, err
			}
			i = n
		default:
			word.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// readDoubleQuoted appends the content of the "..." opening at line[open]
// to word and returns the index of the closing quote.
func readDoubleQuoted(line string, open int, word *strings.Builder) (int, error) {
	for i := open + 1; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
			i++
			word.WriteByte(line[i])
		default:
			word.WriteByte(c)
		}
	}
	return 0, fmt.Errorf("%w: unterminated double quote at byte %d; close it with \", or escape it as \\\"", ErrSyntax, open)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// JoinLine is the inverse of SplitLine: it joins words with spaces, single-
// quoting each word that is empty or holds anything but letters, digits and
// -_.,:/@%+=^, so that SplitLine(JoinLine(w)) returns w. A single quote in a
// word closes the quoting, is escaped, and the quoting resumes:
//
//	JoinLine([]string{"say", "it's"}) == `say 'it'\''s'`
func JoinLine(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w != "" && strings.IndexFunc(w, needsQuote) < 0 {
			b.WriteString(w)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_.,:/@%+=^", r)
}
