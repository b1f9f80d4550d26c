package v3strict

import (
	"fmt"
	"math/bits"
)

// Message types of the contract's §4 table.
const (
	TypeConnect           uint16 = 1
	TypeConnectAccepted   uint16 = 2
	TypeConnectRejected   uint16 = 3
	TypeDisconnect        uint16 = 4
	TypeHeartbeat         uint16 = 5
	TypeAck               uint16 = 6
	TypeEntitySpawn       uint16 = 7
	TypeEntityDestroy     uint16 = 8
	TypeEntityStateUpdate uint16 = 9
	TypeEntityRPC         uint16 = 10
	TypeClientInput       uint16 = 11
	TypeInputAck          uint16 = 12
	TypeChatMessage       uint16 = 13
	TypeGameStateSync     uint16 = 14
	TypeMatchStart        uint16 = 15
	TypeMatchEnd          uint16 = 16
	TypePlayerRespawn     uint16 = 17
	TypeScoreUpdate       uint16 = 18
	// FirstUserDefined is the lowest module type (§10).
	FirstUserDefined uint16 = 1000
)

// Direction bits of §4.
const (
	ToServer uint8 = 1 << iota // C: client → server
	ToClient                   // S: server → client
)

// Disconnect reasons of §8 (0..11 are all v3 defines).
const (
	DisconnectUnknown                uint8 = 0
	DisconnectClientQuit             uint8 = 1
	DisconnectServerShutdown         uint8 = 2
	DisconnectKicked                 uint8 = 3
	DisconnectTimeout                uint8 = 5
	DisconnectReliableDeliveryFailed uint8 = 7
	DisconnectNameInvalid            uint8 = 9
	lastDisconnectReason             uint8 = 11
)

// Rule is the rule of one message type: the directions it may travel, the
// one channel it must use, its size bounds and, for a module type, the
// offset of the string to screen (NoStringFields for none).
type Rule struct {
	ID           uint16
	Name         string
	Dir          uint8
	Channel      Channel
	Min, Max     uint32
	StringOffset uint32
	check        func(p []byte, toClient bool) error
}

// NoStringFields is NO_STRING_FIELDS (§10).
const NoStringFields uint32 = 0xFFFFFFFF

// builtins is the §4 table: the only types below 1000 a v3 peer may send.
// ConnectAccepted and ConnectRejected travel only in plain frames, the
// Connect hello only plain; sealed type 1 is ClientFinished.
var builtins = map[uint16]Rule{
	TypeConnect:           {TypeConnect, "ClientFinished", ToServer, Reliable, 4, 324, NoStringFields, checkClientFinished},
	TypeConnectAccepted:   {TypeConnectAccepted, "ConnectAccepted", ToClient, Unreliable, 155, 155, NoStringFields, nil},
	TypeConnectRejected:   {TypeConnectRejected, "ConnectRejected", ToClient, Unreliable, 5, 261, NoStringFields, nil},
	TypeDisconnect:        {TypeDisconnect, "Disconnect", ToServer | ToClient, Unreliable, 3, 259, NoStringFields, checkDisconnect},
	TypeHeartbeat:         {TypeHeartbeat, "Heartbeat", ToServer | ToClient, Unreliable, 8, 8, NoStringFields, nil},
	TypeAck:               {TypeAck, "Ack", ToServer | ToClient, Unreliable, 10, 10, NoStringFields, nil},
	TypeEntitySpawn:       {TypeEntitySpawn, "EntitySpawn", ToClient, ReliableOrdered, 19, MaxPayload, NoStringFields, checkSpawnShape},
	TypeEntityDestroy:     {TypeEntityDestroy, "EntityDestroy", ToClient, ReliableOrdered, 4, 4, NoStringFields, nil},
	TypeEntityStateUpdate: {TypeEntityStateUpdate, "EntityStateUpdate", ToClient, Unreliable, 12, MaxPayload, NoStringFields, nil},
	TypeEntityRPC:         {TypeEntityRPC, "EntityRPC", ToServer | ToClient, Reliable, 6, MaxPayload, NoStringFields, nil},
	TypeClientInput:       {TypeClientInput, "ClientInput", ToServer, Unreliable, 29, 29, NoStringFields, checkClientInput},
	TypeInputAck:          {TypeInputAck, "InputAck", ToClient, Unreliable, 37, 37, NoStringFields, checkInputAck},
	TypeChatMessage:       {TypeChatMessage, "ChatMessage", ToServer | ToClient, Reliable, 5, 292, NoStringFields, checkChat},
	TypeGameStateSync:     {TypeGameStateSync, "GameStateSync", ToClient, ReliableOrdered, 26, MaxPayload, NoStringFields, checkGameStateSync},
	TypeMatchStart:        {TypeMatchStart, "MatchStart", ToClient, ReliableOrdered, 12, 76, NoStringFields, checkMatchStart},
	TypeMatchEnd:          {TypeMatchEnd, "MatchEnd", ToClient, ReliableOrdered, 9, 9, NoStringFields, checkMatchEnd},
	TypePlayerRespawn:     {TypePlayerRespawn, "PlayerRespawn", ToClient, ReliableOrdered, 24, 24, NoStringFields, checkRespawn},
	TypeScoreUpdate:       {TypeScoreUpdate, "ScoreUpdate", ToClient, ReliableOrdered, 2, 2 + 16*4090, NoStringFields, checkScoreUpdate},
}

