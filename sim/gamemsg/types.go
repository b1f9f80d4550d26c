package gamemsg

import (
	"unicode"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The built-in game message types (§4). The transport's own types (1..6:
// handshake, Disconnect, Heartbeat, Ack) are netstack/wire's.
const (
	TypeEntitySpawn       wire.MessageType = 7
	TypeEntityDestroy     wire.MessageType = 8
	TypeEntityStateUpdate wire.MessageType = 9
	TypeEntityRPC         wire.MessageType = 10
	TypeClientInput       wire.MessageType = 11
	TypeInputAck          wire.MessageType = 12
	TypeChatMessage       wire.MessageType = 13
	TypeGameStateSync     wire.MessageType = 14
	TypeMatchStart        wire.MessageType = 15
	TypeMatchEnd          wire.MessageType = 16
	TypePlayerRespawn     wire.MessageType = 17
	TypeScoreUpdate       wire.MessageType = 18
)

// Length limits of the game messages' strings, in bytes.
const (
	MaxChatTextLen   = 256 // ChatMessage text
	MaxServerNameLen = 64  // GameStateSync server_name
	MaxMOTDLen       = 256 // GameStateSync motd
	MaxMapLen        = 64  // GameStateSync and MatchStart map
)

// rule is one game type's receive rule: its schema and the allocation-free
// structural check of its payload.
type rule struct {
	schema wire.Schema
	check  func(travel wire.Direction, p []byte) error
}

// rules is the table of §4 for the game messages.
var rules = [...]rule{
	{wire.Schema{ID: TypeEntitySpawn, Name: "EntitySpawn", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: entitySpawnFixedLen, MaxLen: wire.MaxPayload, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanEntitySpawn(p); return err }},
	{wire.Schema{ID: TypeEntityDestroy, Name: "EntityDestroy", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 4, MaxLen: 4, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseEntityDestroy(p); return err }},
	{wire.Schema{ID: TypeEntityStateUpdate, Name: "EntityStateUpdate", Direction: wire.ServerToClient, Channel: wire.Unreliable, MinLen: entityUpdateFixedLen, MaxLen: wire.MaxPayload, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanEntityStateUpdate(p); return err }},
	// entity_id, rpc and module-defined args: any 6 or more bytes.
	{wire.Schema{ID: TypeEntityRPC, Name: "EntityRPC", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 6, MaxLen: wire.MaxPayload, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(wire.Direction, []byte) error { return nil }},
	{wire.Schema{ID: TypeClientInput, Name: "ClientInput", Direction: wire.ClientToServer, Channel: wire.Unreliable, MinLen: 29, MaxLen: 29, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseClientInput(p); return err }},
	{wire.Schema{ID: TypeInputAck, Name: "InputAck", Direction: wire.ServerToClient, Channel: wire.Unreliable, MinLen: 37, MaxLen: 37, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseInputAck(p); return err }},
	{wire.Schema{ID: TypeChatMessage, Name: "ChatMessage", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 5, MaxLen: 2 + wire.MaxNameLen + 2 + MaxChatTextLen, StringFieldOffset: 0, RequiresAdmitted: true},
		func(travel wire.Direction, p []byte) error {
			_, _, err := scanChat(p, travel == wire.ClientToServer)
			return err
		}},
	{wire.Schema{ID: TypeGameStateSync, Name: "GameStateSync", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 26, MaxLen: wire.MaxPayload, StringFieldOffset: 12, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { return scanGameStateSync(p) }},
	{wire.Schema{ID: TypeMatchStart, Name: "MatchStart", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 12, MaxLen: 12 + MaxMapLen, StringFieldOffset: 0, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, _, err := scanMatchStart(p); return err }},
	{wire.Schema{ID: TypeMatchEnd, Name: "MatchEnd", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 9, MaxLen: 9, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParseMatchEnd(p); return err }},
	{wire.Schema{ID: TypePlayerRespawn, Name: "PlayerRespawn", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 24, MaxLen: 24, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := ParsePlayerRespawn(p); return err }},
	// 2 + 16·n: n = 4090 is the largest count within MAX_PAYLOAD.
	{wire.Schema{ID: TypeScoreUpdate, Name: "ScoreUpdate", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 2, MaxLen: 2 + 16*((wire.MaxPayload-2)/16), StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		func(_ wire.Direction, p []byte) error { _, err := scanScoreUpdate(p); return err }},
}

func init() {
	for i := range rules {
		wire.RegisterTypeName(rules[i].schema.ID, rules[i].schema.Name)
	}
}

// Register defines the game message types in reg, so that a server or a
// client built on it validates them on receive like any built-in type. It
// fails only when reg already defines one of them.
func Register(reg *wire.Registry) error {
	for i := range rules {
		if err := reg.DefineBuiltin(rules[i].schema, rules[i].check); err != nil {
			return err
		}
	}
	return registerRooms(reg)
}

// NewRegistry returns a registry with the transport's types and the game
// messages: what a sparkhost server or client receives with.
func NewRegistry() *wire.Registry {
	reg := wire.NewRegistry()
	if err := Register(reg); err != nil {
		panic(err) // a fresh registry defines none of them
	}
	return reg
}

// Schemas returns the game messages' schemas in type order.
func Schemas() []wire.Schema {
	out := make([]wire.Schema, len(rules))
	for i := range rules {
		out[i] = rules[i].schema
	}
	return out
}

// ValidChatText reports whether b is valid chat text (§4): 1..256 bytes of
// UTF-8 with no control character. Unlike a name, text may be all white space.
func ValidChatText(b []byte) bool {
	if len(b) == 0 || len(b) > MaxChatTextLen {
		return false
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if unicode.Is(unicode.Cc, r) {
			return false
		}
		b = b[size:]
	}
	return true
}

// Welcome adapts a GameStateSync builder to a transport's welcome hook
// (netstack.ServerConfig.Welcome): the first message an admitted client is
// sent is its GameStateSync, on ReliableOrdered.
func Welcome(build func(client uint32, dst []byte) []byte) func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte) {
	return func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte) {
		return TypeGameStateSync, wire.ReliableOrdered, build(client, dst)
	}
}
