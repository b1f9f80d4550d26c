package deathmatch

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// PlayerEntityType is the id of the replicated entity type of the players'
// bodies, "dm_player". A body exists while its player is alive: it is
// spawned at every (re)spawn after a death and destroyed at the death and
// when the player leaves; a respawn without a death (a new round or map, a
// team change) teleports it. PlayerRespawn carries its id.
//
// Why a body per life rather than one per player: lag compensation's ray
// stops at the first box it meets, and a dead player's box would stop
// shots meant for the living behind it; without a body the dead need no
// "alive" field either.
const PlayerEntityType uint16 = 1300

// PlayerEntityName is the name of PlayerEntityType.
const PlayerEntityName = "dm_player"

// The fields of PlayerEntityType: field i is bit i of the masks.
const (
	// FieldPos (vec3, Public, the PositionField): the feet, the bottom
	// centre of the box (movement.State.Position).
	FieldPos = iota
	// FieldYaw and FieldPitch (float, Public): where the player looks, in
	// degrees (movement's convention).
	FieldYaw
	FieldPitch
	// FieldTeam (uint32, Public): 0 in free-for-all, 1 red, 2 blue.
	FieldTeam
	// FieldCrouching (bool, Public).
	FieldCrouching
	// FieldHealth (int32, Party): seen by the owner, by spectators, and in
	// TeamDeathmatch by the teammates (the body's party is its team, and
	// so is each client's view party); enemies never see it.
	FieldHealth
	playerFields
)

// PlayerBox is the hitbox of a body relative to its position: the standing
// player box of sim/movement's default Params. Crouching does not shrink
// it (an entity type has one box).
var PlayerBox = lagcomp.AABB{
	Min: wire.Vec3{X: -movement.DefaultHalfWidth, Y: 0, Z: -movement.DefaultHalfWidth},
	Max: wire.Vec3{X: movement.DefaultHalfWidth, Y: movement.DefaultHeight, Z: movement.DefaultHalfWidth},
}

// PlayerType is the body's entity type, as the manifest declares it.
func PlayerType() module.EntityType {
	f := make([]gamemsg.FieldSchema, playerFields)
	f[FieldPos] = gamemsg.FieldSchema{Name: "pos", Kind: gamemsg.KindVec3, Visibility: gamemsg.VisibilityPublic}
	f[FieldYaw] = gamemsg.FieldSchema{Name: "yaw", Kind: gamemsg.KindFloat, Visibility: gamemsg.VisibilityPublic}
	f[FieldPitch] = gamemsg.FieldSchema{Name: "pitch", Kind: gamemsg.KindFloat, Visibility: gamemsg.VisibilityPublic}
	f[FieldTeam] = gamemsg.FieldSchema{Name: "team", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPublic}
	f[FieldCrouching] = gamemsg.FieldSchema{Name: "crouching", Kind: gamemsg.KindBool, Visibility: gamemsg.VisibilityPublic}
	f[FieldHealth] = gamemsg.FieldSchema{Name: "health", Kind: gamemsg.KindInt32, Visibility: gamemsg.VisibilityParty}
	return module.EntityType{ID: PlayerEntityType, Name: PlayerEntityName, Fields: f, PositionField: "pos", Box: PlayerBox}
}

// body is one living player's entity and the values last handed to the
// SDK, so that a tick in which nothing changed costs no action.
type body struct {
	entity uint32
	pos    wire.Vec3
	yaw    float32
	pitch  float32
	team   uint8
	crouch bool
	health int
}

// bodies replicates the players as PlayerEntityType entities through the
// SDK's entity API. Game goroutine only, inside callbacks.
type bodies struct {
	h        module.Host
	teams    bool
	byClient map[uint32]*body
	byEntity map[uint32]uint32    // entity → client
	free     []*body              // bodies of the dead, for the next spawns
	vals     []gamemsg.FieldValue // scratch
}

func newBodies(h module.Host, teams bool) *bodies {
	return &bodies{h: h, teams: teams, byClient: make(map[uint32]*body), byEntity: make(map[uint32]uint32)}
}

// party is the body's party and its owner's view party: the team with
// teams (teammates see each other's health), none without.
func (b *bodies) party(team uint8) uint32 {
	if b.teams {
		return uint32(team)
	}
	return 0
}

// spawned puts p's body at its spawn: a new entity after a death or on
// joining, a teleport of the one it has otherwise. It returns the entity
// id (0 if the SDK refused, which is reported as a fault).
func (b *bodies) spawned(p game.PlayerView) uint32 {
	s := p.State
	if bd, ok := b.byClient[p.ID]; ok {
		err := b.h.SetEntityPosition(bd.entity, s.Position, true)
		if bd.team != p.Team {
			err = errors.Join(err, b.h.SetEntityParty(bd.entity, b.party(p.Team)))
		}
		err = errors.Join(err, b.update(bd, p), b.view(p.ID, p.Team, bd.entity))
		b.fault(p.ID, err)
		return bd.entity
	}
	var bd *body
	if n := len(b.free); n > 0 {
		bd, b.free = b.free[n-1], b.free[:n-1]
	} else {
		bd = new(body)
	}
	*bd = body{pos: s.Position, yaw: s.Yaw, pitch: s.Pitch, team: p.Team, crouch: s.Crouching, health: p.Health}
	b.vals = append(b.vals[:0],
		gamemsg.FieldValue{Index: FieldYaw, Kind: gamemsg.KindFloat, Float: s.Yaw},
		gamemsg.FieldValue{Index: FieldPitch, Kind: gamemsg.KindFloat, Float: s.Pitch},
		gamemsg.FieldValue{Index: FieldTeam, Kind: gamemsg.KindUint32, Uint: uint32(p.Team)},
		gamemsg.FieldValue{Index: FieldCrouching, Kind: gamemsg.KindBool, Bool: s.Crouching},
		gamemsg.FieldValue{Index: FieldHealth, Kind: gamemsg.KindInt32, Int: int32(p.Health)})
	id, err := b.h.SpawnEntity(module.Spawn{Type: PlayerEntityType, Owner: p.ID, Party: b.party(p.Team),
		Position: s.Position, Fields: b.vals})
	if err != nil {
		b.free = append(b.free, bd)
		b.fault(p.ID, err)
		return 0
	}
	bd.entity = id
	b.byClient[p.ID], b.byEntity[id] = bd, p.ID
	b.fault(p.ID, b.view(p.ID, p.Team, id))
	return id
}