// TypeName names a type of the table, a module type or a number.
func TypeName(t uint16) string {
	if r, ok := builtins[t]; ok {
		return r.Name
	}
	return fmt.Sprintf("type %d", t)
}

// Table is what a client accepts and may send: §4's built-in types and
// the module types it was told about (§10).
type Table struct {
	modules map[uint16]Rule
}

// NewTable returns the table of §4 plus modules, each a module type ≥ 1000
// with its direction, channel, size bounds and string offset.
func NewTable(modules []Rule) (*Table, error) {
	t := &Table{modules: make(map[uint16]Rule, len(modules))}
	for _, m := range modules {
		switch {
		case m.ID < FirstUserDefined:
			return nil, fmt.Errorf("module type %d (%s): module types start at %d", m.ID, m.Name, FirstUserDefined)
		case m.Min > m.Max || m.Max > MaxPayload || m.Channel > ReliableOrdered || m.Dir == 0 || m.Dir&^(ToServer|ToClient) != 0:
			return nil, fmt.Errorf("module type %d (%s): invalid rule %+v", m.ID, m.Name, m)
		}
		if _, dup := t.modules[m.ID]; dup {
			return nil, fmt.Errorf("module type %d listed twice", m.ID)
		}
		m.check = nil
		t.modules[m.ID] = m
	}
	return t, nil
}

// Lookup returns the rule of t.
func (t *Table) Lookup(id uint16) (Rule, bool) {
	if r, ok := builtins[id]; ok {
		return r, true
	}
	r, ok := t.modules[id]
	return r, ok
}

// Check applies §3's drop rules to a sealed packet travelling in dir: the
// type is in the table, may travel that way, uses its channel, has a size
// within its rule and a payload that passes its schema. (EntitySpawn's and
// EntityStateUpdate's fields need the entity types; the client checks them.)
func (t *Table) Check(dir uint8, h Header, payload []byte) error {
	r, ok := t.Lookup(h.Type)
	switch {
	case !ok:
		return fmt.Errorf("type %d is not a v3 type (§4) nor a module type this client was told about", h.Type)
	case h.Type == TypeConnectAccepted || h.Type == TypeConnectRejected:
		return fmt.Errorf("%s travels only in plain frames", r.Name)
	case r.Dir&dir == 0:
		return fmt.Errorf("%s (%d) may not travel %s", r.Name, h.Type, dirName(dir))
	case h.Channel != r.Channel:
		return fmt.Errorf("%s (%d) on channel %s; it must use %s", r.Name, h.Type, h.Channel, r.Channel)
	case uint32(len(payload)) < r.Min || uint32(len(payload)) > r.Max:
		return fmt.Errorf("%s (%d) of %d bytes; its size is %d..%d", r.Name, h.Type, len(payload), r.Min, r.Max)
	}
	if r.check != nil {
		if err := r.check(payload, dir == ToClient); err != nil {
			return fmt.Errorf("%s (%d): %w", r.Name, h.Type, err)
		}
		return nil
	}
	return screen(r.StringOffset, payload)
}

