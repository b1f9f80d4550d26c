package deathmatch

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// fakeEntities is the SDK's entity API as the fake host offers it: the
// module's entities with their values, the clients' views, and a
// lag-compensation history of the hitboxes recorded at the end of every
// tick (endTick), rewound by half the shooter's ping as the SDK does.
type fakeEntities struct {
	live    map[uint32]*fakeEntity
	views   map[uint32]module.ClientView
	next    uint32
	hist    *lagcomp.History
	buf     []lagcomp.Entity
	spawns  int
	removed int
}

type fakeEntity struct {
	id, owner, party uint32
	pos              wire.Vec3
	fields           [playerFields]gamemsg.FieldValue
	teleported       bool
}

const fakeFirstID = 1 << 24

func (h *fakeHost) ents() *fakeEntities {
	if h.entities == nil {
		hist, err := lagcomp.NewHistory(lagcomp.Config{Window: time.Second, TickRate: h.server.TickRate})
		if err != nil {
			h.tb.Fatal(err)
		}
		h.entities = &fakeEntities{live: make(map[uint32]*fakeEntity), views: make(map[uint32]module.ClientView),
			next: fakeFirstID, hist: hist}
	}
	return h.entities
}

func (h *fakeHost) EntityIDs() module.IDRange {
	return module.IDRange{First: fakeFirstID, Last: 2*fakeFirstID - 1}
}

func (h *fakeHost) SpawnEntity(s module.Spawn) (uint32, error) {
	e := h.ents()
	if s.Type != PlayerEntityType || s.ID != 0 || !s.Position.IsFinite() {
		return 0, fmt.Errorf("fake host: spawn %+v", s)
	}
	en := &fakeEntity{id: e.next, owner: s.Owner, party: s.Party, pos: s.Position, teleported: true}
	e.next++
	for i, f := range PlayerType().Fields {
		en.fields[i] = gamemsg.FieldValue{Index: i, Kind: f.Kind}
	}
	en.fields[FieldPos].Vec = s.Position
	if err := en.set(s.Fields); err != nil {
		return 0, err
	}
	e.live[en.id] = en
	e.spawns++
	return en.id, nil
}

func (en *fakeEntity) set(vals []gamemsg.FieldValue) error {
	for _, v := range vals {
		if v.Index < 0 || v.Index >= playerFields || v.Kind != en.fields[v.Index].Kind {
			return fmt.Errorf("fake host: field %+v", v)
		}
		en.fields[v.Index] = v
		if v.Index == FieldPos {
			en.pos = v.Vec
		}
	}
	return nil
}

func (h *fakeHost) entity(id uint32) (*fakeEntity, error) {
	en, ok := h.ents().live[id]
	if !ok {
		return nil, fmt.Errorf("entity %d: %w", id, plugin.ErrNoEntity)
	}
	return en, nil
}

func (h *fakeHost) DestroyEntity(id uint32) error {
	if _, err := h.entity(id); err != nil {
		return err
	}
	delete(h.ents().live, id)
	h.ents().removed++
	return nil
}

func (h *fakeHost) SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error {
	en, err := h.entity(id)
	if err != nil {
		return err
	}
	en.pos, en.fields[FieldPos].Vec = pos, pos
	en.teleported = en.teleported || teleport
	return nil
}

func (h *fakeHost) SetEntityFields(id uint32, values ...gamemsg.FieldValue) error {
	en, err := h.entity(id)
	if err != nil {
		return err
	}
	return en.set(values)
}

func (h *fakeHost) SetEntityOwner(id, client uint32) error {
	en, err := h.entity(id)
	if err == nil {
		en.owner = client
	}
	return err
}

func (h *fakeHost) SetEntityParty(id, party uint32) error {
	en, err := h.entity(id)
	if err == nil {
		en.party = party
	}
	return err
}

func (h *fakeHost) SetClientView(client uint32, v module.ClientView) error {
	if _, ok := h.clients[client]; !ok {
		return fmt.Errorf("fake host: view of client %d, not admitted", client)
	}
	h.ents().views[client] = v
	return nil
}

// body returns the entity owned by client, if any.
func (h *fakeHost) body(client uint32) (*fakeEntity, bool) {
	for _, en := range h.ents().live {
		if en.owner == client {
			return en, true
		}
	}
	return nil, false
}

// endTick records the hitboxes at the tick's time, as the SDK does at the
// end of every Step.
func (h *fakeHost) endTick() {
	e := h.ents()
	e.buf = e.buf[:0]
	for _, en := range e.live {
		b := PlayerBox
		e.buf = append(e.buf, lagcomp.Entity{ID: en.id, Teleported: en.teleported, Box: lagcomp.AABB{
			Min: wire.Vec3{X: en.pos.X + b.Min.X, Y: en.pos.Y + b.Min.Y, Z: en.pos.Z + b.Min.Z},
			Max: wire.Vec3{X: en.pos.X + b.Max.X, Y: en.pos.Y + b.Max.Y, Z: en.pos.Z + b.Max.Z},
		}})
		en.teleported = false
	}
	// Map order would make the history's order, and so ties, random.
	slices.SortFunc(e.buf, func(a, b lagcomp.Entity) int { return cmp.Compare(a.ID, b.ID) })
	if err := e.hist.Record(time.Duration(h.now.UnixNano()), e.buf); err != nil {
		h.tb.Fatalf("fake host: record: %v", err)
	}
}

func (h *fakeHost) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (module.Hit, error) {
	e := h.ents()
	c, ok := h.clients[shooter]
	if !ok {
		return module.Hit{}, fmt.Errorf("raycast by %d: %w", shooter, plugin.ErrNoClient)
	}
	at := lagcomp.RewindTime(time.Duration(h.now.UnixNano()), c.Ping)
	if _, newest, ok := e.hist.Span(); ok && at > newest {
		at = newest
	}
	skip := lagcomp.NoEntity
	if f := e.views[shooter].Focus; f != 0 && e.live[f] != nil {
		skip = f
	} else if en, ok := h.body(shooter); ok {
		skip = en.id
	}
	hit, ok, err := e.hist.Raycast(origin, dir, maxDist, at, skip)
	if err != nil || !ok {
		return module.Hit{}, err
	}
	return module.Hit{Entity: hit.Entity, Point: hit.Point, Distance: hit.Distance}, nil
}
