package replicate

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// msg is one message the fake transport carried.
type msg struct {
	client  uint32
	typ     wire.MessageType
	ch      wire.Channel
	payload []byte
}

// fakeNet records every send, and loses unreliable ones with probability
// loss (seeded).
type fakeNet struct {
	msgs    []msg
	loss    float64
	rng     *rand.Rand
	gone    map[uint32]bool // clients that left: ErrNoSuchClient
	types   func() []gamemsg.EntityTypeSchema
	dropped int
}

func (n *fakeNet) send(client uint32, t wire.MessageType, ch wire.Channel, p []byte) error {
	if n.gone[client] {
		return netstack.ErrNoSuchClient
	}
	if ch == wire.Unreliable && n.loss > 0 && n.rng.Float64() < n.loss {
		n.dropped++
		return nil
	}
	n.msgs = append(n.msgs, msg{client, t, ch, slices.Clone(p)})
	return nil
}

func (n *fakeNet) take() []msg {
	m := n.msgs
	n.msgs = nil
	return m
}

// Field indices of the test type "player".
const (
	fPos    = 0 // vec3, public, the position field
	fHealth = 1 // int32, public
	fAmmo   = 2 // uint32, private
	fPlan   = 3 // bool, party
	fAim    = 4 // float, spectator
)

const playerType = 7

func playerSchema() module.EntityType {
	return module.EntityType{
		ID: playerType, Name: "player", PositionField: "pos",
		Fields: []gamemsg.FieldSchema{
			{Name: "pos", Kind: gamemsg.KindVec3, Visibility: gamemsg.VisibilityPublic},
			{Name: "health", Kind: gamemsg.KindInt32, Visibility: gamemsg.VisibilityPublic},
			{Name: "ammo", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
			{Name: "plan", Kind: gamemsg.KindBool, Visibility: gamemsg.VisibilityParty},
			{Name: "aim", Kind: gamemsg.KindFloat, Visibility: gamemsg.VisibilitySpectator},
		},
		Box: lagcomp.AABB{Min: wire.Vec3{X: -0.5, Y: 0, Z: -0.5}, Max: wire.Vec3{X: 0.5, Y: 2, Z: 0.5}},
	}
}

// world is a Replicator on a fakeNet with one module block owning the
// player type.
type world struct {
	t   testing.TB
	r   *Replicator
	net *fakeNet
	b   Block
}

func newWorld(t testing.TB, cfg Config) *world {
	t.Helper()
	n := &fakeNet{rng: rand.New(rand.NewPCG(1, 2)), gone: map[uint32]bool{}}
	cfg.Send = n.send
	if cfg.Rate == 0 {
		cfg.Rate, cfg.TickRate = 20, 20 // a frame every Tick
	}
	var r *Replicator
	cfg.GameStateSync = func(client uint32, dst []byte) []byte {
		_, types := r.Schemas()
		return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{ClientID: client, TickRate: 20, ReplicationRate: 20, Types: types})
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.ReserveBlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTypes(b, "test", []module.EntityType{playerSchema()}); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, r: r, net: n, b: b}
}

// join admits client id as if its admission GameStateSync carried the
// current schemas, and returns its view.
func (w *world) join(id uint32) *view {
	version, types := w.r.Schemas()
	w.r.AddClient(id, version)
	v := newView(w.t)
	for _, s := range types {
		v.types[s.TypeID] = s
	}
	return v
}

func (w *world) spawn(s module.Spawn) uint32 {
	w.t.Helper()
	if s.Type == 0 {
		s.Type = playerType
	}
	id, err := w.r.Spawn(w.b, s)
	if err != nil {
		w.t.Fatal(err)
	}
	return id
}

func (w *world) set(id uint32, vals ...gamemsg.FieldValue) {
	w.t.Helper()
	if err := w.r.SetFields(w.b, id, vals...); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) move(id uint32, x, y, z float32) {
	w.t.Helper()
	if err := w.r.SetPosition(w.b, id, wire.Vec3{X: x, Y: y, Z: z}, false); err != nil {
		w.t.Fatal(err)
	}
}

