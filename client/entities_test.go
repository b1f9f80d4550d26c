package client_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestClientEntities: the console keeps the connection's World from
// GameStateSync, EntitySpawn, EntityStateUpdate and EntityDestroy, prints
// the spawn and destroy lines, and lists the entities with `entities`.
func TestClientEntities(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	id := c.connect(t, srv, "alice")
	types := []wire.EntityTypeSchema{{TypeID: 4, Name: "crate", Fields: []wire.FieldSchema{
		{Name: "pos", Kind: wire.KindVec3}, {Name: "hp", Kind: wire.KindInt32},
	}}}
	send := func(typ wire.MessageType, ch wire.Channel, payload []byte) {
		t.Helper()
		if err := srv.Send(id, typ, ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	send(wire.TypeGameStateSync, wire.ReliableOrdered, wire.AppendGameStateSync(nil, &wire.GameStateSync{ClientID: id, TickRate: 60,
		ReplicationRate: 20, ServerName: "testsrv", MOTD: "hello", Mode: wire.ModeCustom, Types: types}))
	data := wire.AppendFieldValue(nil, &wire.FieldValue{Kind: wire.KindVec3, Vec: wire.Vec3{X: 1, Y: 2, Z: 3}})
	data = wire.AppendFieldValue(data, &wire.FieldValue{Kind: wire.KindInt32, Int: 50})
	send(wire.TypeEntitySpawn, wire.ReliableOrdered, wire.AppendEntitySpawn(nil, &wire.EntitySpawn{EntityID: 77, FieldsMask: 3, TypeID: 4, Owner: id, Data: data}))
	c.exec(t, fmt.Sprintf(`wait '^entity spawn: 77 crate owner %d at 1,2,3$' 5s`, id))
	moved := wire.AppendFieldValue(nil, &wire.FieldValue{Kind: wire.KindVec3, Vec: wire.Vec3{X: -4, Y: 0.5}})
	send(wire.TypeEntityStateUpdate, wire.Unreliable, wire.AppendEntityStateUpdate(nil, &wire.EntityStateUpdate{EntityID: 77, DirtyMask: 1, Data: moved}))
	want := fmt.Sprintf("entity 77 crate owner %d at -4,0.5,0", id)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.exec(t, "entities")
		if strings.Contains(c.out.String(), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("entities never listed %q:\n%s", want, c.out.String())
		}
	}
	send(wire.TypeEntityDestroy, wire.ReliableOrdered, wire.AppendEntityDestroy(nil, &wire.EntityDestroy{EntityID: 77}))
	c.exec(t, "wait '^entity destroy: 77$' 5s")
	c.exec(t, "entities")
	if !strings.HasSuffix(strings.TrimSpace(c.out.String()), "entities: none") {
		t.Fatalf("after the destroy:\n%s", c.out.String())
	}
}