func dirName(dir uint8) string {
	if dir == ToClient {
		return "server → client"
	}
	return "client → server"
}

// screen applies a module schema's string rule (§10).
func screen(off uint32, p []byte) error {
	if off == NoStringFields {
		return nil
	}
	if uint64(off)+2 > uint64(len(p)) {
		return fmt.Errorf("string at offset %d outside the payload", off)
	}
	r := reader{b: p[off:]}
	r.text("string field", MaxPayload)
	return r.err
}

func checkClientFinished(p []byte, _ bool) error {
	r := reader{b: p}
	if n := r.str(); len(n) > 64 {
		return fmt.Errorf("name field of %d bytes", len(n))
	}
	if n := r.u16(); n > 256 {
		return fmt.Errorf("ticket of %d bytes", n)
	} else {
		r.take(int(n))
	}
	return r.finish()
}

func checkDisconnect(p []byte, _ bool) error {
	r := reader{b: p}
	if reason := r.u8(); reason > lastDisconnectReason {
		return fmt.Errorf("reason %d is not one of §8's 0..%d", reason, lastDisconnectReason)
	}
	r.text("detail", 256)
	return r.finish()
}

func checkClientInput(p []byte, _ bool) error {
	r := reader{b: p}
	r.u32()
	fwd, right := r.f32("move_forward"), r.f32("move_right")
	r.f32("look_yaw")
	pitch := r.f32("look_pitch")
	buttons := r.u8()
	dt := r.f32("dt")
	r.f32("client_time")
	if err := r.finish(); err != nil {
		return err
	}
	if fwd < -1 || fwd > 1 || right < -1 || right > 1 || pitch < -89 || pitch > 89 || buttons&0xE0 != 0 || dt <= 0 || dt > 0.25 {
		return fmt.Errorf("ClientInput out of range")
	}
	return nil
}

func checkInputAck(p []byte, _ bool) error {
	r := reader{b: p}
	r.u32()
	for _, f := range []string{"position.x", "position.y", "position.z", "velocity.x", "velocity.y", "velocity.z", "yaw", "pitch"} {
		r.f32(f)
	}
	r.u8()
	return r.finish()
}

func checkChat(p []byte, toClient bool) error {
	r := reader{b: p}
	sender := r.str()
	text := r.str()
	if err := r.finish(); err != nil {
		return err
	}
	switch {
	case !toClient && len(sender) != 0:
		return fmt.Errorf("a client's ChatMessage sender must be empty")
	case toClient && !validName(sender, 32):
		return fmt.Errorf("sender %q breaks the name rule", sender)
	case !validChatText(text):
		return fmt.Errorf("text %q is not 1..256 bytes of UTF-8 without control characters", text)
	}
	return nil
}

func checkMatchStart(p []byte, _ bool) error {
	r := reader{b: p}
	r.text("map", 64)
	mode := r.u8()
	r.f32("time_limit_s")
	r.u32()
	r.u8()
	if err := r.finish(); err != nil {
		return err
	}
	if mode > 6 {
		return fmt.Errorf("mode %d", mode)
	}
	return nil
}

func checkMatchEnd(p []byte, _ bool) error {
	if p[0] > 2 {
		return fmt.Errorf("reason %d", p[0])
	}
	return nil
}

func checkRespawn(p []byte, _ bool) error {
	r := reader{b: p}
	r.u32()
	r.u32()
	for _, f := range []string{"position.x", "position.y", "position.z", "yaw"} {
		r.f32(f)
	}
	return r.finish()
}

func checkScoreUpdate(p []byte, _ bool) error {
	r := reader{b: p}
	n := int(r.u16())
	if len(p) != 2+16*n {
		return fmt.Errorf("%d entries in %d bytes", n, len(p))
	}
	return nil
}

// checkSpawnShape checks what EntitySpawn says of itself: field_count is
// the popcount of fields_mask (the fields need the type's schema).
func checkSpawnShape(p []byte, _ bool) error {
	r := reader{b: p}
	r.u32()
	count := r.u8()
	mask := r.u64()
	if int(count) != bits.OnesCount64(mask) {
		return fmt.Errorf("field_count %d, fields_mask %#x has %d bits", count, mask, bits.OnesCount64(mask))
	}
	return r.err
}
