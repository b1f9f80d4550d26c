package host_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestPluginEntitiesAndInput: the entities test plugin (a real plugin
// process) spawns an entity per player, moves it by the player's
// ClientInputs, answers them with InputAck, shoots lag-compensated rays and
// destroys the entity when the player leaves; real UDP clients see all of
// it, and never another player's private field.
func TestPluginEntitiesAndInput(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/entities")
	srv, _ := startHost(t, withModules(path))
	reg := gamemsg.NewRegistry()
	reg.Register("entities", wire.Schema{ID: 1300, Name: "shot", Direction: wire.ServerToClient, Channel: wire.Reliable,
		MinLen: 4, MaxLen: 4, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true})
	alice := watch(t, dialAs(t, srv, "alice", reg))
	bob := watch(t, dialAs(t, srv, "bob", reg))
	byOwner := func(w *watcher, owner uint32) (uint32, bool) {
		for _, e := range w.world.Entities() {
			if e.TypeName == "bot" && e.Owner == owner {
				return e.ID, true
			}
		}
		return 0, false
	}
	var aBot, bBot uint32
	eventually(t, "both bots and the clock, seen by both", func() bool {
		var ok1, ok2, ok3 bool
		aBot, ok1 = byOwner(bob, alice.c.ID())
		bBot, ok2 = byOwner(alice, bob.c.ID())
		_, ok3 = byOwner(alice, alice.c.ID())
		return ok1 && ok2 && ok3 && len(alice.world.Entities()) == 3 && len(bob.world.Entities()) == 3
	})
	if aBot>>24 == 0 || aBot>>24 != bBot>>24 {
		t.Fatalf("bot ids %#x %#x are not in the module's block", aBot, bBot)
	}
	eventually(t, "the clock ticks", func() bool {
		for _, e := range alice.world.Entities() {
			if v, ok := e.Field("ticks"); ok && e.TypeName == "clock" && v.Uint >= 60 {
				return true
			}
		}
		return false
	})
	// Alice walks: inputs in, InputAck back, bob sees her move.
	for seq := uint32(1); seq <= 5; seq++ {
		in := gamemsg.ClientInput{InputSeq: seq, MoveForward: 0.5, DT: 1.0 / 60}
		if err := alice.c.Send(gamemsg.TypeClientInput, wire.Unreliable, gamemsg.AppendClientInput(nil, &in)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, "bob sees alice's bot moved", func() bool {
		e, _ := bob.world.Entity(aBot)
		p, _ := e.Position()
		hp, _ := e.Field("hp")
		return p.Z == 0.5 && hp.Int >= 1
	})
	var acked uint32
	eventually(t, "InputAck", func() bool {
		for _, m := range alice.received() {
			if m.Header.Type == gamemsg.TypeInputAck {
				ack, err := gamemsg.ParseInputAck(m.Payload)
				if err != nil || ack.Position.Z != 0.5 || ack.Flags != gamemsg.FlagGrounded {
					t.Fatalf("InputAck %+v %v", ack, err)
				}
				acked = max(acked, ack.LastInputSeq)
			}
		}
		return acked >= 3 // a few of the unreliable inputs may be lost
	})
	if e, _ := bob.world.Entity(aBot); e.Visible&(1<<2) != 0 {
		t.Fatal("bob sees alice's secret")
	}
	if e, _ := alice.world.Entity(aBot); !fieldIs(e, "secret", 0xC0FFEE00+alice.c.ID()) {
		t.Fatalf("alice's own secret: %+v", e)
	}
	// Alice fires down the Z axis at bob's X: hit; at an empty X: miss.
	shoot := func(seq uint32, x float32) uint32 {
		t.Helper()
		alice.received()
		in := gamemsg.ClientInput{InputSeq: seq, MoveForward: 0.5, LookYaw: x, Buttons: gamemsg.ButtonFire, DT: 1.0 / 60}
		var hit uint32
		eventually(t, "the shot's result", func() bool {
			alice.c.Send(gamemsg.TypeClientInput, wire.Unreliable, gamemsg.AppendClientInput(nil, &in))
			time.Sleep(20 * time.Millisecond)
			for _, m := range alice.received() {
				if m.Header.Type == 1300 {
					hit = binary.LittleEndian.Uint32(m.Payload)
					return true
				}
			}
			in.InputSeq++
			return false
		})
		return hit
	}
	if hit := shoot(100, float32(bob.c.ID())*3); hit != bBot {
		t.Fatalf("shot at bob's bot hit %#x, want %#x", hit, bBot)
	}
	if hit := shoot(200, 1000); hit != 0 {
		t.Fatalf("shot at nothing hit %#x", hit)
	}
	// Bob leaves: his bot is destroyed for alice.
	bob.c.Close()
	eventually(t, "bob's bot destroyed", func() bool { _, ok := alice.world.Entity(bBot); return !ok })
	if st := alice.world.Stats(); st.Malformed != 0 {
		t.Fatalf("alice's world: %+v", st)
	}
}
