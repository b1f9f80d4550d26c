package replicate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestPrivateFieldOnlyToOwner(t *testing.T) {
	w := newWorld(t, Config{Refresh: -1})
	w.r.AddClient(1, 0)
	w.r.AddClient(2, 0)
	id := w.spawn(module.Spawn{Owner: 1})
	w.set(id, u32(fAmmo, 30), i32(fHealth, 100))
	w.r.Flush()
	owner, other := newView(t), newView(t)
	ms := w.net.take()
	owner.deliver(ms, 1)
	other.deliver(ms, 2)
	if got := owner.entities[id].visible; got != 1<<fPos|1<<fHealth|1<<fAmmo|1<<fPlan {
		t.Fatalf("owner's mask %#b", got)
	}
	if got := other.entities[id].visible; got != 1<<fPos|1<<fHealth {
		t.Fatalf("other's mask %#b", got)
	}
	if owner.entities[id].vals[fAmmo].Uint != 30 {
		t.Fatalf("owner's ammo %+v", owner.entities[id].vals[fAmmo])
	}
	for tick := range 10 {
		w.set(id, u32(fAmmo, uint32(29-tick)))
		w.r.Tick(time.Duration(tick) * time.Second / 20)
		for _, m := range w.net.take() {
			if m.client == 2 && m.typ == gamemsg.TypeEntityStateUpdate {
				t.Fatalf("client 2 got an update of an entity whose only change is private: %x", m.payload)
			}
			owner.deliver([]msg{m}, 1)
		}
	}
	if owner.entities[id].vals[fAmmo].Uint != 20 {
		t.Fatalf("owner's ammo %+v", owner.entities[id].vals[fAmmo])
	}
}

func TestInterestSpawnAndDestroy(t *testing.T) {
	w := newWorld(t, Config{InterestRadius: 50, Refresh: -1})
	va := w.join(1)
	w.join(2)
	a := w.spawn(module.Spawn{Owner: 1})
	b := w.spawn(module.Spawn{Owner: 2, Position: wire.Vec3{X: 200}})
	thing := w.spawn(module.Spawn{Position: wire.Vec3{X: 100}})
	w.r.Flush()
	got := va.deliver(w.net.take(), 1)
	if !slices.Equal(got, []string{fmt.Sprint("spawn ", a)}) {
		t.Fatalf("client 1 far from everything got %q", got)
	}
	// b walks towards a: spawned inside the radius, not before.
	for x := float32(200); x >= 0; x -= 10 {
		w.move(b, x, 0, 0)
		w.move(thing, x+5, 0, 0)
		w.r.Flush()
		got := va.deliver(w.net.take(), 1)
		switch {
		case x > 50 && len(got) > 0:
			t.Fatalf("at x=%v client 1 got %q", x, got)
		case x == 50 && !slices.Contains(got, fmt.Sprint("spawn ", b)):
			t.Fatalf("at x=50 client 1 got %q, want b spawned", got)
		}
	}
	if _, ok := va.entities[thing]; !ok {
		t.Fatal("thing near client 1 not spawned")
	}
	// And away again: destroyed only past the leave radius (55).
	for x := float32(0); x <= 100; x += 5 {
		w.move(b, x, 0, 0)
		w.r.Flush()
		got := va.deliver(w.net.take(), 1)
		destroyed := slices.Contains(got, fmt.Sprint("destroy ", b))
		if destroyed != (x == 60) {
			t.Fatalf("at x=%v client 1 got %q", x, got)
		}
	}
	if _, ok := va.entities[b]; ok {
		t.Fatal("b still known")
	}
}

func TestOnlyDirtyFieldsAreSent(t *testing.T) {
	w := newWorld(t, Config{Repeats: 1, Refresh: -1})
	v := w.join(1)
	id := w.spawn(module.Spawn{Owner: 1})
	w.r.Flush()
	v.deliver(w.net.take(), 1)
	w.r.Flush()
	if got := v.deliver(w.net.take(), 1); len(got) != 0 {
		t.Fatalf("nothing changed, client got %q", got)
	}
	w.set(id, i32(fHealth, 90), u32(fAmmo, 0)) // ammo was 0 already: no change
	w.r.Flush()
	if got := v.deliver(w.net.take(), 1); !slices.Equal(got, []string{fmt.Sprintf("update %d %#x", id, 1<<fHealth)}) {
		t.Fatalf("got %q", got)
	}
	w.move(id, 1, 2, 3)
	w.set(id, bl(fPlan, true))
	w.r.Flush()
	if got := v.deliver(w.net.take(), 1); !slices.Equal(got, []string{fmt.Sprintf("update %d %#x", id, 1<<fPos|1<<fPlan)}) {
		t.Fatalf("got %q", got)
	}
	w.r.Flush()
	if got := v.deliver(w.net.take(), 1); len(got) != 0 {
		t.Fatalf("nothing changed, client got %q", got)
	}
	if p := v.entities[id].vals[fPos].Vec; p != (wire.Vec3{X: 1, Y: 2, Z: 3}) {
		t.Fatalf("position %v", p)
	}
}

