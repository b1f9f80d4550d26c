package v3strict

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Field kinds of §9.2 and their widths.
var kindWidth = [...]int{0: 1, 1: 4, 2: 4, 3: 4, 4: 12}

const kindFloat, kindVec3 = 3, 4

// EntityType is one EntityTypeSchema of a GameStateSync.
type EntityType struct {
	ID     uint16
	Name   string
	Fields []uint8 // kinds, in bit order
}

// GameStateSync is the parsed §9.2 payload.
type GameStateSync struct {
	ClientID           uint32
	ServerTime         float32
	TickRate, ReplRate uint16
	ServerName, MOTD   string
	Map                string
	Mode, MatchState   uint8
	TimeRemaining      float32
	Types              map[uint16]EntityType
}

// ParseGameStateSync parses and checks a GameStateSync payload.
func ParseGameStateSync(p []byte) (GameStateSync, error) {
	r := reader{b: p}
	g := GameStateSync{ClientID: r.u32(), ServerTime: r.f32("server_time"), TickRate: r.u16(), ReplRate: r.u16()}
	g.ServerName = r.text("server_name", 64)
	g.MOTD = r.text("motd", 256)
	g.Map = r.text("map", 64)
	g.Mode, g.MatchState = r.u8(), r.u8()
	g.TimeRemaining = r.f32("time_remaining")
	n := int(r.u16())
	g.Types = make(map[uint16]EntityType)
	for i := 0; i < n && r.err == nil; i++ {
		t := EntityType{ID: r.u16(), Name: r.name("type name", 32)}
		fc := int(r.u8())
		if fc > 64 {
			return g, fmt.Errorf("type %d has %d fields (at most 64)", t.ID, fc)
		}
		for j := 0; j < fc && r.err == nil; j++ {
			r.name("field name", 32)
			kind, vis := r.u8(), r.u8()
			if r.err == nil && (int(kind) >= len(kindWidth) || vis > 3) {
				return g, fmt.Errorf("type %d field %d: kind %d, visibility %d", t.ID, j, kind, vis)
			}
			t.Fields = append(t.Fields, kind)
		}
		if _, dup := g.Types[t.ID]; dup && r.err == nil {
			return g, fmt.Errorf("entity type %d listed twice", t.ID)
		}
		g.Types[t.ID] = t
	}
	if err := r.finish(); err != nil {
		return g, err
	}
	switch {
	case g.TickRate == 0 || g.ReplRate == 0:
		return g, fmt.Errorf("tick_rate %d, replication_rate %d: both must be > 0", g.TickRate, g.ReplRate)
	case g.Mode > 6 || g.MatchState > 3:
		return g, fmt.Errorf("mode %d, match_state %d", g.Mode, g.MatchState)
	}
	return g, nil
}

// entity is what the client keeps of a spawned entity.
type entity struct {
	typ  EntityType
	mask uint64
}

// checkFields checks data against the fields of mask of t: exactly their
// widths in ascending bit order, floats finite, bools 0 or 1.
func checkFields(t EntityType, mask uint64, data []byte) error {
	if mask>>len(t.Fields) != 0 && len(t.Fields) < 64 {
		return fmt.Errorf("mask %#x names fields beyond type %d's %d", mask, t.ID, len(t.Fields))
	}
	r := reader{b: data}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		switch kind := t.Fields[i]; kind {
		case 0:
			if v := r.u8(); v > 1 && r.err == nil {
				return fmt.Errorf("bool field %d holds %d", i, v)
			}
		case kindFloat:
			r.f32(fmt.Sprintf("field %d", i))
		case kindVec3:
			for range 3 {
				r.f32(fmt.Sprintf("field %d", i))
			}
		default:
			r.take(kindWidth[kind])
		}
	}
	return r.finish()
}

// checkSpawn checks an EntitySpawn against the entity types of the last
// GameStateSync and returns the entity.
func checkSpawn(types map[uint16]EntityType, p []byte) (uint32, entity, error) {
	r := reader{b: p}
	id := r.u32()
	r.u8()
	mask := r.u64()
	typeID := r.u16()
	r.u32()
	if r.err != nil {
		return 0, entity{}, r.err
	}
	t, ok := types[typeID]
	if !ok {
		return 0, entity{}, fmt.Errorf("entity %d of type %d, which the last GameStateSync does not list", id, typeID)
	}
	if err := checkFields(t, mask, r.b); err != nil {
		return 0, entity{}, fmt.Errorf("entity %d: %w", id, err)
	}
	return id, entity{typ: t, mask: mask}, nil
}

// checkUpdate checks an EntityStateUpdate of a known entity: the dirty and
// visible fields' data in ascending bit order.
func checkUpdate(e entity, p []byte) error {
	mask := uint64(0)
	if len(p) >= 12 {
		mask = binary.LittleEndian.Uint64(p[4:])
	}
	n := len(e.typ.Fields)
	if n < 64 && mask>>n != 0 {
		return fmt.Errorf("dirty_mask %#x names fields beyond the type's %d", mask, n)
	}
	return checkFields(e.typ, mask&e.mask, p[12:])
}

func checkGameStateSync(p []byte, _ bool) error {
	_, err := ParseGameStateSync(p)
	return err
}
