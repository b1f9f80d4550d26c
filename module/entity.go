package module

import (
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// EntityType is a replicated entity type a module declares: its fields (as
// GameStateSync carries them to clients) and what the server needs besides.
type EntityType struct {
	ID     uint16
	Name   string                // a valid name of at most 32 bytes (§1)
	Fields []gamemsg.FieldSchema // at most 64; Fields[i] is bit i of the masks
	// PositionField names a vec3 field that mirrors the entity's position:
	// SetEntityPosition writes it too. "" means the position is not
	// replicated (the server still uses it for interest and lag
	// compensation).
	PositionField string
	// Box is the entity's hitbox relative to its position, recorded in the
	// lag-compensation history every tick. The zero box means no hitbox:
	// entities of the type are not recorded and no ray hits them.
	Box AABB
}

// AABB is an axis-aligned box, Min ≤ Max on every axis.
type AABB = lagcomp.AABB

// Hit is the result of a Raycast: Entity 0 when the ray hit nothing.
type Hit = lagcomp.Hit

// IDRange is an inclusive range of entity ids.
type IDRange struct{ First, Last uint32 }

// Contains reports whether id is in the range.
func (r IDRange) Contains(id uint32) bool { return id >= r.First && id <= r.Last }

// Spawn describes a new entity.
type Spawn struct {
	// ID is the entity's id, inside the module's block; 0 takes the next
	// free id of the block.
	ID       uint32
	Type     uint16
	Owner    uint32 // the owning client (sees Private fields); 0 for none
	Party    uint32 // clients of this party see Party fields; 0 for none
	Position wire.Vec3
	// Global entities are relevant to every client, whatever the distance
	// (a flag, a scoreboard): use it for entities without a position.
	Global bool
	// Fields are initial values; the others start at zero.
	Fields []gamemsg.FieldValue
}

// ClientView is what a module says about a client's view of the world.
type ClientView struct {
	// Party is the client's party: it sees the Party fields of the entities
	// of that party. 0 means none.
	Party uint32
	// Spectator clients see the Party and Spectator fields of every entity
	// relevant to them (never the Private ones).
	Spectator bool
	// Focus is the entity whose position is the client's viewpoint for
	// interest (a spectator following a player); 0 means the lowest-id
	// entity the client owns. A client with neither has no viewpoint and
	// every entity is relevant to it.
	Focus uint32
}
