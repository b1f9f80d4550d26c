package host_test

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestLuaEntitiesOverUDP: a Lua module (testdata/entities.lua) spawns,
// moves (by ClientInput), updates and destroys entities; real UDP clients
// see them, each its own private field only.
func TestLuaEntitiesOverUDP(t *testing.T) {
	srv, _ := startHost(t, withModules("testdata/entities.lua"))
	alice := watch(t, dialHost(t, srv, "alice"))
	bob := watch(t, dialHost(t, srv, "bob"))
	ball := func(w *watcher, owner uint32) (uint32, bool) {
		for _, e := range w.world.Entities() {
			if e.TypeName == "ball" && e.Owner == owner {
				return e.ID, true
			}
		}
		return 0, false
	}
	var aBall, bBall uint32
	eventually(t, "balls and the sun", func() bool {
		var ok1, ok2 bool
		aBall, ok1 = ball(bob, alice.c.ID())
		bBall, ok2 = ball(alice, bob.c.ID())
		return ok1 && ok2 && len(alice.world.Entities()) == 3
	})
	e, _ := alice.world.Entity(aBall)
	if v, ok := e.Field("score"); !ok || v.Uint != 4200+alice.c.ID() {
		t.Fatalf("alice's score: %+v %v", v, ok)
	}
	if e, _ := bob.world.Entity(aBall); e.Visible&(1<<2) != 0 {
		t.Fatal("bob sees alice's private score")
	}
	var angle1 float32
	for _, e := range alice.world.Entities() {
		if v, ok := e.Field("angle"); ok {
			angle1 = v.Float
		}
	}
	eventually(t, "the sun turns", func() bool {
		for _, e := range alice.world.Entities() {
			if v, ok := e.Field("angle"); ok && v.Float != angle1 {
				return true
			}
		}
		return false
	})
	eventually(t, "bob sees alice's ball move", func() bool {
		in := gamemsg.ClientInput{InputSeq: uint32(time.Now().UnixMilli()), MoveForward: -1, MoveRight: 0.5, DT: 1.0 / 60}
		alice.c.Send(gamemsg.TypeClientInput, wire.Unreliable, gamemsg.AppendClientInput(nil, &in))
		time.Sleep(20 * time.Millisecond)
		e, _ := bob.world.Entity(aBall)
		p, _ := e.Position()
		return p.Z == -1 && p.X == float32(alice.c.ID())*10+0.5
	})
	acks := 0
	for _, m := range alice.received() {
		if m.Header.Type == gamemsg.TypeInputAck {
			acks++
		}
	}
	if acks == 0 {
		t.Fatal("no InputAck")
	}
	bob.c.Close()
	eventually(t, "bob's ball destroyed", func() bool { _, ok := alice.world.Entity(bBall); return !ok })
}
