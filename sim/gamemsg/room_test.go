package gamemsg

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// roomSample is one well-formed room payload.
type roomSample struct {
	name    string
	typ     wire.MessageType
	travel  wire.Direction
	payload []byte
}

func sampleRoomInfo(id uint32, password bool) RoomInfo {
	ri := RoomInfo{ID: id, Name: "duel " + string(rune('a'+id%26)), Mode: "deathmatch", Map: "arena",
		Players: 2, Capacity: 8, State: RoomPlaying, Open: true, Password: password}
	if password {
		ri.Salt = [RoomSaltLen]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		ri.Iterations = 4096
	}
	return ri
}

func roomSamples() []roomSample {
	s2c, c2s := wire.ServerToClient, wire.ClientToServer
	pw := RoomCreate{Name: "secret", Mode: "tag", Capacity: 4, Password: true, Iterations: 4096}
	pw.Salt[0], pw.StoredKey[31] = 9, 1
	list := RoomList{Total: 3, Offset: 0, Rooms: []RoomInfo{sampleRoomInfo(1, false), sampleRoomInfo(2, true)}, Modes: []string{"deathmatch", "tag"}}
	state := RoomStateMsg{Room: sampleRoomInfo(1, false), Owner: 5, Total: 2,
		Members: []RoomMember{{Client: 5, Name: "alice"}, {Client: 6, Name: "bob"}}}
	return []roomSample{
		{"list request", TypeRoomListRequest, c2s, AppendRoomListRequest(nil, &RoomListRequest{Offset: 16})},
		{"list", TypeRoomList, s2c, AppendRoomList(nil, &list)},
		{"empty list", TypeRoomList, s2c, AppendRoomList(nil, &RoomList{})},
		{"create", TypeRoomCreate, c2s, AppendRoomCreate(nil, &RoomCreate{Name: "friday", Mode: "deathmatch", Capacity: 8})},
		{"create with password", TypeRoomCreate, c2s, AppendRoomCreate(nil, &pw)},
		{"join", TypeRoomJoin, c2s, AppendRoomJoin(nil, &RoomJoin{Room: 3})},
		{"join with proof", TypeRoomJoin, c2s, AppendRoomJoin(nil, &RoomJoin{Room: 3, Proof: bytes.Repeat([]byte{0xAB}, RoomKeyLen)})},
		{"leave", TypeRoomLeave, c2s, nil},
		{"rename", TypeRoomRename, c2s, AppendRoomRename(nil, &RoomRename{Name: "saturday"})},
		{"start", TypeRoomStart, c2s, nil},
		{"pause", TypeRoomPause, c2s, nil},
		{"kick", TypeRoomKick, c2s, AppendRoomKick(nil, &RoomKick{Client: 6})},
		{"chat request", TypeRoomChat, c2s, AppendRoomChatRequest(nil, &RoomChat{Scope: ChatGlobal, Text: "gg"})},
		{"chat relayed", TypeRoomChat, s2c, AppendRoomChat(nil, &RoomChat{Scope: ChatRoom, Room: 2, Sender: 5, SenderName: "alice", Text: "hi"})},
		{"result", TypeRoomResult, s2c, AppendRoomResult(nil, &RoomResult{Request: TypeRoomJoin, Code: RoomFull, Room: 3, Detail: "room 3 holds 8 of 8"})},
		{"state", TypeRoomState, s2c, AppendRoomState(nil, &state)},
		{"event joined", TypeRoomEvent, s2c, AppendRoomEvent(nil, &RoomEvent{Kind: RoomJoined, Room: 1, Client: 6, Name: "bob"})},
		{"event left timed out", TypeRoomEvent, s2c, AppendRoomEvent(nil, &RoomEvent{Kind: RoomLeft, Room: 1, Client: 6, Value: uint32(LeaveTimedOut)})},
		{"event paused", TypeRoomEvent, s2c, AppendRoomEvent(nil, &RoomEvent{Kind: RoomPauseChanged, Room: 1, Client: 5, Value: 1})},
		{"event password failures", TypeRoomEvent, s2c, AppendRoomEvent(nil, &RoomEvent{Kind: RoomPasswordFailures, Room: 1, Client: 9, Value: 6, Name: "eve"})},
		{"update", TypeRoomUpdate, s2c, AppendRoomUpdate(nil, &RoomUpdate{Kind: RoomChanged, Room: sampleRoomInfo(4, true)})},
	}
}

