package doctables_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/internal/doctables"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The message tables of the docs are what client authors generate their
// receive rules from. Each row is held to the schema the code registers
// (and, where a row prints more than a schema holds, to the codec itself),
// so that a table cannot drift from the wire again.

func readTables(t *testing.T, doc string) []doctables.Table {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tables, err := doctables.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// tableUnder returns the one table under a heading that starts with prefix.
func tableUnder(t *testing.T, tables []doctables.Table, prefix string) doctables.Table {
	t.Helper()
	var found []doctables.Table
	for _, tb := range tables {
		if strings.HasPrefix(tb.Heading, prefix) {
			found = append(found, tb)
		}
	}
	if len(found) == 0 {
		t.Fatalf("no table under a heading %q", prefix)
	}
	return found[0]
}

func cell(t *testing.T, tb doctables.Table, r doctables.Row, col string) string {
	t.Helper()
	v, ok := tb.Cell(r, col)
	if !ok {
		t.Fatalf("line %d: no column %q in %v", r.Line, col, tb.Columns)
	}
	return v
}

func messageID(t *testing.T, text string, line int) (wire.MessageType, bool) {
	n, err := strconv.ParseUint(text, 10, 16)
	if err != nil {
		return 0, false
	}
	return wire.MessageType(n), true
}

func checkSize(t *testing.T, where string, text string, want doctables.Size) {
	t.Helper()
	got, err := doctables.ParseSize(text, wire.MaxPayload)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if got != want {
		t.Errorf("%s: the doc says %q (%d..%d), the code %d..%d", where, text, got.Min, got.Max, want.Min, want.Max)
	}
}

func schemaSize(s wire.Schema) doctables.Size { return doctables.Size{Min: s.MinLen, Max: s.MaxLen} }

// channelLetters are the channel column's letters (U, R, O).
var channelLetters = map[wire.Channel]string{wire.Unreliable: "U", wire.Reliable: "R", wire.ReliableOrdered: "O"}

// directionLetters is protocol.md's dir column (C, S, C,S).
func directionLetters(d wire.Direction) string {
	switch d {
	case wire.ClientToServer:
		return "C"
	case wire.ServerToClient:
		return "S"
	}
	return "C,S"
}

func TestProtocolMessageTable(t *testing.T) {
	reg := gamemsg.NewRegistry()
	tables := readTables(t, "protocol.md")
	tb := tableUnder(t, tables, "9. Message types")
	seen := map[wire.MessageType]bool{}
	for _, r := range tb.Rows {
		idText, size := cell(t, tb, r, "id"), cell(t, tb, r, "size")
		where := "protocol.md:" + strconv.Itoa(r.Line) + " (" + idText + ")"
		id, ok := messageID(t, idText, r.Line)
		if !ok {
			// "32..45" (the rooms, §13.2) and "≥ 1000" (modules) point elsewhere.
			continue
		}
		seen[id] = true
		switch id {
		case wire.TypeConnect:
			// "1176 (v4), 55 (v3) / 4..324": the plain hellos, then the sealed ClientFinished.
			plain, sealed, _ := strings.Cut(size, "/")
			want := strconv.Itoa(handshake.ClientHello4Size) + " (v4), " + strconv.Itoa(handshake.ClientHelloSize) + " (v3)"
			if strings.TrimSpace(plain) != want {
				t.Errorf("%s: hello sizes %q, the code %q", where, plain, want)
			}
			s, _, _ := reg.Lookup(id)
			checkSize(t, where, strings.TrimSpace(sealed), schemaSize(s))
			continue
		case wire.TypeCookieReply:
			checkSize(t, where, size, doctables.Size{Min: handshake.CookieReplyMinSize, Max: handshake.CookieReplyMaxSize})
			continue
		}
		s, _, ok := reg.Lookup(id)
		if !ok {
			t.Errorf("%s: no such type in the code", where)
			continue
		}
		checkSize(t, where, size, schemaSize(s))
		if id == wire.TypeConnectAccepted || id == wire.TypeConnectRejected {
			continue // plain frames: "U plain"
		}
		if got, want := cell(t, tb, r, "channel"), channelLetters[s.Channel]; got != want {
			t.Errorf("%s: channel %q, the code %q", where, got, want)
		}
		if got, want := cell(t, tb, r, "dir"), directionLetters(s.Direction); got != want {
			t.Errorf("%s: dir %q, the code %q", where, got, want)
		}
	}
	for id := wire.MessageType(1); id < 32; id++ {
		if _, _, ok := reg.Lookup(id); ok && !seen[id] {
			t.Errorf("protocol.md §9 lists no row for type %d", id)
		}
	}
}

func TestProtocolRoomTable(t *testing.T) {
	reg := gamemsg.NewRegistry()
	tb := tableUnder(t, readTables(t, "protocol.md"), "13.2 Types")
	seen := map[wire.MessageType]bool{}
	for _, r := range tb.Rows {
		idText := cell(t, tb, r, "id")
		where := "protocol.md:" + strconv.Itoa(r.Line) + " (" + idText + ")"
		id, ok := messageID(t, idText, r.Line)
		if !ok {
			t.Errorf("%s: not a type id", where)
			continue
		}
		seen[id] = true
		s, _, ok := reg.Lookup(id)
		if !ok {
			t.Errorf("%s: no such type in the code", where)
			continue
		}
		if got := cell(t, tb, r, "name"); got != s.Name {
			t.Errorf("%s: name %q, the code %q", where, got, s.Name)
		}
		if got, want := cell(t, tb, r, "channel"), channelLetters[s.Channel]; got != want {
			t.Errorf("%s: channel %q, the code %q", where, got, want)
		}
		if got, want := cell(t, tb, r, "dir"), directionLetters(s.Direction); got != want {
			t.Errorf("%s: dir %q, the code %q", where, got, want)
		}
		size := cell(t, tb, r, "size")
		if id == gamemsg.TypeRoomChat {
			checkRoomChatSizes(t, where, size, s)
			continue
		}
		checkSize(t, where, size, schemaSize(s))
	}
	for _, s := range gamemsg.Schemas() {
		if s.ID >= gamemsg.TypeRoomListRequest && s.ID <= gamemsg.TypeRoomUpdate && !seen[s.ID] {
			t.Errorf("protocol.md §13.2 lists no row for %s (%d)", s.Name, s.ID)
		}
	}
}

// checkRoomChatSizes holds RoomChat's "A..B from a client, C..D from the
// server" to the codec: the shortest and longest encodings each side
// produces, which together are the schema's span.
func checkRoomChatSizes(t *testing.T, where, size string, s wire.Schema) {
	t.Helper()
	fromClient, fromServer, ok := strings.Cut(size, ",")
	if !ok {
		t.Errorf("%s: RoomChat size %q is not \"… from a client, … from the server\"", where, size)
		return
	}
	longText := strings.Repeat("x", gamemsg.MaxChatTextLen)
	longName := strings.Repeat("n", wire.MaxNameLen)
	client := doctables.Size{
		Min: uint32(len(gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Text: "x"}))),
		Max: uint32(len(gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Text: longText}))),
	}
	server := doctables.Size{
		Min: uint32(len(gamemsg.AppendRoomChat(nil, &gamemsg.RoomChat{SenderName: "n", Text: "x"}))),
		Max: uint32(len(gamemsg.AppendRoomChat(nil, &gamemsg.RoomChat{SenderName: longName, Text: longText}))),
	}
	checkSize(t, where+" from a client", strings.TrimSuffix(strings.TrimSpace(fromClient), " from a client"), client)
	checkSize(t, where+" from the server", strings.TrimSuffix(strings.TrimSpace(fromServer), " from the server"), server)
	if span := (doctables.Size{Min: min(client.Min, server.Min), Max: max(client.Max, server.Max)}); span != schemaSize(s) {
		t.Errorf("%s: RoomChat's codecs span %d..%d, its schema %d..%d", where, span.Min, span.Max, s.MinLen, s.MaxLen)
	}
}

