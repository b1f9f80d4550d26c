package gamemsg

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Fuzz targets of the game payloads. Their seed corpora live in
// testdata/fuzz/FuzzXxx; the f.Add seeds below keep each target useful even
// without them. Properties: nothing panics, a successful parse re-encodes to
// the same bytes (every encoding here is canonical), and wire.Registry.Validate
// agrees with the parsers.

var errNoParser = errors.New("no parser for this type")

func reencode[T any](m T, err error, encode func([]byte, *T) []byte) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return encode(nil, &m), nil
}

// parseGame runs the full parser of game type t and re-encodes the result.
func parseGame(t wire.MessageType, fromClient bool, p []byte) ([]byte, error) {
	switch t {
	case TypeEntitySpawn:
		m, err := ParseEntitySpawn(p)
		return reencode(m, err, AppendEntitySpawn)
	case TypeEntityDestroy:
		m, err := ParseEntityDestroy(p)
		return reencode(m, err, AppendEntityDestroy)
	case TypeEntityStateUpdate:
		m, err := ParseEntityStateUpdate(p)
		return reencode(m, err, AppendEntityStateUpdate)
	case TypeEntityRPC:
		m, err := ParseEntityRPC(p)
		return reencode(m, err, AppendEntityRPC)
	case TypeClientInput:
		m, err := ParseClientInput(p)
		return reencode(m, err, AppendClientInput)
	case TypeInputAck:
		m, err := ParseInputAck(p)
		return reencode(m, err, AppendInputAck)
	case TypeChatMessage:
		parse := ParseChatMessage
		if fromClient {
			parse = ParseChatMessageFromClient
		}
		m, err := parse(p)
		return reencode(m, err, AppendChatMessage)
	case TypeGameStateSync:
		m, err := ParseGameStateSync(p)
		return reencode(m, err, AppendGameStateSync)
	case TypeMatchStart:
		m, err := ParseMatchStart(p)
		return reencode(m, err, AppendMatchStart)
	case TypeMatchEnd:
		m, err := ParseMatchEnd(p)
		return reencode(m, err, AppendMatchEnd)
	case TypePlayerRespawn:
		m, err := ParsePlayerRespawn(p)
		return reencode(m, err, AppendPlayerRespawn)
	case TypeScoreUpdate:
		m, err := ParseScoreUpdate(p)
		return reencode(m, err, AppendScoreUpdate)
	}
	return nil, errNoParser
}

// FuzzParsePayload covers the parser of every game payload: typ selects the
// message type (7 + typ modulo 12), fromClient the ChatMessage rule.
func FuzzParsePayload(f *testing.F) {
	for _, s := range gameSamples() {
		f.Add(uint8(s.typ-TypeEntitySpawn), s.travel == wire.ClientToServer, s.payload)
	}
	f.Fuzz(func(t *testing.T, typ uint8, fromClient bool, p []byte) {
		mt := TypeEntitySpawn + wire.MessageType(typ%12)
		out, err := parseGame(mt, fromClient, p)
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

// FuzzEntityFields covers the schema-aware EntitySpawn and EntityStateUpdate
// parsers against testEntityType.
func FuzzEntityFields(f *testing.F) {
	spawn := testSpawn()
	f.Add(AppendEntitySpawn(nil, &spawn), uint64(0x1F))
	f.Add(AppendEntityStateUpdate(nil, &EntityStateUpdate{EntityID: 1, DirtyMask: 0x12,
		Data: appendValues(nil, []FieldValue{testSpawnValues[1], testSpawnValues[4]})}), uint64(0x1B))
	f.Fuzz(func(t *testing.T, p []byte, visible uint64) {
		if m, vals, err := ParseEntitySpawnFields(p, &testEntityType); err == nil {
			if _, serr := ParseEntitySpawn(p); serr != nil {
				t.Fatalf("schema-aware spawn parse accepted what the structural parse refuses: %v", serr)
			}
			if !bytes.Equal(AppendEntitySpawn(nil, &m), p) || !bytes.Equal(appendValues(nil, vals), m.Data) {
				t.Fatalf("EntitySpawn re-encoding differs")
			}
		}
		if m, vals, err := ParseEntityStateUpdateFields(p, &testEntityType, visible); err == nil {
			if !bytes.Equal(AppendEntityStateUpdate(nil, &m), p) || !bytes.Equal(appendValues(nil, vals), m.Data) {
				t.Fatalf("EntityStateUpdate re-encoding differs")
			}
		}
	})
}

// FuzzValidate runs wire.Registry.Validate (with the game types defined) over
// every game type and checks it against the full parsers: a payload
// Validate accepts parses, and one it calls malformed does not.
func FuzzValidate(f *testing.F) {
	for _, s := range gameSamples() {
		f.Add(uint16(s.typ), uint8(s.ch), uint8(s.travel), s.payload)
	}
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, typ uint16, ch, travel uint8, p []byte) {
		h := wire.Header{Type: wire.MessageType(typ), Channel: wire.Channel(ch % 4)}
		dir := wire.Direction(travel % 4)
		err := r.Validate(dir, &h, p)
		if h.Type < TypeEntitySpawn || h.Type > TypeScoreUpdate {
			return
		}
		if err != nil && !errors.Is(err, wire.ErrMalformedPayload) {
			return // refused by the table before the payload was looked at
		}
		_, perr := parseGame(h.Type, dir == wire.ClientToServer, p)
		if (err == nil) != (perr == nil) {
			t.Fatalf("%v: Validate = %v but the parser says %v", h.Type, err, perr)
		}
	})
}