// view is a client's picture of the world, decoded from what it received
// exactly as a client must (§9.3): schemas from GameStateSync, spawns
// against them, updates against the spawn's mask.
type view struct {
	t        testing.TB
	types    map[uint16]gamemsg.EntityTypeSchema
	entities map[uint32]*seen
	log      []string
}

type seen struct {
	typ     uint16
	owner   uint32
	visible uint64
	vals    map[int]gamemsg.FieldValue
}

func newView(t testing.TB) *view {
	return &view{t: t, types: map[uint16]gamemsg.EntityTypeSchema{}, entities: map[uint32]*seen{}}
}

func (v *view) apply(m msg) {
	v.t.Helper()
	switch m.typ {
	case gamemsg.TypeGameStateSync:
		gs, err := gamemsg.ParseGameStateSync(m.payload)
		if err != nil {
			v.t.Fatalf("GameStateSync: %v", err)
		}
		clear(v.types)
		for _, s := range gs.Types {
			v.types[s.TypeID] = s
		}
		v.log = append(v.log, "sync")
	case gamemsg.TypeEntitySpawn:
		sp, err := gamemsg.ParseEntitySpawn(m.payload)
		if err != nil {
			v.t.Fatalf("EntitySpawn: %v", err)
		}
		s, ok := v.types[sp.TypeID]
		if !ok {
			v.t.Fatalf("EntitySpawn of type %d the client has no schema for", sp.TypeID)
		}
		_, vals, err := gamemsg.ParseEntitySpawnFields(m.payload, &s)
		if err != nil {
			v.t.Fatalf("EntitySpawn fields: %v", err)
		}
		e := &seen{typ: sp.TypeID, owner: sp.Owner, visible: sp.FieldsMask, vals: map[int]gamemsg.FieldValue{}}
		for _, fv := range vals {
			e.vals[fv.Index] = fv
		}
		v.entities[sp.EntityID] = e
		v.log = append(v.log, fmt.Sprintf("spawn %d", sp.EntityID))
	case gamemsg.TypeEntityStateUpdate:
		id := binary.LittleEndian.Uint32(m.payload)
		e, ok := v.entities[id]
		if !ok {
			v.log = append(v.log, fmt.Sprintf("ignored update %d", id))
			return
		}
		s := v.types[e.typ]
		up, vals, err := gamemsg.ParseEntityStateUpdateFields(m.payload, &s, e.visible)
		if err != nil {
			v.t.Fatalf("EntityStateUpdate: %v", err)
		}
		if up.DirtyMask&^e.visible != 0 {
			v.t.Fatalf("update of %d names fields %#x outside the spawn's %#x", id, up.DirtyMask, e.visible)
		}
		for _, fv := range vals {
			e.vals[fv.Index] = fv
		}
		v.log = append(v.log, fmt.Sprintf("update %d %#x", id, up.DirtyMask))
	case gamemsg.TypeEntityDestroy:
		d, err := gamemsg.ParseEntityDestroy(m.payload)
		if err != nil {
			v.t.Fatalf("EntityDestroy: %v", err)
		}
		delete(v.entities, d.EntityID)
		v.log = append(v.log, fmt.Sprintf("destroy %d", d.EntityID))
	default:
		v.t.Fatalf("unexpected %v", m.typ)
	}
}

// deliver hands the messages of client id to v; it returns v's new log lines.
func (v *view) deliver(ms []msg, id uint32) []string {
	n := len(v.log)
	for _, m := range ms {
		if m.client == id {
			v.apply(m)
		}
	}
	return v.log[n:]
}

func i32(i int, x int32) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: i, Kind: gamemsg.KindInt32, Int: x}
}
func u32(i int, x uint32) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: i, Kind: gamemsg.KindUint32, Uint: x}
}
func flt(i int, x float32) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: i, Kind: gamemsg.KindFloat, Float: x}
}
func bl(i int, x bool) gamemsg.FieldValue {
	return gamemsg.FieldValue{Index: i, Kind: gamemsg.KindBool, Bool: x}
}
