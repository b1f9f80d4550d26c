package wire

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func userSchema(id MessageType) Schema {
	return Schema{ID: id, Name: "Emote", Direction: ClientToServer, Channel: Reliable,
		MinLen: 2, MaxLen: 100, StringFieldOffset: 4, RequiresAdmitted: true}
}

func TestRegisterRules(t *testing.T) {
	edit := func(f func(*Schema)) Schema { s := userSchema(1000); f(&s); return s }
	tests := []struct {
		name   string
		owner  string
		schema Schema
		want   error
		says   []string // substrings the message must contain
	}{
		{"valid", "emotes", userSchema(1000), nil, nil},
		{"opaque", "emotes", edit(func(s *Schema) { s.StringFieldOffset = NoStringFields }), nil, nil},
		{"string prefix ends at max_len", "emotes", edit(func(s *Schema) { s.MaxLen, s.StringFieldOffset = 10, 8 }), nil, nil},
		{"both directions, ordered", "emotes", edit(func(s *Schema) { s.Direction, s.Channel = BothDirections, ReliableOrdered }), nil, nil},
		{"max_len = MAX_PAYLOAD", "emotes", edit(func(s *Schema) { s.MaxLen = MaxPayload }), nil, nil},
		{"id 999", "emotes", userSchema(999), ErrReservedID, []string{"999", `"emotes"`, "1000"}},
		{"id 0", "emotes", userSchema(0), ErrReservedID, []string{"type 0"}},
		{"built-in Heartbeat id", "emotes", userSchema(TypeHeartbeat), ErrReservedID, []string{"type 5"}},
		{"min > max", "emotes", edit(func(s *Schema) { s.MinLen, s.MaxLen = 11, 10 }), ErrBadSchema, []string{"min_len 11", "max_len 10", "1000"}},
		{"max above MAX_PAYLOAD", "emotes", edit(func(s *Schema) { s.MaxLen = MaxPayload + 1 }), ErrBadSchema, []string{"65454"}},
		{"string prefix past max_len", "emotes", edit(func(s *Schema) { s.MaxLen, s.StringFieldOffset = 10, 9 }), ErrBadSchema, []string{"string_field_offset 9"}},
		{"string offset huge", "emotes", edit(func(s *Schema) { s.StringFieldOffset = 0xFFFFFFFE }), ErrBadSchema, nil},
		{"no direction", "emotes", edit(func(s *Schema) { s.Direction = 0 }), ErrBadSchema, []string{"direction"}},
		{"unknown direction bit", "emotes", edit(func(s *Schema) { s.Direction = 4 }), ErrBadSchema, []string{"direction"}},
		{"channel 3", "emotes", edit(func(s *Schema) { s.Channel = 3 }), ErrBadSchema, []string{"channel 3"}},
		{"empty owner", "", userSchema(1000), ErrBadSchema, nil},
		{"owner named builtin", BuiltinOwner, userSchema(1000), ErrBadSchema, nil},
		{"empty name", "emotes", edit(func(s *Schema) { s.Name = "" }), ErrBadSchema, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			err := r.Register(tc.owner, tc.schema)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				s, owner, ok := r.Lookup(tc.schema.ID)
				if !ok || owner != tc.owner || !reflect.DeepEqual(s, tc.schema) {
					t.Fatalf("Lookup = %+v, %q, %v", s, owner, ok)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Register error = %v, want %v", err, tc.want)
			}
			for _, sub := range tc.says {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not mention %q", err, sub)
				}
			}
			if _, _, ok := r.Lookup(tc.schema.ID); ok && tc.schema.ID >= FirstUserDefined {
				t.Errorf("a refused schema was registered")
			}
		})
	}
}

func TestRegisterCollision(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("emotes", userSchema(1000)); err != nil {
		t.Fatal(err)
	}
	other := userSchema(1000)
	other.Name = "Dance"
	err := r.Register("dances", other)
	if !errors.Is(err, ErrTypeTaken) {
		t.Fatalf("collision error = %v, want ErrTypeTaken", err)
	}
	for _, sub := range []string{`"emotes"`, `"dances"`, "1000"} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("collision error %q does not name %s", err, sub)
		}
	}
	if err := r.Register("emotes", userSchema(1000)); !errors.Is(err, ErrTypeTaken) {
		t.Fatalf("re-registering the same schema: %v, want ErrTypeTaken", err)
	}
	if _, owner, _ := r.Lookup(1000); owner != "emotes" {
		t.Fatalf("a refused registration replaced the owner: %q", owner)
	}
}