// moduleTable checks a module's table: id, name, size, and where the table
// has them, the direction and the screened string's offset.
func moduleTable(t *testing.T, doc string, tb doctables.Table, sizeCol string, schemas []wire.Schema) {
	t.Helper()
	byID := map[wire.MessageType]wire.Schema{}
	for _, s := range schemas {
		byID[s.ID] = s
	}
	seen := map[wire.MessageType]bool{}
	for _, r := range tb.Rows {
		idText := cell(t, tb, r, "id")
		where := doc + ":" + strconv.Itoa(r.Line) + " (" + idText + ")"
		id, ok := messageID(t, idText, r.Line)
		s, known := byID[id]
		if !ok || !known {
			t.Errorf("%s: not a type of the module", where)
			continue
		}
		seen[id] = true
		if got := cell(t, tb, r, "name"); got != s.Name {
			t.Errorf("%s: name %q, the code %q", where, got, s.Name)
		}
		checkSize(t, where, cell(t, tb, r, sizeCol), schemaSize(s))
		if dir, ok := tb.Cell(r, "dir"); ok {
			want := map[wire.Direction]string{wire.ClientToServer: "C→S", wire.ServerToClient: "S→C"}[s.Direction]
			if dir != want {
				t.Errorf("%s: dir %q, the code %q", where, dir, want)
			}
		}
		if at, ok := tb.Cell(r, "str at"); ok {
			want := "—"
			if s.StringFieldOffset != wire.NoStringFields {
				want = strconv.FormatUint(uint64(s.StringFieldOffset), 10)
			}
			if at != want {
				t.Errorf("%s: str at %q, the code %q", where, at, want)
			}
		}
	}
	for _, s := range schemas {
		if !seen[s.ID] {
			t.Errorf("%s lists no row for %s (%d)", doc, s.Name, s.ID)
		}
	}
}

func TestMMOMessageTable(t *testing.T) {
	tb := tableUnder(t, readTables(t, "mmo.md"), "2. Message types")
	moduleTable(t, "mmo.md", tb, "size (bytes)", mmoproto.Schemas())
}

func TestDeathmatchMessageTable(t *testing.T) {
	var tb doctables.Table
	for _, x := range readTables(t, "deathmatch.md") {
		if len(x.Columns) > 0 && x.Columns[0] == "id" {
			tb = x
		}
	}
	if tb.Columns == nil {
		t.Fatal("deathmatch.md: no message table (a table whose first column is id)")
	}
	moduleTable(t, "deathmatch.md", tb, "bytes", deathmatch.Schemas())
}
