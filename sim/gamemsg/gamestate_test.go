package gamemsg

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

func TestGameStateSyncRoundTrip(t *testing.T) {
	p := AppendGameStateSync(nil, &testGameState)
	m, err := ParseGameStateSync(p)
	if err != nil {
		t.Fatalf("ParseGameStateSync: %v", err)
	}
	if !reflect.DeepEqual(m, testGameState) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", m, testGameState)
	}
	if err := scanGameStateSync(p); err != nil {
		t.Fatalf("scanGameStateSync disagrees with ParseGameStateSync: %v", err)
	}
}

func TestParseGameStateSync(t *testing.T) {
	fields64 := make([]FieldSchema, 64)
	for i := range fields64 {
		fields64[i] = FieldSchema{Name: "f" + strings.Repeat("x", i%31), Kind: FieldKind(i % 5), Visibility: Visibility(i % 4)}
	}
	variant := func(edit func(*GameStateSync)) []byte {
		m := testGameState
		m.Types = append([]EntityTypeSchema(nil), testGameState.Types...)
		edit(&m)
		return AppendGameStateSync(nil, &m)
	}
	withType := func(ts EntityTypeSchema) []byte {
		return variant(func(m *GameStateSync) { m.Types = []EntityTypeSchema{ts} })
	}
	field := func(f FieldSchema) []byte {
		return withType(EntityTypeSchema{TypeID: 1, Name: "t", Fields: []FieldSchema{f}})
	}
	minimal := GameStateSync{TickRate: 1, ReplicationRate: 1}
	runParseCases(t, ParseGameStateSync, AppendGameStateSync, []parseCase{
		{"typical", AppendGameStateSync(nil, &testGameState), nil},
		{"minimal (26 bytes)", AppendGameStateSync(nil, &minimal), nil},
		{"64 fields", withType(EntityTypeSchema{TypeID: 1, Name: "big", Fields: fields64}), nil},
		{"limits", variant(func(m *GameStateSync) {
			m.ServerName, m.MOTD, m.Map = strings.Repeat("s", 64), strings.Repeat("m", 256), strings.Repeat("p", 64)
			m.Mode, m.MatchState = ModeCustom, MatchIntermission
		}), nil},
		{"65-byte server name", variant(func(m *GameStateSync) { m.ServerName = strings.Repeat("s", 65) }), wire.ErrTextTooLong},
		{"257-byte motd", variant(func(m *GameStateSync) { m.MOTD = strings.Repeat("m", 257) }), wire.ErrTextTooLong},
		{"65-byte map", variant(func(m *GameStateSync) { m.Map = strings.Repeat("p", 65) }), wire.ErrTextTooLong},
		{"NUL in motd", variant(func(m *GameStateSync) { m.MOTD = "a\x00" }), wire.ErrTextInvalid},
		{"invalid UTF-8 map", variant(func(m *GameStateSync) { m.Map = "\xff" }), wire.ErrTextInvalid},
		{"mode 7", variant(func(m *GameStateSync) { m.Mode = 7 }), errUnknownEnum},
		{"match state 4", variant(func(m *GameStateSync) { m.MatchState = 4 }), errUnknownEnum},
		{"tick rate 0", variant(func(m *GameStateSync) { m.TickRate = 0 }), errZeroRate},
		{"replication rate 0", variant(func(m *GameStateSync) { m.ReplicationRate = 0 }), errZeroRate},
		{"NaN server time", variant(func(m *GameStateSync) { m.ServerTime = nan }), wire.ErrNonFinite},
		{"Inf time remaining", variant(func(m *GameStateSync) { m.TimeRemaining = ninf }), wire.ErrNonFinite},
		{"empty type name", withType(EntityTypeSchema{TypeID: 1}), errBadName},
		{"33-byte type name", withType(EntityTypeSchema{TypeID: 1, Name: strings.Repeat("t", 33)}), errBadName},
		{"control in type name", withType(EntityTypeSchema{TypeID: 1, Name: "a\x01"}), errBadName},
		{"65 fields", withType(EntityTypeSchema{TypeID: 1, Name: "t", Fields: append(fields64, fields64[0])}), errTooManyFields},
		{"field kind 5", field(FieldSchema{Name: "f", Kind: 5}), errUnknownEnum},
		{"visibility 4", field(FieldSchema{Name: "f", Visibility: 4}), errUnknownEnum},
		{"white space field name", field(FieldSchema{Name: "\u2003"}), errBadName},
		{"empty field name", field(FieldSchema{}), errBadName},
		{"type_count beyond payload", variant(func(m *GameStateSync) { m.Types = nil })[:24], wire.ErrMalformedPayload},
		{"huge type_count", append(AppendGameStateSync(nil, &minimal)[:24], 0xFF, 0xFF), errTruncated},
		{"truncated field", AppendGameStateSync(nil, &testGameState)[:len(AppendGameStateSync(nil, &testGameState))-1], wire.ErrOverrun},
		{"trailing byte", append(AppendGameStateSync(nil, &testGameState), 0), wire.ErrTrailing},
	})
}

func TestParseGameStateSyncBoundsAllocation(t *testing.T) {
	// A forged count must not make the parser allocate for 65,535 schemas.
	minimal := GameStateSync{TickRate: 1, ReplicationRate: 1}
	p := append(AppendGameStateSync(nil, &minimal)[:24], 0xFF, 0xFF, 0, 0, 0, 0, 0)
	allocs := testing.AllocsPerRun(20, func() { _, _ = ParseGameStateSync(p) })
	if allocs > 0 {
		t.Fatalf("rejecting a forged type_count allocated %v times", allocs)
	}
}
