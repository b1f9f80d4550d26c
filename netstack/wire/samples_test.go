package wire

import (
	"encoding/hex"
	"testing"
)

// Valid messages shared by the tests, the allocation checks and the fuzz seeds.

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
	{Index: 4, Kind: KindVec3, Vec: Vec3{1, 2, 3}},
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

// builtinSample is a valid sealed packet of a built-in type as a receiver in
// direction travel sees it.
type builtinSample struct {
	name    string
	typ     MessageType
	ch      Channel
	travel  Direction
	payload []byte
}

func builtinSamples() []builtinSample {
	spawn := testSpawn()
	update := EntityStateUpdate{EntityID: 42, DirtyMask: 0x12,
		Data: appendValues(nil, []FieldValue{testSpawnValues[1], testSpawnValues[4]})}
	c, s := ClientToServer, ServerToClient
	return []builtinSample{
		{"ClientFinished", TypeConnect, Reliable, c, AppendClientFinished(nil, &ClientFinished{Name: "alice"})},
		{"Disconnect", TypeDisconnect, Unreliable, c, AppendDisconnect(nil, &Disconnect{Reason: uint8(DisconnectClientQuit), Detail: "bye"})},
		{"Disconnect from server", TypeDisconnect, Unreliable, s, AppendDisconnect(nil, &Disconnect{Reason: uint8(DisconnectKicked)})},
		{"Heartbeat", TypeHeartbeat, Unreliable, c, AppendHeartbeat(nil, &Heartbeat{Token: 0x11223344})},
		{"Ack", TypeAck, Unreliable, s, AppendAck(nil, &Ack{Ack: 100, Bits: 0x80000005, DelayMS: 12})},
		{"EntitySpawn", TypeEntitySpawn, ReliableOrdered, s, AppendEntitySpawn(nil, &spawn)},
		{"EntityDestroy", TypeEntityDestroy, ReliableOrdered, s, AppendEntityDestroy(nil, &EntityDestroy{EntityID: 42})},
		{"EntityStateUpdate", TypeEntityStateUpdate, Unreliable, s, AppendEntityStateUpdate(nil, &update)},
		{"EntityRPC", TypeEntityRPC, Reliable, c, AppendEntityRPC(nil, &EntityRPC{EntityID: 42, RPC: 3, Args: []byte{1, 2, 3}})},
		{"ClientInput", TypeClientInput, Unreliable, c, AppendClientInput(nil, &testClientInput)},
		{"InputAck", TypeInputAck, Unreliable, s, AppendInputAck(nil, &InputAck{LastInputSeq: 12,
			Position: Vec3{1, 2, 3}, Velocity: Vec3{0, -9.8, 0}, Yaw: 90, Pitch: 10, Flags: FlagGrounded})},
		{"ChatMessage from client", TypeChatMessage, Reliable, c, AppendChatMessage(nil, &ChatMessage{Text: "gg"})},
		{"ChatMessage to client", TypeChatMessage, Reliable, s, AppendChatMessage(nil, &ChatMessage{Sender: "alice", Text: "gg"})},
		{"GameStateSync", TypeGameStateSync, ReliableOrdered, s, AppendGameStateSync(nil, &testGameState)},
		{"MatchStart", TypeMatchStart, ReliableOrdered, s, AppendMatchStart(nil, &MatchStart{Map: "dust",
			Mode: ModeDomination, TimeLimit: 600, ScoreLimit: 50, Round: 1})},
		{"MatchEnd", TypeMatchEnd, ReliableOrdered, s, AppendMatchEnd(nil, &MatchEnd{Reason: MatchEndTime, Winner: 7, WinnerScore: 31})},
		{"PlayerRespawn", TypePlayerRespawn, ReliableOrdered, s, AppendPlayerRespawn(nil, &PlayerRespawn{Client: 7,
			EntityID: 42, Position: Vec3{4, 0, -4}, Yaw: 180})},
		{"ScoreUpdate", TypeScoreUpdate, ReliableOrdered, s, AppendScoreUpdate(nil, &ScoreUpdate{Scores: []ScoreEntry{
			{Client: 7, Score: 10, Kills: 10, Deaths: 2}, {Client: 8, Score: -1, Kills: 0, Deaths: 5}}})},
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}