// parseRoom runs the full parser of room type t and re-encodes the result.
func parseRoom(t wire.MessageType, fromClient bool, p []byte) ([]byte, error) {
	switch t {
	case TypeRoomListRequest:
		m, err := ParseRoomListRequest(p)
		return reencode(m, err, AppendRoomListRequest)
	case TypeRoomList:
		m, err := ParseRoomList(p)
		return reencode(m, err, AppendRoomList)
	case TypeRoomCreate:
		m, err := ParseRoomCreate(p)
		return reencode(m, err, AppendRoomCreate)
	case TypeRoomJoin:
		m, err := ParseRoomJoin(p)
		return reencode(m, err, AppendRoomJoin)
	case TypeRoomLeave, TypeRoomStart, TypeRoomPause:
		if err := emptyPayload(wire.ClientToServer, p); err != nil {
			return nil, err
		}
		return nil, nil
	case TypeRoomRename:
		m, err := ParseRoomRename(p)
		return reencode(m, err, AppendRoomRename)
	case TypeRoomKick:
		m, err := ParseRoomKick(p)
		return reencode(m, err, AppendRoomKick)
	case TypeRoomChat:
		if fromClient {
			m, err := ParseRoomChatRequest(p)
			return reencode(m, err, AppendRoomChatRequest)
		}
		m, err := ParseRoomChat(p)
		return reencode(m, err, AppendRoomChat)
	case TypeRoomResult:
		m, err := ParseRoomResult(p)
		return reencode(m, err, AppendRoomResult)
	case TypeRoomState:
		m, err := ParseRoomState(p)
		return reencode(m, err, AppendRoomState)
	case TypeRoomEvent:
		m, err := ParseRoomEvent(p)
		return reencode(m, err, AppendRoomEvent)
	case TypeRoomUpdate:
		m, err := ParseRoomUpdate(p)
		return reencode(m, err, AppendRoomUpdate)
	}
	return nil, errNoParser
}

