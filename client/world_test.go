package client

import (
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

var testTypes = []gamemsg.EntityTypeSchema{{TypeID: 3, Name: "player", Fields: []gamemsg.FieldSchema{
	{Name: "pos", Kind: gamemsg.KindVec3},
	{Name: "hp", Kind: gamemsg.KindInt32},
	{Name: "ammo", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
}}}

func gssMsg(types []gamemsg.EntityTypeSchema) netstack.Message {
	return netstack.Message{Header: wire.Header{Type: gamemsg.TypeGameStateSync, Channel: wire.ReliableOrdered},
		Payload: gamemsg.AppendGameStateSync(nil, &gamemsg.GameStateSync{ClientID: 1, TickRate: 60, ReplicationRate: 20, Types: types})}
}

func spawnMsg(id uint32, mask uint64, vals ...gamemsg.FieldValue) netstack.Message {
	var data []byte
	for i := range vals {
		data = gamemsg.AppendFieldValue(data, &vals[i])
	}
	return netstack.Message{Header: wire.Header{Type: gamemsg.TypeEntitySpawn, Channel: wire.ReliableOrdered},
		Payload: gamemsg.AppendEntitySpawn(nil, &gamemsg.EntitySpawn{EntityID: id, FieldsMask: mask, TypeID: 3, Owner: 9, Data: data})}
}

func updateMsg(seq, id uint32, mask uint64, vals ...gamemsg.FieldValue) netstack.Message {
	var data []byte
	for i := range vals {
		data = gamemsg.AppendFieldValue(data, &vals[i])
	}
	return netstack.Message{Header: wire.Header{Type: gamemsg.TypeEntityStateUpdate, Channel: wire.Unreliable, Sequence: seq},
		Payload: gamemsg.AppendEntityStateUpdate(nil, &gamemsg.EntityStateUpdate{EntityID: id, DirtyMask: mask, Data: data})}
}

func pos(x float32) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: 0, Kind: gamemsg.KindVec3, Vec: wire.Vec3{X: x}}
}
func hp(v int32) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: v}
}

func TestWorldTracksEntities(t *testing.T) {
	w := NewWorld()
	if err := w.Apply(spawnMsg(5, 3, pos(1), hp(100))); !errors.Is(err, ErrUnknownEntityType) {
		t.Fatalf("spawn before the schemas: %v", err)
	}
	must := func(m netstack.Message) {
		t.Helper()
		if err := w.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	must(gssMsg(testTypes))
	must(updateMsg(10, 5, 2, hp(1))) // before the spawn: skipped
	must(spawnMsg(5, 3, pos(1), hp(100)))
	must(updateMsg(12, 5, 1, pos(2)))
	must(updateMsg(11, 5, 3, pos(9), hp(50))) // older: pos stays 2, hp applies
	must(updateMsg(12, 5, 2, hp(7)))          // 12 carried no hp before: newer than 11, applied
	e, ok := w.Entity(5)
	if !ok {
		t.Fatal("entity 5 unknown")
	}
	if p, _ := e.Position(); p.X != 2 {
		t.Fatalf("position %v", p)
	}
	if v, _ := e.Field("hp"); v.Int != 7 {
		t.Fatalf("hp %+v", v)
	}
	if _, visible := e.Field("ammo"); visible {
		t.Fatal("ammo visible without its bit")
	}
	// A field outside the spawn's mask is malformed for this client.
	if err := w.Apply(updateMsg(13, 5, 4, gamemsg.FieldValue{Index: 2, Kind: gamemsg.KindUint32, Uint: 3})); err == nil {
		t.Fatal("an update carrying an invisible field was accepted")
	}
	must(netstack.Message{Header: wire.Header{Type: gamemsg.TypeEntityDestroy}, Payload: gamemsg.AppendEntityDestroy(nil, &gamemsg.EntityDestroy{EntityID: 5})})
	if len(w.Entities()) != 0 {
		t.Fatal("destroyed entity kept")
	}
	st := w.Stats()
	if st.Spawns != 1 || st.Destroys != 1 || st.Unknown != 1 || st.Stale != 1 || st.Malformed != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWorldDropsEntitiesOfChangedTypes(t *testing.T) {
	w := NewWorld()
	w.Apply(gssMsg(testTypes))
	w.Apply(spawnMsg(5, 3, pos(1), hp(100)))
	w.Apply(gssMsg(testTypes)) // the same schema: kept
	if len(w.Entities()) != 1 {
		t.Fatal("entity of an unchanged type dropped")
	}
	changed := []gamemsg.EntityTypeSchema{{TypeID: 3, Name: "player", Fields: testTypes[0].Fields[:2]}}
	w.Apply(gssMsg(changed))
	if len(w.Entities()) != 0 {
		t.Fatal("entity of a changed type kept")
	}
}

// FuzzWorldApply feeds arbitrary payloads as each entity message after a
// valid GameStateSync: Apply must never panic, and a payload it accepts
// must leave the world consistent (every field of the schema present).
func FuzzWorldApply(f *testing.F) {
	f.Add(uint8(7), spawnMsg(5, 3, pos(1), hp(100)).Payload)
	f.Add(uint8(9), updateMsg(1, 5, 1, pos(2)).Payload)
	f.Add(uint8(8), []byte{5, 0, 0, 0})
	f.Add(uint8(14), gssMsg(testTypes).Payload)
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		w := NewWorld()
		w.Apply(gssMsg(testTypes))
		w.Apply(spawnMsg(5, 7, pos(1), hp(100), gamemsg.FieldValue{Index: 2, Kind: gamemsg.KindUint32}))
		for seq := uint32(1); seq < 3; seq++ {
			w.Apply(netstack.Message{Header: wire.Header{Type: wire.MessageType(typ%16 + 1), Sequence: seq}, Payload: p})
		}
		for _, e := range w.Entities() {
			if len(e.Fields) != len(e.schema.Fields) {
				t.Fatalf("entity %d has %d fields, its type %d", e.ID, len(e.Fields), len(e.schema.Fields))
			}
			for i, v := range e.Fields {
				if v.Index != i || v.Kind != e.schema.Fields[i].Kind {
					t.Fatalf("entity %d field %d: %+v", e.ID, i, v)
				}
			}
		}
	})
}

