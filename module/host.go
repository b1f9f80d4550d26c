package module

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Host is the set of services the server offers a module, whatever its
// runtime. In the server its methods are called on the game thread; in a
// plugin process, from the module's callbacks (the plugin SDK collects the
// calls as actions of the tick's batch and the server carries them out when
// the batch returns, in order).
type Host interface {
	// Send sends a message of one of the module's types (or a built-in
	// server-to-client game type) to one client of the module's room, on
	// the type's channel (a client elsewhere is ErrNoClient).
	// The payload is checked against the schema first; the error says why
	// not.
	Send(client uint32, t wire.MessageType, payload []byte) error
	// Broadcast sends to every client of the module's room (every admitted
	// client for a module of the whole server).
	Broadcast(t wire.MessageType, payload []byte) error
	// BroadcastExcept sends to every client of the room but one.
	BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error
	// Kick disconnects a client of the module's room with reason Kicked and
	// the given detail.
	Kick(client uint32, detail string) error
	// AddScore adds to a client's score in the current match (nothing on a
	// server without match state, Manifest.NoMatch).
	AddScore(client uint32, score, kills, deaths int32)
	// SetArea names the part of the world this server runs (an MMO area,
	// a zone): for a module of Manifest.NoMatch, LAN discovery and
	// GameStateSync announce it beside the module's name. It is a name of
	// at most MaxAreaLen bytes (wire.ValidName); "" clears it. A match-based
	// module's area is ignored (a match announces its map).
	SetArea(name string) error
	// Fault reports an error the module caught and survived (a script
	// error, a budget overrun); the server counts it, shows it in
	// `module info` and may fail the module after too many.
	Fault(err error)
	// Log is the module's logger (its records carry the module's name).
	Log() *slog.Logger
	// Client returns the facts of a client of the module's room.
	Client(id uint32) (ClientInfo, bool)
	// Clients lists the clients of the module's room in id order.
	Clients() []ClientInfo
	// Server returns the server's facts as of this tick.
	Server() ServerInfo
	// KV is the module's small persistent key-value store in its data
	// directory (64 KiB a value, 1 MiB in all); every write is durable when
	// it returns. The error says why the store cannot be opened.
	KV() (KV, error)

	// SetMetric sets one of the manifest's metrics; AddMetric adds to it. A
	// counter cannot go down. The error names an undeclared metric.
	SetMetric(name string, value float64) error
	AddMetric(name string, delta float64) error

	// Now is the current tick's time (the server's clock).
	Now() time.Time
	// After runs fn once, at the first tick at or after Now()+d.
	After(d time.Duration, fn func()) TimerID
	// Every runs fn every period (at most once per tick), first at
	// Now()+period.
	Every(period time.Duration, fn func()) TimerID
	// Cancel stops a timer; it reports whether the timer was pending.
	Cancel(id TimerID) bool

	// Entities (§9.3; docs/replication.md). A module spawns entities of the
	// types it declared, with ids from its own block, and may touch only
	// those. Clients learn of them at the next replication frame. Entities
	// exist from the first tick on: not during Load.

	// EntityIDs is the block of entity ids this module owns. A Spawn with
	// ID 0 gets the next free id of the block.
	EntityIDs() IDRange
	// SpawnEntity creates an entity and returns its id.
	SpawnEntity(s Spawn) (uint32, error)
	// DestroyEntity removes one of the module's entities.
	DestroyEntity(id uint32) error
	// SetEntityPosition moves an entity (and writes its PositionField);
	// teleport marks a jump that lag compensation must not interpolate
	// across (a respawn).
	SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error
	// SetEntityFields writes field values (Index and the member of the
	// field's Kind); values that do not change are not sent to clients.
	SetEntityFields(id uint32, values ...gamemsg.FieldValue) error
	// SetEntityOwner gives an entity to a client (0: none), who then sees
	// its Private fields.
	SetEntityOwner(id, client uint32) error
	// SetEntityParty puts an entity in a party (0: none).
	SetEntityParty(id, party uint32) error
	// SetClientView sets a client's party, spectator flag and focus.
	SetClientView(client uint32, v ClientView) error
	// Raycast validates a hitscan shot of client shooter against the
	// hitboxes of the module's entities as they were half the shooter's
	// round trip ago (lag compensation). A miss is a Hit with Entity 0; a
	// refusal (a latency beyond the window, an unknown shooter, a bad ray,
	// no type with a Box) is an error.
	Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (Hit, error)
}

// MaxAreaLen bounds Host.SetArea's name: with the module's name it fits
// the 64 bytes a map name has on the wire.
const MaxAreaLen = 31