func TestChangesRepeatedThenStop(t *testing.T) {
	w := newWorld(t, Config{Repeats: 3, Refresh: -1})
	v := w.join(1)
	id := w.spawn(module.Spawn{})
	w.r.Flush()
	v.deliver(w.net.take(), 1)
	w.set(id, i32(fHealth, 5))
	var lines []string
	for range 3 {
		w.r.Flush()
		w.set(id, bl(fPlan, false)) // no change
		lines = append(lines, v.deliver(w.net.take(), 1)...)
	}
	w.r.Flush()
	lines = append(lines, v.deliver(w.net.take(), 1)...)
	want := fmt.Sprintf("update %d %#x", id, 1<<fHealth)
	if !slices.Equal(lines, []string{want, want, want}) {
		t.Fatalf("got %q, want the change in exactly 3 frames", lines)
	}
}

func TestLateJoinerGetsFullState(t *testing.T) {
	w := newWorld(t, Config{Refresh: -1})
	w.r.AddClient(1, 0)
	ids := []uint32{w.spawn(module.Spawn{Owner: 1}), w.spawn(module.Spawn{Position: wire.Vec3{X: 3}}), w.spawn(module.Spawn{Party: 4})}
	for i, id := range ids {
		w.set(id, i32(fHealth, int32(10*i)), bl(fPlan, true), flt(fAim, 1.5))
	}
	for range 5 {
		w.r.Flush()
	}
	w.r.Destroy(w.b, ids[2])
	w.r.Flush()
	w.net.take()
	v := w.join(9)
	w.r.SetClientView(9, module.ClientView{Spectator: true})
	w.r.Flush()
	got := v.deliver(w.net.take(), 9)
	if !slices.Equal(got, []string{fmt.Sprint("spawn ", ids[0]), fmt.Sprint("spawn ", ids[1])}) {
		t.Fatalf("late joiner got %q", got)
	}
	for i, id := range ids[:2] {
		e := v.entities[id]
		if e.vals[fHealth].Int != int32(10*i) || !e.vals[fPlan].Bool || e.vals[fAim].Float != 1.5 {
			t.Errorf("entity %d: %+v", id, e.vals)
		}
		if _, ok := e.vals[fAmmo]; ok {
			t.Errorf("spectator sees private ammo of %d", id)
		}
	}
	if p := v.entities[ids[1]].vals[fPos].Vec; p.X != 3 {
		t.Errorf("position %v", p)
	}
}

func TestVisibilityChangeRespawns(t *testing.T) {
	w := newWorld(t, Config{Refresh: -1})
	w.join(1)
	v2 := w.join(2)
	id := w.spawn(module.Spawn{Owner: 1, Party: 5})
	w.set(id, u32(fAmmo, 7), bl(fPlan, true))
	w.r.Flush()
	v2.deliver(w.net.take(), 2)
	if v2.entities[id].visible != 1<<fPos|1<<fHealth {
		t.Fatalf("mask %#b", v2.entities[id].visible)
	}
	w.r.SetClientView(2, module.ClientView{Party: 5})
	w.r.Flush()
	got := v2.deliver(w.net.take(), 2)
	if !slices.Equal(got, []string{fmt.Sprint("destroy ", id), fmt.Sprint("spawn ", id)}) || !v2.entities[id].vals[fPlan].Bool {
		t.Fatalf("joining the party: %q %+v", got, v2.entities[id])
	}
	w.r.SetOwner(w.b, id, 2)
	w.r.Flush()
	v2.deliver(w.net.take(), 2)
	if v2.entities[id].vals[fAmmo].Uint != 7 {
		t.Fatalf("new owner does not see ammo: %+v", v2.entities[id])
	}
}

