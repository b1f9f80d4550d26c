package gamemsg

import (
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

func TestParseEntityDestroy(t *testing.T) {
	runParseCases(t, ParseEntityDestroy, AppendEntityDestroy, []parseCase{
		{"entity 42", enc(uint32(42)), nil},
		{"3 bytes", make([]byte, 3), wire.ErrOverrun},
		{"5 bytes", make([]byte, 5), wire.ErrTrailing},
	})
}

func TestParseEntityRPC(t *testing.T) {
	runParseCases(t, ParseEntityRPC, AppendEntityRPC, []parseCase{
		{"no args", enc(uint32(42), uint16(1)), nil},
		{"args", enc(uint32(42), uint16(1), []byte{0, 0xff, 0}), nil},
		{"5 bytes", make([]byte, 5), wire.ErrOverrun},
	})
	p := enc(uint32(1), uint16(2), []byte{9})
	m, _ := ParseEntityRPC(p)
	p[6] = 0
	if m.Args[0] != 9 {
		t.Fatal("EntityRPC.Args aliases the receive buffer")
	}
}

func TestParseChatMessage(t *testing.T) {
	shared := []parseCase{
		{"32-byte text", enc("", strings.Repeat("t", 32)), nil},
		{"256-byte text", enc("", strings.Repeat("t", 256)), nil},
		{"white space text", enc("", "  "), nil},
		{"empty text", enc("", ""), errBadText},
		{"257-byte text", enc("", strings.Repeat("t", 257)), errBadText},
		{"newline in text", enc("", "a\nb"), errBadText},
		{"NUL in text", enc("", "a\x00"), errBadText},
		{"invalid UTF-8 text", enc("", "\xff"), errBadText},
		{"truncated text", enc("", uint16(3), []byte("ab")), wire.ErrOverrun},
		{"trailing byte", enc("", "gg", uint8(0)), wire.ErrTrailing},
		{"missing text", enc(""), wire.ErrOverrun},
	}
	fromServer := append([]parseCase{
		{"relayed", enc("alice", "gg"), nil},
		{"system message", enc("", "server restarting"), nil},
		{"32-byte sender", enc(strings.Repeat("s", 32), "hi"), nil},
		{"33-byte sender", enc(strings.Repeat("s", 33), "hi"), errBadName},
		{"white space sender", enc(" ", "hi"), errBadName},
		{"control in sender", enc("a\tb", "hi"), errBadName},
		{"invalid UTF-8 sender", enc("\xff", "hi"), errBadName},
	}, shared...)
	fromClient := append([]parseCase{
		{"client message", enc("", "gg"), nil},
		{"client sets sender", enc("alice", "gg"), errSenderSet},
	}, shared...)
	t.Run("to client", func(t *testing.T) {
		runParseCases(t, ParseChatMessage, AppendChatMessage, fromServer)
	})
	t.Run("from client", func(t *testing.T) {
		runParseCases(t, ParseChatMessageFromClient, AppendChatMessage, fromClient)
	})
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{ModeCustom.String(), "Custom"},
		{MatchIntermission.String(), "Intermission"},
		{MatchEndAdmin.String(), "Admin"},
		{KindVec3.String(), "vec3"},
		{VisibilitySpectator.String(), "Spectator"},
		{Visibility(4).String(), "Visibility(4)"},
		{TypeScoreUpdate.String(), "ScoreUpdate"},
		{TypeChatMessage.String(), "ChatMessage"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
