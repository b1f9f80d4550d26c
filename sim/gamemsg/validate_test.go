package gamemsg

import (
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

func opposite(d wire.Direction) wire.Direction { return wire.BothDirections &^ d }

// TestValidateGameTypes checks the receive rules Register defines: every
// valid sample passes, and the direction, channel, size and payload rules
// each refuse what they must.
func TestValidateGameTypes(t *testing.T) {
	r := NewRegistry()
	for _, s := range gameSamples() {
		t.Run(s.name, func(t *testing.T) {
			h := wire.Header{Type: s.typ, Channel: s.ch}
			if err := r.Validate(s.travel, &h, s.payload); err != nil {
				t.Fatalf("valid sample: %v", err)
			}
			schema, owner, _ := r.Lookup(s.typ)
			if owner != wire.BuiltinOwner {
				t.Errorf("owner %q, want %q", owner, wire.BuiltinOwner)
			}
			if schema.Direction != wire.BothDirections {
				if err := r.Validate(opposite(s.travel), &h, s.payload); err != wire.ErrWrongDirection {
					t.Errorf("opposite direction: %v, want wire.ErrWrongDirection", err)
				}
			}
			for ch := wire.Unreliable; ch <= wire.ReliableOrdered; ch++ {
				wrong := wire.Header{Type: s.typ, Channel: ch}
				if err := r.Validate(s.travel, &wrong, s.payload); ch != s.ch && err != wire.ErrWrongChannel {
					t.Errorf("channel %v: %v, want wire.ErrWrongChannel", ch, err)
				}
			}
			if schema.MaxLen < wire.MaxPayload {
				long := make([]byte, schema.MaxLen+1)
				copy(long, s.payload)
				if err := r.Validate(s.travel, &h, long); err != wire.ErrBadSize {
					t.Errorf("%d bytes: %v, want wire.ErrBadSize", len(long), err)
				}
			}
			if err := r.Validate(s.travel, &h, s.payload[:schema.MinLen-1]); err != wire.ErrBadSize {
				t.Errorf("%d bytes: %v, want wire.ErrBadSize", schema.MinLen-1, err)
			}
			if len(s.payload) < int(schema.MaxLen) {
				if err := r.Validate(s.travel, &h, append(s.payload, 0)); s.typ != TypeEntityRPC &&
					s.typ != TypeEntitySpawn && s.typ != TypeEntityStateUpdate && !errors.Is(err, wire.ErrMalformedPayload) {
					t.Errorf("trailing byte: %v, want malformed", err)
				}
			}
		})
	}
}

// TestTransportAloneRefusesGameTypes: a registry without Register knows
// none of the game types, so the transport alone drops them.
func TestTransportAloneRefusesGameTypes(t *testing.T) {
	var r wire.Registry
	for _, s := range gameSamples() {
		h := wire.Header{Type: s.typ, Channel: s.ch}
		if err := r.Validate(s.travel, &h, s.payload); err != wire.ErrUnknownType {
			t.Errorf("%s without the game types: %v, want wire.ErrUnknownType", s.name, err)
		}
	}
}

func TestGameTableMatchesSpec(t *testing.T) {
	// §4's table, column by column, for sealed packets.
	want := map[wire.MessageType][4]uint32{ // dir, chan, min, max
		7: {2, 2, 19, wire.MaxPayload}, 8: {2, 2, 4, 4},
		9: {2, 0, 12, wire.MaxPayload}, 10: {3, 1, 6, wire.MaxPayload}, 11: {1, 0, 29, 29},
		12: {2, 0, 37, 37}, 13: {3, 1, 5, 292}, 14: {2, 2, 26, wire.MaxPayload},
		15: {2, 2, 12, 76}, 16: {2, 2, 9, 9}, 17: {2, 2, 24, 24}, 18: {2, 2, 2, 65442},
	}
	r := NewRegistry()
	for id, w := range want {
		s, _, ok := r.Lookup(id)
		got := [4]uint32{uint32(s.Direction), uint32(s.Channel), s.MinLen, s.MaxLen}
		if !ok || got != w || s.ID != id {
			t.Errorf("type %d (%v): got %v, want %v", id, id, got, w)
		}
	}
	if len(Schemas()) != len(want) {
		t.Errorf("Schemas() has %d types, want %d", len(Schemas()), len(want))
	}
}

func TestRegisterRules(t *testing.T) {
	r := NewRegistry()
	if err := Register(r); !errors.Is(err, wire.ErrTypeTaken) {
		t.Errorf("second Register: %v, want wire.ErrTypeTaken", err)
	}
	if got := r.UnregisterOwner(wire.BuiltinOwner); got != nil {
		t.Errorf("UnregisterOwner(builtin) removed %v", got)
	}
	if err := r.Register("evil", wire.Schema{ID: TypeChatMessage, Name: "x", Direction: wire.BothDirections, MaxLen: 8}); !errors.Is(err, wire.ErrReservedID) {
		t.Errorf("a module registering a game type: %v, want wire.ErrReservedID", err)
	}
}
