package game

import "github.com/sparkhost/sparkhost/netstack/wire"

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventSpawn: Player (re)spawned at Position facing Yaw, on Team.
	EventSpawn EventKind = iota + 1
	// EventShot: Player fired from Origin; the shot ended at Position,
	// where it hit player Other (0: a wall or nothing within range).
	EventShot
	// EventDamage: Player took Amount damage from Other and has Health left.
	EventDamage
	// EventKill: Player died, killed by Other (Other == Player: a suicide);
	// TeamKill when Other is a teammate. Only reported while a round is
	// live, and every one counts (see the package doc for the scoring).
	EventKill
	// EventTeamChange: Player was put on Team (auto-balance).
	EventTeamChange
)

var eventNames = [...]string{EventSpawn: "spawn", EventShot: "shot", EventDamage: "damage", EventKill: "kill", EventTeamChange: "team"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "event?"
}

// Event is one thing that happened in a Game; which fields are set depends
// on Kind (see the kinds).
type Event struct {
	Kind     EventKind
	Player   uint32
	Other    uint32
	Amount   int
	Health   int
	TeamKill bool
	Team     uint8
	Yaw      float32
	Origin   wire.Vec3
	Position wire.Vec3
}