func TestTypesOwnedAndCleared(t *testing.T) {
	w := newWorld(t, Config{Refresh: -1})
	other, _ := w.r.ReserveBlock()
	err := w.r.SetTypes(other, "other", []module.EntityType{{ID: playerType, Name: "thief"}})
	if !errors.Is(err, ErrTypeTaken) || !strings.Contains(err.Error(), `"test"`) {
		t.Fatalf("taking another module's type: %v", err)
	}
	if err := w.r.SetTypes(other, "other", []module.EntityType{{ID: 8, Name: "crate"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Spawn(other, module.Spawn{Type: playerType}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("spawning another module's type: %v", err)
	}
	for _, bad := range []module.EntityType{
		{ID: 9, Name: ""},
		{ID: 9, Name: "x", Fields: []gamemsg.FieldSchema{{Name: "a", Kind: 9}}},
		{ID: 9, Name: "x", Fields: []gamemsg.FieldSchema{{Name: "a"}, {Name: "a"}}},
		{ID: 9, Name: "x", PositionField: "a", Fields: []gamemsg.FieldSchema{{Name: "a", Kind: gamemsg.KindFloat}}},
		{ID: 9, Name: "x", PositionField: "nope"},
		{ID: 9, Name: "x", Fields: make([]gamemsg.FieldSchema, 65)},
	} {
		if err := w.r.SetTypes(other, "other", []module.EntityType{bad}); !errors.Is(err, ErrBadType) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	crate, err := w.r.Spawn(other, module.Spawn{Type: 8})
	if err != nil {
		t.Fatal(err)
	}
	if BlockOf(crate) != other {
		t.Fatalf("crate id %d outside block %d", crate, other)
	}
	if err := w.r.Destroy(w.b, crate); !errors.Is(err, ErrNotYours) {
		t.Fatalf("destroying another module's entity: %v", err)
	}
	v := w.join(1)
	w.r.Flush()
	v.deliver(w.net.take(), 1)
	// The module crashes: its entity goes, then its type.
	w.r.Clear(other)
	w.r.Flush()
	got := v.deliver(w.net.take(), 1)
	if !slices.Equal(got, []string{fmt.Sprint("destroy ", crate), "sync"}) {
		t.Fatalf("after clear: %q", got)
	}
	if _, ok := v.types[8]; ok {
		t.Fatal("the crate type is still in GameStateSync")
	}
	w.r.ReleaseBlock(other)
	if _, err := w.r.Spawn(other, module.Spawn{Type: 8}); !errors.Is(err, ErrBadBlock) {
		t.Fatalf("spawn in a released block: %v", err)
	}
}

func TestSpawnIDs(t *testing.T) {
	w := newWorld(t, Config{})
	rg := w.b.Range()
	a := w.spawn(module.Spawn{})
	b := w.spawn(module.Spawn{ID: rg.First + 100})
	c := w.spawn(module.Spawn{})
	if a != rg.First || b != rg.First+100 || c != rg.First+1 {
		t.Fatalf("ids %d %d %d in %+v", a, b, c, rg)
	}
	if _, err := w.r.Spawn(w.b, module.Spawn{Type: playerType, ID: b}); !errors.Is(err, ErrIDInUse) {
		t.Fatal(err)
	}
	if _, err := w.r.Spawn(w.b, module.Spawn{Type: playerType, ID: 5}); !errors.Is(err, ErrNotYours) {
		t.Fatal(err)
	}
	if err := w.r.SetFields(w.b, a, gamemsg.FieldValue{Index: fHealth, Kind: gamemsg.KindFloat}); !errors.Is(err, ErrBadField) {
		t.Fatal(err)
	}
	if err := w.r.SetFields(w.b, a, i32(fHealth, 1), i32(99, 1)); !errors.Is(err, ErrBadField) {
		t.Fatal(err)
	}
	if vals, _ := w.r.Fields(a); vals[fHealth].Int != 0 {
		t.Fatal("a refused batch changed a field")
	}
}

// The transport is asked whether a client is backlogged only for a client
// that has a changed entity to be sent: the question costs a lock of the
// client's session, and a frame with nothing for a client (a room of
// thousands whose module replicates nothing through entities) must not pay
// it once per client per frame.
func TestBacklogAskedOnlyWithSomethingToSend(t *testing.T) {
	asked := map[uint32]int{}
	w := newWorld(t, Config{Refresh: -1, Backlogged: func(c uint32) bool { asked[c]++; return false }})
	for c := uint32(1); c <= 3; c++ {
		w.join(c)
	}
	for range 5 {
		w.r.Flush()
	}
	if len(asked) != 0 {
		t.Fatalf("no entity, yet the transport was asked about %v", asked)
	}
	id := w.spawn(module.Spawn{Owner: 1})
	w.r.Flush() // the spawn: no update to size
	w.net.take()
	w.r.Flush()
	if len(asked) != 0 {
		t.Fatalf("nothing changed, yet the transport was asked about %v", asked)
	}
	w.set(id, i32(fHealth, 90))
	w.r.Flush()
	if asked[1] != 1 || asked[2] != 1 || asked[3] != 1 {
		t.Fatalf("a changed entity seen by all three: asked %v, want each once", asked)
	}
}