// ErrBadArea: Host.SetArea was given a name that is not 1..MaxAreaLen
// bytes of printable UTF-8.
var ErrBadArea = errors.New("module: an area is 1..31 bytes of printable UTF-8")

// TimerID names a timer for Host.Cancel.
type TimerID uint64

// KV is a small persistent key-value store private to one module. Every
// write is durable when it returns (write to a temporary file, fsync,
// rename), so a crash never leaves it half written.
type KV interface {
	Get(key string) (string, bool)
	Set(key, value string) error
	Delete(key string) error
	Keys() []string
}

// ClientInfo is what a module may know about an admitted client.
type ClientInfo struct {
	ID   uint32
	Name string
	Addr netip.AddrPort
	// Ping is the smoothed round trip (refreshed about once a second in a
	// plugin).
	Ping time.Duration
	// Link is what the server's congestion control says of the path to
	// the client (refreshed about once a second in a plugin): a module
	// that sends this client state of its own lowers its rate while
	// Link.Backlogged (docs/modules.md, "Send rate").
	Link Link
	// ChannelBinding is the session's handshake transcript hash: unique to
	// this sealed session, for binding in-channel authentication (SCRAM).
	ChannelBinding [32]byte
	// Ticket is the admission ticket the client presented in its sealed
	// ClientFinished (docs/protocol.md §3.13): at most 256 bytes from the
	// network, opaque to the server and unverified; nil when there was
	// none. Given with admitted events (those of a module reloaded while the
	// client stays too).
	Ticket []byte
	// Present is set in an admitted event that greets a client admitted
	// before this module started — the module loaded, restarted after a
	// crash or was reloaded, or a room's module started — rather than one
	// that just arrived. A module that keeps per-client state in memory
	// lost it for such a client (the mmo tells it to log in again).
	Present bool
}

// ServerInfo is what a module may know about the server, as of this tick.
type ServerInfo struct {
	Name       string
	Map        string
	Mode       gamemsg.GameMode
	MatchState gamemsg.MatchState
	TickRate   int
	Tick       uint64
	Players    int
	MaxPlayers int
	// DataDir is the module's own directory inside the server's data
	// directory (created on demand by the module).
	DataDir string
	// ModulesDir holds every module's own directory (DataDir is
	// ModulesDir/NAME); a runtime that learns its module's name later (a
	// plugin, during Load) derives DataDir from it.
	ModulesDir string
	// ReplicationRate is how many replication frames clients get per
	// second (Hz).
	ReplicationRate int
	// LagWindow is how far back Raycast rewinds at most.
	LagWindow time.Duration
	// Room is the module's room (its ID is 0 for a module of the whole
	// server); Map, MatchState, Players and MaxPlayers above are the
	// room's.
	Room RoomInfo
	// Draining says the server drains (EventDrain): it admits nobody and
	// stops at DrainDeadline at the latest.
	Draining      bool
	DrainDeadline time.Time
}

// Errors a Host returns that a module may match with errors.Is.
var (
	// ErrNoClient: the client is not (or no longer) admitted.
	ErrNoClient = errors.New("module: no such admitted client")
	// ErrNotYourType: a module may send only its own types and the
	// built-in server-to-client game types.
	ErrNotYourType = errors.New("module may only send its own types or built-in server-to-client types")
	// ErrReplicated: entity replication sends this type (EntitySpawn,
	// EntityStateUpdate, EntityDestroy, GameStateSync); use the entity API.
	ErrReplicated = errors.New("entity replication sends this type; use the entity API (SpawnEntity, SetEntityFields, DestroyEntity)")
	// ErrNoWorld: this server has no entity replication.
	ErrNoWorld = errors.New("this server has no entity replication")
	// ErrNoHitboxes: Raycast by a module that declared no type with a Box.
	ErrNoHitboxes = errors.New("module: no entity type of the manifest has a box")
)

// Link is the server's view of the path to one client (congestion
// control, docs/operations.md "Send rate that fits the link"). Zero values
// mean "not known": a protocol v3 session is not paced, and a new session
// has no estimate yet.
type Link struct {
	RTTVariance time.Duration // the round trip's variation (RFC 6298 RTTVAR)
	Loss        float64       // round-trip probe loss, 0..1 (smoothed)
	Bandwidth   float64       // estimated bytes/s toward the client
	SendRate    float64       // the rate the server paces the client's traffic to, bytes/s
	QueueDelay  time.Duration // how long the oldest message of the server's last send to it waited
	// Backlogged: the client's entity state waits for the pacer (the
	// link is slower than what the game sends it). Send it less: fewer or
	// smaller unreliable messages; replication already merges its updates.
	Backlogged bool
}
