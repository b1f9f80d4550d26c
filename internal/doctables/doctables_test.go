package doctables

import (
	"strings"
	"testing"
)

func TestParseFindsTablesUnderTheirHeadings(t *testing.T) {
	doc := `# A
text | not a table
## 2. Types

| id | Name | size |
|---|:--|--:|
| 1 | One | 4 |
| 2 | Two | 2..9 |

| not | a table |
paragraph
`
	tables, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 {
		t.Fatalf("%d tables, want 1: %+v", len(tables), tables)
	}
	tb := tables[0]
	if tb.Heading != "2. Types" || strings.Join(tb.Columns, ",") != "id,name,size" || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	if v, _ := tb.Cell(tb.Rows[1], "size"); v != "2..9" || tb.Rows[1].Line != 8 {
		t.Fatalf("row 2: size %q line %d", v, tb.Rows[1].Line)
	}
}

func TestParseSize(t *testing.T) {
	const maxPayload = 65453
	for _, tc := range []struct {
		in       string
		min, max uint32
	}{
		{"8", 8, 8},
		{"90..154", 90, 154},
		{"6..5,254", 6, 5254},
		{"≥ 19", 19, maxPayload},
		{"2 + 16·n", 2, 2 + 16*((maxPayload-2)/16)},
		{"6..65450 (6 + 4·n)", 6, 65450},
		{"5 or 37", 5, 37},
		{"26..39,116", 26, 39116},
	} {
		got, err := ParseSize(tc.in, maxPayload)
		if err != nil || got.Min != tc.min || got.Max != tc.max {
			t.Errorf("ParseSize(%q) = %+v, %v; want %d..%d", tc.in, got, err, tc.min, tc.max)
		}
	}
	for _, bad := range []string{"", "many", "1..x", "§13.2", "4 + 0·n"} {
		if _, err := ParseSize(bad, maxPayload); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
}
