// Package doctables reads the message tables of the project's Markdown
// documents (docs/protocol.md §9 and §13.2, docs/mmo.md §2,
// docs/deathmatch.md §4) so that a test can hold every size, channel and
// direction they print to the codecs' own schemas: a table that drifts from
// the code fails the build instead of misleading a client author.
//
// It knows Markdown only as far as those tables use it: a header row, a
// separator row, and body rows of pipe-separated cells. It imports nothing
// of the project.
package doctables

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Table is one Markdown table: its column names (lower case, trimmed), its
// rows, and the heading it appears under.
type Table struct {
	Heading string
	Columns []string
	Rows    []Row
}

// Row is one body row of a table; Line is its 1-based line in the file.
type Row struct {
	Line  int
	Cells []string
}

// Cell returns the row's cell of column name, and whether the table has it.
func (t *Table) Cell(r Row, name string) (string, bool) {
	for i, c := range t.Columns {
		if c == name && i < len(r.Cells) {
			return r.Cells[i], true
		}
	}
	return "", false
}

// Parse returns every table of a Markdown document, in order.
func Parse(r io.Reader) ([]Table, error) {
	var (
		tables  []Table
		heading string
		cur     *Table
		prev    []string // the previous line's cells: a header if a separator follows
		line    int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(text, "#"))
		}
		if !strings.HasPrefix(text, "|") {
			cur, prev = nil, nil
			continue
		}
		cells := splitRow(text)
		switch {
		case cur != nil:
			cur.Rows = append(cur.Rows, Row{Line: line, Cells: cells})
		case prev != nil && isSeparator(cells):
			cols := make([]string, len(prev))
			for i, c := range prev {
				cols[i] = strings.ToLower(c)
			}
			tables = append(tables, Table{Heading: heading, Columns: cols})
			cur = &tables[len(tables)-1]
		default:
			prev = cells
		}
	}
	return tables, sc.Err()
}

func splitRow(text string) []string {
	text = strings.TrimSuffix(strings.TrimPrefix(text, "|"), "|")
	parts := strings.Split(text, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || c == "" {
			return false
		}
	}
	return true
}

// Size is a payload size rule as the tables print it, resolved to the
// inclusive bounds a schema holds.
type Size struct {
	Min, Max uint32
}

// ParseSize reads a size cell. maxPayload resolves the open forms. It
// accepts:
//
//	N              exactly N
//	A..B           A to B
//	≥ N            N to maxPayload
//	A + B·n        A plus any whole number of B-byte entries up to maxPayload
//	A or B         A to B (two exact sizes; the schema holds the span)
//
// Thousands separators (5,254) are allowed, and a parenthesised remark
// after the rule is ignored ("6..65450 (6 + 4·n)").
func ParseSize(cell string, maxPayload uint32) (Size, error) {
	s := cell
	if i := strings.Index(s, "("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	switch {
	case strings.HasPrefix(s, "≥"):
		n, err := number(strings.TrimPrefix(s, "≥"))
		return Size{n, maxPayload}, err
	case strings.Contains(s, ".."):
		a, b, _ := strings.Cut(s, "..")
		lo, err1 := number(a)
		hi, err2 := number(b)
		if err1 != nil || err2 != nil {
			return Size{}, fmt.Errorf("size %q: not A..B", cell)
		}
		return Size{lo, hi}, nil
	case strings.Contains(s, " or "):
		a, b, _ := strings.Cut(s, " or ")
		lo, err1 := number(a)
		hi, err2 := number(b)
		if err1 != nil || err2 != nil {
			return Size{}, fmt.Errorf("size %q: not A or B", cell)
		}
		return Size{min(lo, hi), max(lo, hi)}, nil
	case strings.Contains(s, "+"):
		a, b, _ := strings.Cut(s, "+")
		base, err1 := number(a)
		each, err2 := number(strings.TrimSuffix(strings.TrimSpace(b), "·n"))
		if err1 != nil || err2 != nil || each == 0 || base > maxPayload {
			return Size{}, fmt.Errorf("size %q: not A + B·n", cell)
		}
		return Size{base, base + each*((maxPayload-base)/each)}, nil
	}
	n, err := number(s)
	if err != nil {
		return Size{}, fmt.Errorf("size %q: %w", cell, err)
	}
	return Size{n, n}, nil
}

func number(s string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	return uint32(n), err
}
