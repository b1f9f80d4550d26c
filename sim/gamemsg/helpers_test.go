package gamemsg

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Valid messages shared by the tests and the fuzz seeds.

// testEntityType has one field of every kind, so schema-aware decoding covers
// every width.
var testEntityType = EntityTypeSchema{TypeID: 3, Name: "player", Fields: []FieldSchema{
	{Name: "alive", Kind: KindBool, Visibility: VisibilityPublic},
	{Name: "score", Kind: KindInt32, Visibility: VisibilityPublic},
	{Name: "ammo", Kind: KindUint32, Visibility: VisibilityPrivate},
	{Name: "speed", Kind: KindFloat, Visibility: VisibilityParty},
	{Name: "position", Kind: KindVec3, Visibility: VisibilitySpectator},
}}

var testGameState = GameStateSync{
	ClientID: 7, ServerTime: 1.5, TickRate: 60, ReplicationRate: 20,
	ServerName: "Spark EU #1", MOTD: "welcome, have fun", Map: "dust",
	Mode: ModeCaptureTheFlag, MatchState: MatchInProgress, TimeRemaining: 300,
	Types: []EntityTypeSchema{
		testEntityType,
		{TypeID: 9, Name: "crate"},
	},
}

var testClientInput = ClientInput{InputSeq: 12, MoveForward: 1, MoveRight: -0.5, LookYaw: 270,
	LookPitch: -89, Buttons: ButtonJump | ButtonCrouch, DT: 1.0 / 60, ClientTime: 12.25}

// testSpawnValues are the values of every field of testEntityType, in bit order.
var testSpawnValues = []FieldValue{
	{Index: 0, Kind: KindBool, Bool: true},
	{Index: 1, Kind: KindInt32, Int: -5},
	{Index: 2, Kind: KindUint32, Uint: 30},
	{Index: 3, Kind: KindFloat, Float: 6.5},
	{Index: 4, Kind: KindVec3, Vec: wire.Vec3{X: 1, Y: 2, Z: 3}},
}

func appendValues(dst []byte, vals []FieldValue) []byte {
	for i := range vals {
		dst = AppendFieldValue(dst, &vals[i])
	}
	return dst
}

func testSpawn() EntitySpawn {
	return EntitySpawn{EntityID: 42, FieldsMask: 0x1F, TypeID: 3, Owner: 7,
		Data: appendValues(nil, testSpawnValues)}
}

// sample is a valid sealed packet of a game type as a receiver in direction
// travel sees it.
type sample struct {
	name    string
	typ     wire.MessageType
	ch      wire.Channel
	travel  wire.Direction
	payload []byte
}

func gameSamples() []sample {
	spawn := testSpawn()
	update := EntityStateUpdate{EntityID: 42, DirtyMask: 0x12,
		Data: appendValues(nil, []FieldValue{testSpawnValues[1], testSpawnValues[4]})}
	c, s := wire.ClientToServer, wire.ServerToClient
	return []sample{
		{"EntitySpawn", TypeEntitySpawn, wire.ReliableOrdered, s, AppendEntitySpawn(nil, &spawn)},
		{"EntityDestroy", TypeEntityDestroy, wire.ReliableOrdered, s, AppendEntityDestroy(nil, &EntityDestroy{EntityID: 42})},
		{"EntityStateUpdate", TypeEntityStateUpdate, wire.Unreliable, s, AppendEntityStateUpdate(nil, &update)},
		{"EntityRPC", TypeEntityRPC, wire.Reliable, c, AppendEntityRPC(nil, &EntityRPC{EntityID: 42, RPC: 3, Args: []byte{1, 2, 3}})},
		{"ClientInput", TypeClientInput, wire.Unreliable, c, AppendClientInput(nil, &testClientInput)},
		{"InputAck", TypeInputAck, wire.Unreliable, s, AppendInputAck(nil, &InputAck{LastInputSeq: 12,
			Position: wire.Vec3{X: 1, Y: 2, Z: 3}, Velocity: wire.Vec3{X: 0, Y: -9.8, Z: 0}, Yaw: 90, Pitch: 10, Flags: FlagGrounded})},
		{"ChatMessage from client", TypeChatMessage, wire.Reliable, c, AppendChatMessage(nil, &ChatMessage{Text: "gg"})},
		{"ChatMessage to client", TypeChatMessage, wire.Reliable, s, AppendChatMessage(nil, &ChatMessage{Sender: "alice", Text: "gg"})},
		{"GameStateSync", TypeGameStateSync, wire.ReliableOrdered, s, AppendGameStateSync(nil, &testGameState)},
		{"MatchStart", TypeMatchStart, wire.ReliableOrdered, s, AppendMatchStart(nil, &MatchStart{Map: "dust",
			Mode: ModeDomination, TimeLimit: 600, ScoreLimit: 50, Round: 1})},
		{"MatchEnd", TypeMatchEnd, wire.ReliableOrdered, s, AppendMatchEnd(nil, &MatchEnd{Reason: MatchEndTime, Winner: 7, WinnerScore: 31})},
		{"PlayerRespawn", TypePlayerRespawn, wire.ReliableOrdered, s, AppendPlayerRespawn(nil, &PlayerRespawn{Client: 7,
			EntityID: 42, Position: wire.Vec3{X: 4, Y: 0, Z: -4}, Yaw: 180})},
		{"ScoreUpdate", TypeScoreUpdate, wire.ReliableOrdered, s, AppendScoreUpdate(nil, &ScoreUpdate{Scores: []ScoreEntry{
			{Client: 7, Score: 10, Kills: 10, Deaths: 2}, {Client: 8, Score: -1, Kills: 0, Deaths: 5}}})},
	}
}

// enc builds a payload by hand from typed fields: uint8, uint16, uint32,
// uint64, int32, float32 and wire.Vec3 little-endian; string as a NetBuffer str;
// []byte raw. Hand-built bytes keep the parser tests independent of the
// encoders they check.
func enc(parts ...any) []byte {
	var w wire.Writer
	for _, p := range parts {
		switch v := p.(type) {
		case uint8:
			w.U8(v)
		case uint16:
			w.U16(v)
		case uint32:
			w.U32(v)
		case uint64:
			w.U64(v)
		case int32:
			w.I32(v)
		case float32:
			w.F32(v)
		case wire.Vec3:
			w.Vec3(v)
		case string:
			w.Str(v)
		case []byte:
			w.Raw(v)
		default:
			panic("enc: unsupported field type")
		}
	}
	return w.Bytes()
}

// parseCase is one input of a parser table: want nil means valid, else the
// parser's error must match want with errors.Is.
type parseCase struct {
	name string
	in   []byte
	want error
}

// runParseCases checks every case of a parser and, for the valid ones, that
// the result re-encodes to the same bytes.
func runParseCases[T any](t *testing.T, parse func([]byte) (T, error), encode func([]byte, *T) []byte, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parse(tc.in)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("parse(% x) = %v, want success", tc.in, err)
				}
				if out := encode(nil, &m); string(out) != string(tc.in) {
					t.Fatalf("re-encoding differs:\n got % x\nwant % x", out, tc.in)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("parse(% x) error = %v, want %v", tc.in, err, tc.want)
			}
			var zero T
			if !reflect.DeepEqual(m, zero) {
				t.Fatalf("failed parse returned partial data %+v", m)
			}
		})
	}
}

var (
	nan  = float32(math.NaN())
	pinf = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
)