func TestUnregisterOwner(t *testing.T) {
	r := NewRegistry()
	for _, reg := range []struct {
		owner string
		id    MessageType
	}{{"emotes", 1002}, {"dances", 1001}, {"emotes", 1000}, {"emotes", 2000}} {
		if err := r.Register(reg.owner, userSchema(reg.id)); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.UnregisterOwner("emotes"); !reflect.DeepEqual(got, []MessageType{1000, 1002, 2000}) {
		t.Fatalf("UnregisterOwner = %v", got)
	}
	for _, id := range []MessageType{1000, 1002, 2000} {
		if _, _, ok := r.Lookup(id); ok {
			t.Errorf("type %d survived its module's removal", id)
		}
	}
	if _, owner, ok := r.Lookup(1001); !ok || owner != "dances" {
		t.Errorf("another module's type was removed")
	}
	if got := r.UnregisterOwner("emotes"); got != nil {
		t.Errorf("second UnregisterOwner = %v, want nil", got)
	}
	// A reloading module registers its types again.
	if err := r.Register("emotes", userSchema(1000)); err != nil {
		t.Fatalf("register after unload: %v", err)
	}
}

func TestBuiltinsUntouchable(t *testing.T) {
	r := NewRegistry()
	if got := r.UnregisterOwner(BuiltinOwner); got != nil {
		t.Fatalf("UnregisterOwner(builtin) = %v", got)
	}
	for id := MessageType(1); id <= TypeAck; id++ {
		s, owner, ok := r.Lookup(id)
		if !ok || owner != BuiltinOwner || s.ID != id {
			t.Errorf("Lookup(%d) = %+v, %q, %v", id, s, owner, ok)
		}
		if err := r.Register("evil", userSchema(id)); !errors.Is(err, ErrReservedID) {
			t.Errorf("Register over built-in %v: %v", id, err)
		}
	}
	for _, id := range []MessageType{0, 7, 18, 19, 999, 1000} { // 7..18 are sim/gamemsg's
		if _, _, ok := r.Lookup(id); ok {
			t.Errorf("Lookup(%d) found a type", id)
		}
	}
	if s, _, _ := r.Lookup(TypeConnect); s.Name != "ClientFinished" || s.MaxLen != 558 || s.Channel != Reliable {
		t.Errorf("sealed type 1 should be ClientFinished 4..558 on Reliable: %+v", s)
	}
}

func TestBuiltinTableMatchesSpec(t *testing.T) {
	// §4's table, column by column, for sealed packets (the transport's
	// own types; sim/gamemsg checks the game types').
	want := map[MessageType][4]uint32{ // dir, chan, min, max
		1: {1, 1, 4, 558}, 2: {2, 0, 155, 155}, 3: {2, 0, 5, 261}, 4: {3, 0, 3, 259},
		5: {3, 0, 8, 8}, 6: {3, 0, 10, 10},
	}
	for id, w := range want {
		s := builtins[id]
		got := [4]uint32{uint32(s.Direction), uint32(s.Channel), s.MinLen, s.MaxLen}
		if got != w || s.ID != id {
			t.Errorf("type %d (%v): got %v, want %v", id, id, got, w)
		}
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry()
	payload := enc(uint32(0), "hi")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			owner := fmt.Sprintf("module%d", g)
			for i := 0; i < 200; i++ {
				id := MessageType(1000 + g*1000 + i%10)
				_ = r.Register(owner, userSchema(id))
				h := Header{Type: id, Channel: Reliable}
				_ = r.Validate(ClientToServer, &h, payload)
				if i%25 == 0 {
					r.UnregisterOwner(owner)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestModuleProtocolsFollowTheOwnersTypes(t *testing.T) {
	reg := NewRegistry()
	if got := reg.ModuleProtocols(); len(got) != 0 {
		t.Fatalf("empty registry announces %+v", got)
	}
	for _, s := range []Schema{{ID: 1100, Name: "a", Direction: ClientToServer, Channel: Reliable, MinLen: 1, MaxLen: 4, StringFieldOffset: NoStringFields}} {
		if err := reg.Register("mmo", s); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register("dm", Schema{ID: 1300, Name: "b", Direction: ServerToClient, Channel: Reliable, MinLen: 1, MaxLen: 4, StringFieldOffset: NoStringFields}); err != nil {
		t.Fatal(err)
	}
	rev := reg.Revision()
	if err := reg.SetProtocol("mmo", ModuleProtocol{Protocol: 2, Oldest: 1}); err != nil {
		t.Fatal(err)
	}
	if reg.Revision() == rev {
		t.Fatal("declaring a protocol did not change the revision: clients would not be told")
	}
	want := []ModuleProtocol{{Module: "dm", Protocol: 1, Oldest: 1}, {Module: "mmo", Protocol: 2, Oldest: 1}}
	if got := reg.ModuleProtocols(); !slices.Equal(got, want) {
		t.Fatalf("ModuleProtocols %+v, want %+v", got, want)
	}
	if err := reg.SetProtocol("mmo", ModuleProtocol{Protocol: 1, Oldest: 2}); err == nil {
		t.Fatal("oldest above protocol accepted")
	}
	reg.UnregisterOwner("mmo")
	if got := reg.ModuleProtocols(); !slices.Equal(got, want[:1]) {
		t.Fatalf("after unloading mmo: %+v", got)
	}
	payload := AppendModuleProtocols(nil, &ModuleProtocols{Revision: reg.Revision(), Modules: want})
	m, err := ParseModuleProtocols(payload)
	if err != nil || !slices.Equal(m.Modules, want) {
		t.Fatalf("round trip: %+v, %v", m, err)
	}
	if v, ok := m.Lookup("mmo"); !ok || !v.Serves(1) || !v.Serves(2) || v.Serves(3) {
		t.Fatalf("mmo serves: %+v", v)
	}
}

// TestRegistryValidateWhileItsOwnerGoes: Validate reads a type's rule from
// the snapshot it loaded while the type's module unregisters, is abandoned
// and registers again; a snapshot is never changed in place (under -race a
// change in place is reported), and each answer is one of the states the
// type went through.
func TestRegistryValidateWhileItsOwnerGoes(t *testing.T) {
	r := NewRegistry()
	const id = MessageType(1500)
	payload := enc(uint32(0), "hi")
	if err := r.Register("mod", userSchema(id)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	bad := make(chan error, 1)
	go func() {
		defer close(done)
		h := Header{Type: id, Channel: Reliable}
		for range 20000 {
			switch err := r.Validate(ClientToServer, &h, payload); err {
			case nil, ErrTypeNotLoaded, ErrTypeFailed:
			default:
				bad <- err
				return
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			select {
			case err := <-bad:
				t.Fatalf("Validate said %v", err)
			default:
			}
			return
		default:
		}
		r.UnregisterOwner("mod")
		if i%2 == 0 {
			r.Abandon("mod")
		}
		if err := r.Register("mod", userSchema(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestValidateFindsTypesAcrossTheIDRange: a type is found wherever its id
// falls (a game built-in below 256, one at or above, a module id near
// FirstUserDefined or far above it), and an id next to a defined one is
// not.
func TestValidateFindsTypesAcrossTheIDRange(t *testing.T) {
	r := NewRegistry()
	game := func(id MessageType) Schema {
		return Schema{ID: id, Name: "Game", Direction: ClientToServer, Channel: Reliable, MinLen: 1, MaxLen: 8, StringFieldOffset: NoStringFields}
	}
	for _, id := range []MessageType{40, 255, 256, 900} {
		if err := r.DefineBuiltin(game(id), func(Direction, []byte) error { return nil }); err != nil {
			t.Fatalf("DefineBuiltin(%d): %v", id, err)
		}
	}
	for _, id := range []MessageType{FirstUserDefined, FirstUserDefined + 255, FirstUserDefined + 256, 40000} {
		if err := r.Register("mod", userSchema(id)); err != nil {
			t.Fatalf("Register(%d): %v", id, err)
		}
	}
	payload := enc(uint32(0), "hi")
	for _, id := range []MessageType{40, 255, 256, 900, FirstUserDefined, FirstUserDefined + 255, FirstUserDefined + 256, 40000} {
		h := Header{Type: id, Channel: Reliable}
		if err := r.Validate(ClientToServer, &h, payload); err != nil {
			t.Errorf("type %d: %v", id, err)
		}
	}
	for _, id := range []MessageType{41, 254, 257, 901, FirstUserDefined + 1, FirstUserDefined + 254, FirstUserDefined + 257, 40001} {
		h := Header{Type: id, Channel: Reliable}
		if err := r.Validate(ClientToServer, &h, payload); err != ErrUnknownType {
			t.Errorf("type %d, never defined: %v, want ErrUnknownType", id, err)
		}
	}
	r.UnregisterOwner("mod")
	h := Header{Type: FirstUserDefined + 255, Channel: Reliable}
	if err := r.Validate(ClientToServer, &h, payload); err != ErrTypeNotLoaded {
		t.Errorf("a module's type after it unregistered: %v, want ErrTypeNotLoaded", err)
	}
}