func TestWorldRange(t *testing.T) {
	w := NewWorld()
	for _, m := range []netstack.Message{gssMsg(testTypes), spawnMsg(5, 3, pos(1), hp(100)), spawnMsg(6, 3, pos(2), hp(50))} {
		if err := w.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	var sum float32
	n := 0
	w.Range(func(e *Entity) bool {
		p, _ := e.Position()
		sum += p.X
		n++
		return true
	})
	if n != 2 || sum != 3 {
		t.Fatalf("Range saw %d entities, positions summing to %v", n, sum)
	}
	n = 0
	w.Range(func(*Entity) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Range went on after false: %d calls", n)
	}
	if allocs := testing.AllocsPerRun(100, func() { w.Range(func(*Entity) bool { return true }) }); allocs != 0 {
		t.Fatalf("Range allocates %v times", allocs)
	}
}

// TestApplyChangeSaysWhatHappened: the one parse of a world message is
// shared with the caller, which reacts to the Change instead of parsing
// the message again (the console's lines, the bot's map).
func TestApplyChangeSaysWhatHappened(t *testing.T) {
	w := NewWorld()
	destroy := netstack.Message{Header: wire.Header{Type: gamemsg.TypeEntityDestroy, Channel: wire.ReliableOrdered},
		Payload: gamemsg.AppendEntityDestroy(nil, &gamemsg.EntityDestroy{EntityID: 5})}
	for _, tc := range []struct {
		m    netstack.Message
		kind ChangeKind
	}{
		{gssMsg(testTypes), Synced},
		{updateMsg(1, 5, 2, hp(1)), Unchanged}, // an entity it does not know
		{spawnMsg(5, 3, pos(1), hp(100)), Spawned},
		{updateMsg(2, 5, 2, hp(90)), Updated},
		{destroy, Destroyed},
		{destroy, Unchanged},
	} {
		ch, err := w.ApplyChange(tc.m)
		if err != nil || ch.Kind != tc.kind {
			t.Fatalf("%v: change %v, %v; want %v", tc.m.Header.Type, ch.Kind, err, tc.kind)
		}
		switch ch.Kind {
		case Synced:
			if ch.Sync.ClientID != 1 || len(ch.Sync.Types) != 1 {
				t.Fatalf("Sync %+v", ch.Sync)
			}
		case Spawned:
			if ch.Entity.ID != 5 || ch.Entity.TypeName != "player" || ch.Entity.Owner != 9 {
				t.Fatalf("spawned %+v", ch.Entity)
			}
		case Destroyed:
			if ch.Entity.ID != 5 {
				t.Fatalf("destroyed %+v", ch.Entity)
			}
		}
	}
}
