package host_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Entity replication end to end: a real server, an in-process Go module
// that spawns and changes entities on the game thread when the test asks,
// and real UDP clients whose every received payload is kept and checked.

// Fields of the test type "avatar".
const (
	avPos    = 0 // vec3, public, the position field
	avHP     = 1 // int32, public
	avSecret = 2 // uint32, private
	avTeam   = 3 // bool, party
)

const avatarType = 20

// secretMark is in every value of the private field: a payload that reaches
// a non-owner must never contain it.
const secretMark = 0x5EC2E700

var avatar = module.EntityType{ID: avatarType, Name: "avatar", PositionField: "pos", Fields: []gamemsg.FieldSchema{
	{Name: "pos", Kind: gamemsg.KindVec3},
	{Name: "hp", Kind: gamemsg.KindInt32},
	{Name: "secret", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
	{Name: "team", Kind: gamemsg.KindBool, Visibility: gamemsg.VisibilityParty},
}}

// worldModule runs test code on the game thread, in its tick.
type worldModule struct{ do chan func(module.Host) }

func startWorld(t *testing.T, mod func(*config.Config)) (*host.Server, *worldModule) {
	t.Helper()
	wm := &worldModule{do: make(chan func(module.Host), 16)}
	spec := supervisor.Spec{Source: "world", Kind: "go", New: func() (module.Module, error) {
		return &supervisor.Funcs{
			Manifest: module.Manifest{Name: "world", Version: "1", EntityTypes: []module.EntityType{avatar}},
			OnTick: func(h module.Host, _ module.Tick) {
				for {
					select {
					case fn := <-wm.do:
						fn(h)
					default:
						return
					}
				}
			},
		}, nil
	}}
	srv, _ := startHost(t, mod, spec)
	return srv, wm
}

// run runs fn on the game thread and waits for it.
func (wm *worldModule) run(t *testing.T, fn func(h module.Host) error) {
	t.Helper()
	done := make(chan error, 1)
	wm.do <- func(h module.Host) { done <- fn(h) }
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the game thread did not run the test's work")
	}
}

// watcher keeps a client's World and every message it received.
type watcher struct {
	c     *netstack.Client
	world *client.World
	mu    sync.Mutex
	msgs  []netstack.Message
}

func watch(t *testing.T, c *netstack.Client) *watcher {
	w := &watcher{c: c, world: client.NewWorld()}
	w.world.Apply(c.Welcome())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				return
			}
			if err := w.world.Apply(m); err != nil {
				t.Errorf("client %d: %v: %v", c.ID(), m.Header.Type, err)
			}
			w.mu.Lock()
			w.msgs = append(w.msgs, m)
			w.mu.Unlock()
		}
	}()
	return w
}

// waitTicks returns once the server's game thread has run n more ticks:
// progress, not wall time, so a busy machine only makes it slower.
func waitTicks(t *testing.T, srv *host.Server, n uint64) {
	t.Helper()
	start := srv.Stats().Ticks
	eventually(t, "ticks to pass", func() bool { return srv.Stats().Ticks >= start+n })
}

func isEntityMsg(t wire.MessageType) bool {
	return t == gamemsg.TypeEntitySpawn || t == gamemsg.TypeEntityStateUpdate || t == gamemsg.TypeEntityDestroy
}

// received returns the messages received so far, and forgets them.
func (w *watcher) received() []netstack.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

func (w *watcher) entity(id uint32) (client.Entity, bool) { return w.world.Entity(id) }

func spawnAvatar(t *testing.T, wm *worldModule, owner, party uint32, pos wire.Vec3) uint32 {
	t.Helper()
	var id uint32
	wm.run(t, func(h module.Host) (err error) {
		id, err = h.SpawnEntity(module.Spawn{Type: avatarType, Owner: owner, Party: party, Position: pos,
			Fields: []gamemsg.FieldValue{{Index: avHP, Kind: gamemsg.KindInt32, Int: 100}, {Index: avSecret, Kind: gamemsg.KindUint32, Uint: secretMark | owner}}})
		return err
	})
	return id
}

