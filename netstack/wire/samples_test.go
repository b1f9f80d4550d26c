package wire

import (
	"encoding/hex"
	"testing"
)

// Valid messages shared by the tests, the allocation checks and the fuzz seeds.

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
	c, s := ClientToServer, ServerToClient
	return []builtinSample{
		{"ClientFinished", TypeConnect, Reliable, c, AppendClientFinished(nil, &ClientFinished{Name: "alice"})},
		{"Disconnect", TypeDisconnect, Unreliable, c, AppendDisconnect(nil, &Disconnect{Reason: uint8(DisconnectClientQuit), Detail: "bye"})},
		{"Disconnect from server", TypeDisconnect, Unreliable, s, AppendDisconnect(nil, &Disconnect{Reason: uint8(DisconnectKicked)})},
		{"Heartbeat", TypeHeartbeat, Unreliable, c, AppendHeartbeat(nil, &Heartbeat{Token: 0x11223344})},
		{"Ack", TypeAck, Unreliable, s, AppendAck(nil, &Ack{Ack: 100, Bits: 0x80000005, DelayMS: 12})},
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
