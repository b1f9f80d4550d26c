package plugin

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Entities on the plugin side. The SDK keeps what it needs to answer every
// call at once, without a round trip: the module's types, its live
// entities (type, owner, position), the ids of its block (it picks the id
// of a spawn itself), and a lag-compensation history of the hitboxes at the
// positions it set, recorded at the end of every Step at the tick's time —
// the same snapshots the server records, since the positions are the ones
// the module sent it.
//
// The calls become actions of the callback's batch. Several updates of one
// entity in one batch are merged into one ENTITY_UPDATE action (the last
// position, each field's last value), so a module that moves an entity and
// sets three fields costs one action.

// Errors of the entity API.
var (
	ErrNoEntity    = errors.New("plugin: no such entity of this module")
	ErrUnknownType = errors.New("plugin: entity type not in the manifest")
	ErrBadField    = errors.New("plugin: invalid entity field value")
	ErrBadID       = errors.New("plugin: entity id outside the module's block or in use")
	ErrNoHitboxes  = fmt.Errorf("plugin: %w", module.ErrNoHitboxes)
	ErrNoClient    = fmt.Errorf("plugin: %w", module.ErrNoClient)
	ErrDuringLoad  = errors.New("plugin: entities exist from the first tick on; spawn them in a callback after Load")
)

// sdkType is a manifest entity type with its position field.
type sdkType struct {
	module.EntityType
	pos int // index of PositionField, -1 for none
}

// sdkEntity is one live entity of the module.
type sdkEntity struct {
	t          *sdkType
	owner      uint32
	pos        wire.Vec3
	teleported bool
}

// pendingUpdate is the ENTITY_UPDATE action of an entity being built in
// this batch.
type pendingUpdate struct {
	act  *pluginv1.Action
	mask uint64
	vals [gamemsg.MaxFields]gamemsg.FieldValue
}

// entities is the runtime's entity state.
type entities struct {
	types   map[uint16]*sdkType
	ids     module.IDRange
	next    uint32
	live    map[uint32]*sdkEntity
	views   map[uint32]module.ClientView
	pending map[uint32]*pendingUpdate
	hist    *lagcomp.History
	buf     []lagcomp.Entity
	encBuf  []gamemsg.FieldValue
}

// checkEntityTypes is the manifest check the SDK can do before the server
// sees the types; the server checks the rest (names, visibilities, ids
// other modules own) when the module loads.
func checkEntityTypes(ts []module.EntityType) (map[uint16]*sdkType, error) {
	out := make(map[uint16]*sdkType, len(ts))
	for _, t := range ts {
		if _, dup := out[t.ID]; dup {
			return nil, fmt.Errorf("entity type %d is declared twice", t.ID)
		}
		if len(t.Fields) > gamemsg.MaxFields {
			return nil, fmt.Errorf("entity type %d (%q): %d fields, at most %d", t.ID, t.Name, len(t.Fields), gamemsg.MaxFields)
		}
		st := &sdkType{EntityType: t, pos: -1}
		for i, f := range t.Fields {
			if !f.Kind.Valid() {
				return nil, fmt.Errorf("entity type %d (%q) field %q: unknown kind %d", t.ID, t.Name, f.Name, f.Kind)
			}
			if f.Name == t.PositionField && f.Kind == gamemsg.KindVec3 {
				st.pos = i
			}
		}
		if t.PositionField != "" && st.pos < 0 {
			return nil, fmt.Errorf("entity type %d (%q): position field %q is not one of its vec3 fields", t.ID, t.Name, t.PositionField)
		}
		out[t.ID] = st
	}
	return out, nil
}

// initEntities sets up the entity state of a room: at Init (Serve), when
// the room opens (ServeRooms).
func (r *runtime) initEntities(ids module.IDRange) {
	e := &r.ents
	e.ids = ids
	e.next = e.ids.First
	e.live = make(map[uint32]*sdkEntity)
	e.views = make(map[uint32]module.ClientView)
	e.pending = make(map[uint32]*pendingUpdate)
	for _, t := range e.types {
		if t.Box != (module.AABB{}) {
			h, err := lagcomp.NewHistory(lagcomp.Config{Window: r.server.LagWindow, TickRate: r.server.TickRate})
			if err != nil { // a server sending values lagcomp refuses: use the defaults
				h, _ = lagcomp.NewHistory(lagcomp.Config{})
			}
			e.hist = h
			break
		}
	}
}

func encodeManifestTypes(ts []module.EntityType) []*pluginv1.EntityType {
	out := make([]*pluginv1.EntityType, 0, len(ts))
	for _, t := range ts {
		pt := &pluginv1.EntityType{Id: uint32(t.ID), Name: t.Name, PositionField: t.PositionField}
		if t.Box != (module.AABB{}) {
			pt.BoxMin, pt.BoxMax = pluginwire.Vec3ToPB(t.Box.Min), pluginwire.Vec3ToPB(t.Box.Max)
		}
		for _, f := range t.Fields {
			pt.Fields = append(pt.Fields, &pluginv1.EntityField{Name: f.Name, Kind: uint32(f.Kind), Visibility: uint32(f.Visibility)})
		}
		out = append(out, pt)
	}
	return out
}