// view makes the client's body its viewpoint for interest and its team
// its party.
func (b *bodies) view(client uint32, team uint8, entity uint32) error {
	return b.h.SetClientView(client, module.ClientView{Party: b.party(team), Focus: entity})
}

// moved writes what changed of a living player since the last call.
func (b *bodies) moved(p game.PlayerView) {
	if bd, ok := b.byClient[p.ID]; ok {
		var err error
		if p.State.Position != bd.pos {
			err = b.h.SetEntityPosition(bd.entity, p.State.Position, false)
		}
		b.fault(p.ID, errors.Join(err, b.update(bd, p)))
	}
}

// update sends the fields of p that differ from what bd last sent.
func (b *bodies) update(bd *body, p game.PlayerView) error {
	s := p.State
	b.vals = b.vals[:0]
	if s.Yaw != bd.yaw {
		b.vals = append(b.vals, gamemsg.FieldValue{Index: FieldYaw, Kind: gamemsg.KindFloat, Float: s.Yaw})
	}
	if s.Pitch != bd.pitch {
		b.vals = append(b.vals, gamemsg.FieldValue{Index: FieldPitch, Kind: gamemsg.KindFloat, Float: s.Pitch})
	}
	if p.Team != bd.team {
		b.vals = append(b.vals, gamemsg.FieldValue{Index: FieldTeam, Kind: gamemsg.KindUint32, Uint: uint32(p.Team)})
	}
	if s.Crouching != bd.crouch {
		b.vals = append(b.vals, gamemsg.FieldValue{Index: FieldCrouching, Kind: gamemsg.KindBool, Bool: s.Crouching})
	}
	if p.Health != bd.health {
		b.vals = append(b.vals, gamemsg.FieldValue{Index: FieldHealth, Kind: gamemsg.KindInt32, Int: int32(p.Health)})
	}
	bd.pos, bd.yaw, bd.pitch, bd.team, bd.crouch, bd.health = s.Position, s.Yaw, s.Pitch, p.Team, s.Crouching, p.Health
	if len(b.vals) == 0 {
		return nil
	}
	return b.h.SetEntityFields(bd.entity, b.vals...)
}

// died destroys a player's body (a death); its view keeps its party and
// loses its focus until the respawn.
func (b *bodies) died(client uint32, team uint8) {
	if b.remove(client) {
		b.fault(client, b.h.SetClientView(client, module.ClientView{Party: b.party(team)}))
	}
}

// left destroys the body of a player who left.
func (b *bodies) left(client uint32) { b.remove(client) }

func (b *bodies) remove(client uint32) bool {
	bd, ok := b.byClient[client]
	if !ok {
		return false
	}
	delete(b.byClient, client)
	delete(b.byEntity, bd.entity)
	b.free = append(b.free, bd)
	b.fault(client, b.h.DestroyEntity(bd.entity))
	return true
}

// client returns the player whose body entity is.
func (b *bodies) client(entity uint32) (uint32, bool) {
	c, ok := b.byEntity[entity]
	return c, ok
}

// entity returns the body of a player (0: none).
func (b *bodies) entity(client uint32) uint32 {
	if bd, ok := b.byClient[client]; ok {
		return bd.entity
	}
	return 0
}

func (b *bodies) len() int { return len(b.byClient) }

func (b *bodies) fault(client uint32, err error) {
	if err != nil {
		b.h.Fault(fmt.Errorf("body of player %d: %w", client, err))
	}
}

// hostRaycaster validates shots with the host's lag compensation: the
// SDK's Host.Raycast, rewound by half the shooter's ping, against the
// bodies' hitboxes as the module set them; it turns the body hit into its
// player. The Game stops the ray at the map's obstacles before asking.
type hostRaycaster struct {
	h       module.Host
	b       *bodies
	refused uint64 // shots Raycast refused (a ping beyond the window, ...)
}

var _ game.Raycaster = (*hostRaycaster)(nil)

func (r *hostRaycaster) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (uint32, wire.Vec3, bool) {
	hit, err := r.h.Raycast(shooter, origin, dir, maxDist)
	if err != nil {
		r.refused++
		return 0, wire.Vec3{}, false
	}
	if hit.Entity == 0 {
		return 0, wire.Vec3{}, false
	}
	// A body destroyed since (its player died) may still be in the
	// rewound past: it stops the ray, and the shot misses.
	victim, ok := r.b.client(hit.Entity)
	if !ok {
		return 0, wire.Vec3{}, false
	}
	return victim, hit.Point, true
}
