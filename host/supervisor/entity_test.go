package supervisor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// newWorldRig is a rig whose manager has a Replicator on its transport.
func newWorldRig(t *testing.T) (*rig, *replicate.Replicator) {
	var world *replicate.Replicator
	r := newRigWith(t, func(c *supervisor.Config) {
		var err error
		world, err = replicate.New(replicate.Config{Send: c.Transport.Send})
		if err != nil {
			t.Fatal(err)
		}
		c.World = world
	})
	return r, world
}

func TestInputsReachSubscribersOnlyAndStaleAreDropped(t *testing.T) {
	r := newRig(t, 0)
	var got []uint32
	sub := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "sub", Inputs: true},
		OnEvent: func(h module.Host, ev *module.Event) {
			if ev.Kind == module.EventInput {
				got = append(got, ev.Input.InputSeq)
			}
		},
	}
	other := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "other"},
		OnEvent: func(h module.Host, ev *module.Event) {
			if ev.Kind == module.EventInput {
				t.Errorf("a module that did not subscribe got input %d", ev.Input.InputSeq)
			}
		},
	}
	for _, f := range []*supervisor.Funcs{sub, other} {
		if _, err := r.mgr.Load(spec(f)); err != nil {
			t.Fatal(err)
		}
	}
	c := r.dial("alice", nil)
	send := func(seq uint32) {
		in := gamemsg.ClientInput{InputSeq: seq, MoveForward: 1, DT: 0.01}
		if err := c.Send(gamemsg.TypeClientInput, wire.Unreliable, gamemsg.AppendClientInput(nil, &in)); err != nil {
			t.Fatal(err)
		}
	}
	send(5)
	r.stepUntil("input 5", func() bool { return len(got) == 1 })
	send(6)
	r.stepUntil("input 6", func() bool { return len(got) == 2 })
	send(4) // older than 6
	send(6) // a duplicate
	send(7)
	r.stepUntil("input 7", func() bool { return len(got) >= 3 })
	for range 20 {
		r.step()
	}
	if len(got) != 3 || got[0] != 5 || got[1] != 6 || got[2] != 7 {
		t.Fatalf("delivered %v, want [5 6 7]", got)
	}
	if st := r.mgr.Modules()[0].StaleInputs; st != 2 {
		t.Fatalf("StaleInputs %d, want 2", st)
	}
	// A malformed input (pitch out of range) never reaches the module: the
	// transport drops it.
	bad := gamemsg.AppendClientInput(nil, &gamemsg.ClientInput{InputSeq: 9, LookPitch: 95, DT: 0.01})
	c.Send(gamemsg.TypeClientInput, wire.Unreliable, bad)
	for range 20 {
		r.step()
	}
	if len(got) != 3 {
		t.Fatalf("a malformed input was delivered: %v", got)
	}
}

func TestEntityTypesOwnedByModules(t *testing.T) {
	r, world := newWorldRig(t)
	typ := module.EntityType{ID: 5, Name: "crate", Fields: []gamemsg.FieldSchema{{Name: "n", Kind: gamemsg.KindInt32}}}
	var h module.Host
	a := &supervisor.Funcs{Manifest: module.Manifest{Name: "a", EntityTypes: []module.EntityType{typ}},
		OnLoad: func(host module.Host) error { h = host; return nil }}
	if _, err := r.mgr.Load(spec(a)); err != nil {
		t.Fatal(err)
	}
	b := &supervisor.Funcs{Manifest: module.Manifest{Name: "b", EntityTypes: []module.EntityType{typ}}}
	_, err := r.mgr.Load(spec(b))
	if !errors.Is(err, replicate.ErrTypeTaken) || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("a second module declaring type 5: %v", err)
	}
	id, err := h.SpawnEntity(module.Spawn{Type: 5})
	if err != nil || !h.EntityIDs().Contains(id) {
		t.Fatalf("spawn: %d %v (ids %+v)", id, err, h.EntityIDs())
	}
	if err := h.Send(1, gamemsg.TypeEntitySpawn, []byte{}); !errors.Is(err, module.ErrReplicated) {
		t.Fatalf("sending EntitySpawn by hand: %v", err)
	}
	// The transport's own types are the transport's: a module can never
	// forge an Ack, a Disconnect or an announcement.
	for _, typ := range []wire.MessageType{wire.TypeAck, wire.TypeDisconnect, wire.TypeHeartbeat, wire.TypeMessageRefused, wire.TypeModuleSchemas, wire.TypeModuleProtocols} {
		s, _, _ := wire.NewRegistry().Lookup(typ)
		if err := h.Send(1, typ, make([]byte, s.MinLen)); !errors.Is(err, module.ErrNotYourType) {
			t.Fatalf("a module sending %v: %v", typ, err)
		}
	}
	if err := r.mgr.Unload("a"); err != nil {
		t.Fatal(err)
	}
	if len(world.Entities()) != 0 {
		t.Fatal("the unloaded module's entity is still there")
	}
	if _, types := world.Schemas(); len(types) != 0 {
		t.Fatalf("the unloaded module's types are still there: %+v", types)
	}
	// Now b may declare it.
	if _, err := r.mgr.Load(spec(b)); err != nil {
		t.Fatal(err)
	}
}

func TestEntityTypesNeedAWorld(t *testing.T) {
	r := newRig(t, 0)
	f := &supervisor.Funcs{Manifest: module.Manifest{Name: "a", EntityTypes: []module.EntityType{{ID: 1, Name: "x"}}}}
	if _, err := r.mgr.Load(spec(f)); !errors.Is(err, module.ErrNoWorld) {
		t.Fatalf("%v", err)
	}
}