// checkValues validates field values against t.
func checkValues(t *sdkType, vals []gamemsg.FieldValue) error {
	for i := range vals {
		v := &vals[i]
		switch {
		case v.Index < 0 || v.Index >= len(t.Fields):
			return fmt.Errorf("%w: field index %d; type %q has %d fields", ErrBadField, v.Index, t.Name, len(t.Fields))
		case v.Kind != t.Fields[v.Index].Kind:
			return fmt.Errorf("%w: field %q is a %s, not a %s", ErrBadField, t.Fields[v.Index].Name, t.Fields[v.Index].Kind, v.Kind)
		case v.Kind == gamemsg.KindFloat && (math.IsNaN(float64(v.Float)) || math.IsInf(float64(v.Float), 0)),
			v.Kind == gamemsg.KindVec3 && !v.Vec.IsFinite():
			return fmt.Errorf("%w: field %q is not finite", ErrBadField, t.Fields[v.Index].Name)
		}
	}
	return nil
}

// entityAct appends an action about one entity, ending the merge of its
// pending update (actions on one entity stay in order).
func (r *runtime) entityAct(id uint32, a *pluginv1.Action) error {
	r.closeUpdate(id)
	return r.act(a)
}

func (r *runtime) EntityIDs() module.IDRange { return r.ents.ids }

func (r *runtime) SpawnEntity(s module.Spawn) (uint32, error) {
	if !r.inCall.Load() {
		return 0, ErrOutsideCallback
	}
	e := &r.ents
	if !r.loaded || e.live == nil {
		return 0, ErrDuringLoad
	}
	t, ok := e.types[s.Type]
	if !ok {
		return 0, fmt.Errorf("spawn: %w: %d", ErrUnknownType, s.Type)
	}
	if !s.Position.IsFinite() {
		return 0, fmt.Errorf("spawn: %w: the position is not finite", ErrBadField)
	}
	if err := checkValues(t, s.Fields); err != nil {
		return 0, fmt.Errorf("spawn: %w", err)
	}
	id := s.ID
	if id == 0 {
		var err error
		if id, err = r.allocateID(); err != nil {
			return 0, err
		}
	} else if id < e.ids.First || id > e.ids.Last || e.live[id] != nil {
		return 0, fmt.Errorf("spawn %d: %w (block %d..%d)", id, ErrBadID, e.ids.First, e.ids.Last)
	}
	a := &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_ENTITY_SPAWN, Entity: id, EntityType: uint32(s.Type),
		Client: s.Owner, Party: s.Party, Position: pluginwire.Vec3ToPB(s.Position), Global: s.Global}
	if len(s.Fields) > 0 {
		a.Fields = pluginwire.AppendFieldValues(nil, s.Fields)
	}
	if err := r.entityAct(id, a); err != nil {
		return 0, err
	}
	pos := s.Position
	e.live[id] = &sdkEntity{t: t, owner: s.Owner, pos: pos, teleported: true}
	if s.ID == 0 {
		e.next = id + 1
	}
	return id, nil
}

// allocateID finds a free id in the block from the cursor on.
func (r *runtime) allocateID() (uint32, error) {
	e := &r.ents
	if e.ids.Last < e.ids.First || e.ids.First == 0 {
		return 0, fmt.Errorf("%w: the server gave this module no entity ids", ErrBadID)
	}
	id := e.next
	for range len(e.live) + 1 {
		if id < e.ids.First || id > e.ids.Last {
			id = e.ids.First
		}
		if e.live[id] == nil {
			return id, nil
		}
		id++
	}
	return 0, fmt.Errorf("%w: the block is full", ErrBadID)
}

func (r *runtime) liveEntity(id uint32) (*sdkEntity, error) {
	if !r.inCall.Load() {
		return nil, ErrOutsideCallback
	}
	e, ok := r.ents.live[id]
	if !ok {
		return nil, fmt.Errorf("entity %d: %w", id, ErrNoEntity)
	}
	return e, nil
}

func (r *runtime) DestroyEntity(id uint32) error {
	if _, err := r.liveEntity(id); err != nil {
		return err
	}
	delete(r.ents.live, id)
	return r.entityAct(id, &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_ENTITY_DESTROY, Entity: id})
}

// update returns the entity's pending ENTITY_UPDATE of this batch, making
// one if needed.
func (r *runtime) update(id uint32) (*pendingUpdate, error) {
	if p := r.ents.pending[id]; p != nil {
		return p, nil
	}
	p := &pendingUpdate{act: &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_ENTITY_UPDATE, Entity: id}}
	if err := r.act(p.act); err != nil {
		return nil, err
	}
	r.ents.pending[id] = p
	return p, nil
}