func TestRoomPayloadsRoundTripAndValidate(t *testing.T) {
	reg := NewRegistry()
	for _, s := range roomSamples() {
		t.Run(s.name, func(t *testing.T) {
			out, err := parseRoom(s.typ, s.travel == wire.ClientToServer, s.payload)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !bytes.Equal(out, s.payload) {
				t.Fatalf("re-encoding differs:\n in % x\nout % x", s.payload, out)
			}
			sch, owner, ok := reg.Lookup(s.typ)
			if !ok || owner != wire.BuiltinOwner {
				t.Fatalf("%v not a built-in of the registry", s.typ)
			}
			h := wire.Header{Type: s.typ, Channel: sch.Channel}
			if err := reg.Validate(s.travel, &h, s.payload); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestRoomPayloadsRefused(t *testing.T) {
	info := func(edit func(*RoomInfo)) []byte {
		ri := sampleRoomInfo(1, false)
		edit(&ri)
		return AppendRoomUpdate(nil, &RoomUpdate{Room: ri})
	}
	event := func(ev RoomEvent) []byte { return AppendRoomEvent(nil, &ev) }
	cases := []struct {
		name       string
		typ        wire.MessageType
		fromClient bool
		payload    []byte
		want       string
	}{
		{"room id 0", TypeRoomUpdate, false, info(func(r *RoomInfo) { r.ID = 0 }), "range"},
		{"capacity 0", TypeRoomUpdate, false, info(func(r *RoomInfo) { r.Capacity = 0 }), "range"},
		{"state 9", TypeRoomUpdate, false, info(func(r *RoomInfo) { r.State = 9 }), "enumeration"},
		{"empty room name", TypeRoomUpdate, false, info(func(r *RoomInfo) { r.Name = "" }), "name"},
		{"control char in mode", TypeRoomUpdate, false, info(func(r *RoomInfo) { r.Mode = "a\x01" }), "name"},
		{"reserved flag", TypeRoomUpdate, false, func() []byte {
			p := info(func(*RoomInfo) {})
			p[len(p)-1] |= 0x80
			return p
		}(), "reserved"},
		{"password without salt", TypeRoomUpdate, false, func() []byte {
			p := info(func(*RoomInfo) {})
			p[len(p)-1] |= roomFlagPassword
			return p
		}(), "ends inside"},
		{"list count over a page", TypeRoomList, false, []byte{0, 0, 0, 0, RoomListPage + 1, 0}, "range"},
		{"list count beyond bytes", TypeRoomList, false, []byte{0, 0, 0, 0, 3, 0}, "range"},
		{"create reserved flag", TypeRoomCreate, true, func() []byte {
			p := AppendRoomCreate(nil, &RoomCreate{Name: "a", Mode: "b"})
			p[len(p)-1] = 2
			return p
		}(), "reserved"},
		{"create long name", TypeRoomCreate, true, AppendRoomCreate(nil, &RoomCreate{Name: strings.Repeat("n", MaxRoomNameLen+1), Mode: "b"}), "name"},
		{"join proof of 5", TypeRoomJoin, true, AppendRoomJoin(nil, &RoomJoin{Room: 1, Proof: []byte{1, 2, 3, 4, 5}}), "range"},
		{"join trailing byte", TypeRoomJoin, true, append(AppendRoomJoin(nil, &RoomJoin{Room: 1}), 0), "trailing"},
		{"chat scope 2", TypeRoomChat, true, []byte{2, 1, 0, 'x'}, "enumeration"},
		{"chat empty text", TypeRoomChat, true, []byte{0, 0, 0}, "chat text"},
		{"result unknown code", TypeRoomResult, false, AppendRoomResult(nil, &RoomResult{Code: 200}), "enumeration"},
		{"event room 0", TypeRoomEvent, false, event(RoomEvent{Kind: RoomStarted}), "range"},
		{"event unknown kind", TypeRoomEvent, false, event(RoomEvent{Kind: 99, Room: 1}), "enumeration"},
		{"event left reason 99", TypeRoomEvent, false, event(RoomEvent{Kind: RoomLeft, Room: 1, Value: 99}), "enumeration"},
		{"event pause 2", TypeRoomEvent, false, event(RoomEvent{Kind: RoomPauseChanged, Room: 1, Value: 2}), "range"},
		{"event password failures 0", TypeRoomEvent, false, event(RoomEvent{Kind: RoomPasswordFailures, Room: 1}), "range"},
		{"state more members than total", TypeRoomState, false, AppendRoomState(nil, &RoomStateMsg{Room: sampleRoomInfo(1, false), Total: 1,
			Members: []RoomMember{{1, "a"}, {2, "b"}}}), "range"},
		{"leave with a byte", TypeRoomLeave, true, []byte{0}, "range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseRoom(c.typ, c.fromClient, c.payload)
			if err == nil || !errors.Is(err, wire.ErrMalformedPayload) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a malformed payload mentioning %q", err, c.want)
			}
		})
	}
}

// TestRoomChecksAllocateNothing: the receive-side checks run per packet on
// network goroutines.
func TestRoomChecksAllocateNothing(t *testing.T) {
	reg := NewRegistry()
	for _, s := range roomSamples() {
		sch, _, _ := reg.Lookup(s.typ)
		h := wire.Header{Type: s.typ, Channel: sch.Channel}
		if n := testing.AllocsPerRun(100, func() { _ = reg.Validate(s.travel, &h, s.payload) }); n != 0 {
			t.Errorf("%s: Validate allocates %v times", s.name, n)
		}
	}
}

// FuzzRoomPayload covers every room parser: typ selects the type (32 +
// typ modulo 14), fromClient the RoomChat layout. Nothing panics, errors
// are malformed payloads, and a successful parse re-encodes to the same
// bytes.
func FuzzRoomPayload(f *testing.F) {
	for _, s := range roomSamples() {
		f.Add(uint8(s.typ-TypeRoomListRequest), s.travel == wire.ClientToServer, s.payload)
	}
	f.Fuzz(func(t *testing.T, typ uint8, fromClient bool, p []byte) {
		mt := TypeRoomListRequest + wire.MessageType(typ%14)
		out, err := parseRoom(mt, fromClient, p)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformedPayload) {
				t.Fatalf("%v: error %v does not match wire.ErrMalformedPayload", mt, err)
			}
			return
		}
		if !bytes.Equal(out, p) {
			t.Fatalf("%v re-encoding differs:\n in % x\nout % x", mt, p, out)
		}
	})
}

// FuzzRoomValidate checks wire.Registry.Validate against the full parsers
// for the room types: what Validate accepts parses, what it calls
// malformed does not.
func FuzzRoomValidate(f *testing.F) {
	for _, s := range roomSamples() {
		f.Add(uint8(s.typ-TypeRoomListRequest), uint8(s.travel), s.payload)
	}
	reg := NewRegistry()
	f.Fuzz(func(t *testing.T, typ, travel uint8, p []byte) {
		mt := TypeRoomListRequest + wire.MessageType(typ%14)
		sch, _, _ := reg.Lookup(mt)
		dir := wire.Direction(travel%2 + 1)
		h := wire.Header{Type: mt, Channel: sch.Channel}
		err := reg.Validate(dir, &h, p)
		if err != nil && !errors.Is(err, wire.ErrMalformedPayload) {
			return // refused by the table (direction, size) before the payload was looked at
		}
		_, perr := parseRoom(mt, dir == wire.ClientToServer, p)
		if (err == nil) != (perr == nil) {
			t.Fatalf("%v: Validate = %v but the parser says %v", mt, err, perr)
		}
	})
}