func TestReplicationPrivateFieldNeverReachesOthers(t *testing.T) {
	srv, wm := startWorld(t, nil)
	alice, bob := watch(t, dialHost(t, srv, "alice")), watch(t, dialHost(t, srv, "bob"))
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	a := spawnAvatar(t, wm, alice.c.ID(), 0, wire.Vec3{})
	b := spawnAvatar(t, wm, bob.c.ID(), 0, wire.Vec3{X: 5})
	for i := range uint32(20) {
		wm.run(t, func(h module.Host) error {
			return h.SetEntityFields(a, gamemsg.FieldValue{Index: avSecret, Kind: gamemsg.KindUint32, Uint: secretMark | i<<4 | alice.c.ID()})
		})
		waitTicks(t, srv, 3) // a replication frame (20 Hz at 60 Hz ticks) between changes
	}
	final := secretMark | 19<<4 | alice.c.ID()
	eventually(t, "alice sees her last secret", func() bool {
		e, ok := alice.entity(a)
		v, visible := e.Field("secret")
		return ok && visible && v.Uint == final
	})
	eventually(t, "bob sees alice", func() bool { _, ok := bob.entity(a); return ok })
	var mark [4]byte
	for _, m := range bob.received() {
		switch m.Header.Type {
		case gamemsg.TypeEntitySpawn:
			sp, _ := gamemsg.ParseEntitySpawn(m.Payload)
			if sp.EntityID == a && sp.FieldsMask&(1<<avSecret) != 0 {
				t.Fatalf("bob was spawned alice's avatar with the private field: mask %#b", sp.FieldsMask)
			}
		case gamemsg.TypeEntityStateUpdate:
			up, _ := gamemsg.ParseEntityStateUpdate(m.Payload)
			if up.EntityID == a && up.DirtyMask&(1<<avSecret) != 0 {
				t.Fatalf("bob got an update of alice's private field: mask %#b", up.DirtyMask)
			}
		}
		for i := range uint32(20) {
			binary.LittleEndian.PutUint32(mark[:], secretMark|i<<4|alice.c.ID())
			if bytes.Contains(m.Payload, mark[:]) {
				t.Fatalf("a %v to bob carries alice's secret: %x", m.Header.Type, m.Payload)
			}
		}
	}
	// Bob sees his own.
	if e, _ := bob.entity(b); !fieldIs(e, "secret", secretMark|bob.c.ID()) {
		t.Fatalf("bob does not see his own secret: %+v", e)
	}
}

func fieldIs(e client.Entity, name string, want uint32) bool {
	v, visible := e.Field(name)
	return visible && v.Uint == want
}

func TestReplicationInterest(t *testing.T) {
	srv, wm := startWorld(t, func(c *config.Config) { c.Match.InterestRadius = 50 })
	alice, bob := watch(t, dialHost(t, srv, "alice")), watch(t, dialHost(t, srv, "bob"))
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	a := spawnAvatar(t, wm, alice.c.ID(), 0, wire.Vec3{})
	b := spawnAvatar(t, wm, bob.c.ID(), 0, wire.Vec3{X: 500})
	eventually(t, "both see their own", func() bool {
		_, okA := alice.entity(a)
		_, okB := bob.entity(b)
		return okA && okB
	})
	for range 10 { // bob walks about far away
		wm.run(t, func(h module.Host) error { return h.SetEntityPosition(b, wire.Vec3{X: 500, Z: 3}, false) })
		waitTicks(t, srv, 3)
	}
	for _, m := range alice.received() {
		if !isEntityMsg(m.Header.Type) {
			continue
		}
		if id := binary.LittleEndian.Uint32(m.Payload); id == b {
			t.Fatalf("alice, 500 units away, got a %v of bob's avatar", m.Header.Type)
		}
	}
	wm.run(t, func(h module.Host) error { return h.SetEntityPosition(b, wire.Vec3{X: 30}, false) })
	eventually(t, "alice is spawned bob when he comes near", func() bool {
		e, ok := alice.entity(b)
		p, _ := e.Position()
		return ok && p.X == 30
	})
	wm.run(t, func(h module.Host) error { return h.SetEntityPosition(b, wire.Vec3{X: 400}, false) })
	eventually(t, "bob destroyed for alice when he leaves", func() bool {
		_, ok := alice.entity(b)
		return !ok
	})
	if !slices.ContainsFunc(alice.received(), func(m netstack.Message) bool {
		return m.Header.Type == gamemsg.TypeEntityDestroy && binary.LittleEndian.Uint32(m.Payload) == b
	}) {
		t.Fatal("no EntityDestroy")
	}
}