func (r *runtime) SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error {
	e, err := r.liveEntity(id)
	if err != nil {
		return err
	}
	if !pos.IsFinite() {
		return fmt.Errorf("entity %d: %w: the position is not finite", id, ErrBadField)
	}
	p, err := r.update(id)
	if err != nil {
		return err
	}
	p.act.Position = pluginwire.Vec3ToPB(pos)
	p.act.Teleport = p.act.Teleport || teleport
	if e.t.pos >= 0 {
		p.mask &^= 1 << e.t.pos // the position wins over an earlier value of its field
	}
	e.pos = pos
	e.teleported = e.teleported || teleport
	return nil
}

func (r *runtime) SetEntityFields(id uint32, values ...gamemsg.FieldValue) error {
	e, err := r.liveEntity(id)
	if err != nil {
		return err
	}
	if err := checkValues(e.t, values); err != nil {
		return fmt.Errorf("entity %d: %w", id, err)
	}
	p, err := r.update(id)
	if err != nil {
		return err
	}
	for _, v := range values {
		p.vals[v.Index], p.mask = v, p.mask|1<<v.Index
		if v.Index == e.t.pos {
			e.pos = v.Vec
			p.act.Position = nil // the field carries the position now
		}
	}
	return nil
}

func (r *runtime) SetEntityOwner(id, client uint32) error {
	e, err := r.liveEntity(id)
	if err != nil {
		return err
	}
	e.owner = client
	return r.entityAct(id, &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_ENTITY_OWNER, Entity: id, Client: client})
}

func (r *runtime) SetEntityParty(id, party uint32) error {
	if _, err := r.liveEntity(id); err != nil {
		return err
	}
	return r.entityAct(id, &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_ENTITY_PARTY, Entity: id, Party: party})
}

func (r *runtime) SetClientView(client uint32, v module.ClientView) error {
	if err := r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_CLIENT_VIEW, Client: client,
		Party: v.Party, Spectator: v.Spectator, Entity: v.Focus}); err != nil {
		return err
	}
	r.ents.views[client] = v
	return nil
}

// finishUpdates closes every pending update of the batch.
func (r *runtime) finishUpdates() {
	for id := range r.ents.pending {
		r.closeUpdate(id)
	}
}

// closeUpdate encodes the merged field values of an entity's pending
// update into its action; later calls start a new action.
func (r *runtime) closeUpdate(id uint32) {
	p := r.ents.pending[id]
	if p == nil {
		return
	}
	delete(r.ents.pending, id)
	if p.mask == 0 {
		return
	}
	vals := r.ents.encBuf[:0]
	for i := range gamemsg.MaxFields {
		if p.mask&(1<<i) != 0 {
			vals = append(vals, p.vals[i])
		}
	}
	p.act.Fields = pluginwire.AppendFieldValues(nil, vals)
	r.ents.encBuf = vals[:0]
}

// recordHistory stores the hitboxes of the module's entities at the tick's
// time, like the server does at the end of its tick.
func (r *runtime) recordHistory() {
	e := &r.ents
	if e.hist == nil {
		return
	}
	e.buf = e.buf[:0]
	for id, en := range e.live {
		if b := en.t.Box; b != (module.AABB{}) {
			e.buf = append(e.buf, lagcomp.Entity{ID: id, Box: b.At(en.pos), Teleported: en.teleported})
		}
		en.teleported = false
	}
	if err := e.hist.Record(time.Duration(r.now.UnixNano()), e.buf); err != nil {
		r.log.Warn("lag compensation: snapshot not recorded", "err", err)
	}
}

func (r *runtime) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (module.Hit, error) {
	if !r.inCall.Load() {
		return module.Hit{}, ErrOutsideCallback
	}
	e := &r.ents
	if e.hist == nil {
		return module.Hit{}, ErrNoHitboxes
	}
	c, ok := r.clients[shooter]
	if !ok {
		return module.Hit{}, fmt.Errorf("raycast by %d: %w", shooter, ErrNoClient)
	}
	return e.hist.Shot(time.Duration(r.now.UnixNano()), c.Ping, origin, dir, maxDist, r.viewEntity(shooter))
}

// viewEntity is the shooter's viewpoint entity among the module's: its
// focus, else the lowest-id entity it owns (lagcomp.NoEntity for none).
func (r *runtime) viewEntity(client uint32) uint32 {
	e := &r.ents
	if f := e.views[client].Focus; f != 0 && e.live[f] != nil {
		return f
	}
	best := lagcomp.NoEntity
	for id, en := range e.live {
		if en.owner == client && (best == lagcomp.NoEntity || cmp.Less(id, best)) {
			best = id
		}
	}
	return best
}
