package client_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestClientEntities: the console keeps the connection's World from
// GameStateSync, EntitySpawn, EntityStateUpdate and EntityDestroy, prints
// the spawn and destroy lines, and lists the entities with `entities`.
func TestClientEntities(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	id := c.connect(t, srv, "alice")
	types := []gamemsg.EntityTypeSchema{{TypeID: 4, Name: "crate", Fields: []gamemsg.FieldSchema{
		{Name: "pos", Kind: gamemsg.KindVec3}, {Name: "hp", Kind: gamemsg.KindInt32},
	}}}
	send := func(typ wire.MessageType, ch wire.Channel, payload []byte) {
		t.Helper()
		if err := srv.Send(id, typ, ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	send(gamemsg.TypeGameStateSync, wire.ReliableOrdered, gamemsg.AppendGameStateSync(nil, &gamemsg.GameStateSync{ClientID: id, TickRate: 60,
		ReplicationRate: 20, ServerName: "testsrv", MOTD: "hello", Mode: gamemsg.ModeCustom, Types: types}))
	data := gamemsg.AppendFieldValue(nil, &gamemsg.FieldValue{Kind: gamemsg.KindVec3, Vec: wire.Vec3{X: 1, Y: 2, Z: 3}})
	data = gamemsg.AppendFieldValue(data, &gamemsg.FieldValue{Kind: gamemsg.KindInt32, Int: 50})
	send(gamemsg.TypeEntitySpawn, wire.ReliableOrdered, gamemsg.AppendEntitySpawn(nil, &gamemsg.EntitySpawn{EntityID: 77, FieldsMask: 3, TypeID: 4, Owner: id, Data: data}))
	c.exec(t, fmt.Sprintf(`wait '^entity spawn: 77 crate owner %d at 1,2,3$' 5s`, id))
	moved := gamemsg.AppendFieldValue(nil, &gamemsg.FieldValue{Kind: gamemsg.KindVec3, Vec: wire.Vec3{X: -4, Y: 0.5}})
	send(gamemsg.TypeEntityStateUpdate, wire.Unreliable, gamemsg.AppendEntityStateUpdate(nil, &gamemsg.EntityStateUpdate{EntityID: 77, DirtyMask: 1, Data: moved}))
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
	send(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, gamemsg.AppendEntityDestroy(nil, &gamemsg.EntityDestroy{EntityID: 77}))
	c.exec(t, "wait '^entity destroy: 77$' 5s")
	c.exec(t, "entities")
	if !strings.HasSuffix(strings.TrimSpace(c.out.String()), "entities: none") {
		t.Fatalf("after the destroy:\n%s", c.out.String())
	}
}