func TestReplicationSendsOnlyDirtyFields(t *testing.T) {
	srv, wm := startWorld(t, func(c *config.Config) { c.Match.UpdateRepeats, c.Match.RefreshSeconds = 1, 0 })
	alice := watch(t, dialHost(t, srv, "alice"))
	eventually(t, "a player", func() bool { return srv.Stats().Players == 1 })
	a := spawnAvatar(t, wm, alice.c.ID(), 0, wire.Vec3{})
	eventually(t, "spawned", func() bool { _, ok := alice.entity(a); return ok })
	waitTicks(t, srv, 6) // a few frames: with one repeat and no refresh nothing else is sent
	alice.received()
	for i := range int32(10) { // one change per replication frame: the client saw the last one
		wm.run(t, func(h module.Host) error {
			return h.SetEntityFields(a, gamemsg.FieldValue{Index: avHP, Kind: gamemsg.KindInt32, Int: 90 - i})
		})
		eventually(t, "the hp change", func() bool {
			e, _ := alice.entity(a)
			v, _ := e.Field("hp")
			return v.Int == 90-i
		})
	}
	wm.run(t, func(h module.Host) error { return h.SetEntityPosition(a, wire.Vec3{Y: 2}, false) })
	eventually(t, "the last change", func() bool {
		e, _ := alice.entity(a)
		p, _ := e.Position()
		return p.Y == 2
	})
	var masks []uint64
	for _, m := range alice.received() {
		if m.Header.Type == gamemsg.TypeEntityStateUpdate {
			up, _ := gamemsg.ParseEntityStateUpdate(m.Payload)
			masks = append(masks, up.DirtyMask)
			if up.DirtyMask != 1<<avHP && up.DirtyMask != 1<<avPos {
				t.Fatalf("update mask %#b: only hp or the position changed at a time", up.DirtyMask)
			}
		}
	}
	if len(masks) < 2 || masks[len(masks)-1] != 1<<avPos {
		t.Fatalf("update masks %b", masks)
	}
	if e, _ := alice.entity(a); !fieldIs(e, "secret", secretMark|alice.c.ID()) {
		t.Fatalf("entity %+v", e)
	}
}

func TestReplicationLateJoinerGetsFullState(t *testing.T) {
	srv, wm := startWorld(t, nil)
	alice := watch(t, dialHost(t, srv, "alice"))
	eventually(t, "a player", func() bool { return srv.Stats().Players == 1 })
	var ids []uint32
	for i := range 5 {
		ids = append(ids, spawnAvatar(t, wm, alice.c.ID()*uint32(i%2), 7, wire.Vec3{X: float32(i)}))
	}
	for i, id := range ids {
		wm.run(t, func(h module.Host) error {
			h.SetEntityPosition(id, wire.Vec3{X: float32(i), Y: 1, Z: float32(i * i)}, false)
			return h.SetEntityFields(id, gamemsg.FieldValue{Index: avHP, Kind: gamemsg.KindInt32, Int: int32(10 * i)},
				gamemsg.FieldValue{Index: avTeam, Kind: gamemsg.KindBool, Bool: true})
		})
	}
	wm.run(t, func(h module.Host) error { return h.DestroyEntity(ids[4]) }) // done on the game thread when run returns
	carol := watch(t, dialHost(t, srv, "carol"))
	wm.run(t, func(h module.Host) error { return h.SetClientView(carol.c.ID(), module.ClientView{Party: 7}) })
	eventually(t, "carol has the world", func() bool { return len(carol.world.Entities()) == 4 })
	var want [][]gamemsg.FieldValue
	var infos []replicate.EntityInfo
	wm.run(t, func(h module.Host) error {
		for _, id := range ids[:4] {
			vals, _ := srv.World().Fields(id)
			info, _ := srv.World().Entity(id)
			want, infos = append(want, vals), append(infos, info)
		}
		return nil
	})
	for i, id := range ids[:4] {
		e, ok := carol.entity(id)
		if !ok {
			t.Fatalf("carol lacks %d", id)
		}
		if e.Owner != infos[i].Owner || e.Type != avatarType {
			t.Errorf("entity %d: owner %d type %d", id, e.Owner, e.Type)
		}
		for f, v := range want[i] {
			visible := e.Visible&(1<<f) != 0
			if visible == (f == avSecret) {
				t.Errorf("entity %d field %d visible=%v to carol", id, f, visible)
			}
			if visible && e.Fields[f] != v {
				t.Errorf("entity %d field %d: %+v, server %+v", id, f, e.Fields[f], v)
			}
		}
	}
}
