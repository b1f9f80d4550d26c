// Package module is the one contract every game module implements, whatever
// its runtime (Lua in-process, Go plugin out of process), and the Manager that
// loads modules into the DedicatedServer.
//
// Threads: the network goroutines only copy validated messages of a module's
// types into that module's bounded Inbox; everything else — Load, Step,
// Command, Unload, and every Host call a module makes — happens on the game
// thread. A module never sees a Securing slot and never a payload that failed
// its schema.
//
// Failure: a module fault (a script error, a budget overrun) is counted and
// logged; after too many faults in a window the module is marked failed and
// unloaded. A crashed instance (ErrCrashed: its plugin process exited,
// panicked or missed its tick deadline) is detached at once and started again
// after a backoff; after too many crashes in a window it is marked failed.
// Players stay connected; the server keeps ticking. A module can never
// replace a built-in message schema or another module's.
//
// Entities: each module instance owns a block of entity ids and the entity
// types it declares; the Host's entity API is host/replicate's, limited to
// the module's own block and types, and everything of a module's goes when
// it unloads or crashes. ClientInput reaches the modules that subscribe
// (Manifest.Inputs) as EventInput, stale sequences dropped.
package module

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Module is what both runtimes implement. Every method is called on the game
// thread, never concurrently.
type Module interface {
	// Load starts the module. It returns the module's manifest: its name,
	// version, message types and console commands. The Host stays valid
	// until Unload returns.
	Load(h Host) (Manifest, error)
	// Step runs one tick of the module: first the events that arrived since
	// the last tick, in arrival order, then the module's due timers and its
	// tick handler. A runtime reports each fault through Host.Fault and goes
	// on; a returned error means the module cannot continue.
	Step(t Tick, events []Event) error
	// Command runs one of the module's console commands.
	Command(name string, args []string) (string, error)
	// Unload stops the module and releases everything it holds.
	Unload() error
}

// ErrCrashed marks an error after which a module instance is gone: its
// process exited, panicked or missed its tick deadline and was killed. A
// Step, Command or Load error that wraps it makes the manager detach the
// module (its message types and commands are removed, players stay
// connected) and start a fresh instance after a backoff.
var ErrCrashed = errors.New("module crashed")

// StateCarrier is the optional capability of a module that hands state to
// its successor on reload (Lua: save_state() → on_reload(state)).
type StateCarrier interface {
	// SaveState returns the state to carry; called on the old instance.
	SaveState() ([]byte, error)
	// RestoreState receives it; called on the new instance after Load.
	RestoreState(state []byte) error
}

// Backlogger is the optional capability of a module that can defer events
// past a tick (Lua, when its budget runs out). The manager takes no more from
// the module's inbox than the inbox capacity minus Backlog, so a module that
// falls behind fills its bounded inbox instead of its memory, and the network
// side drops and counts (inboxDrops).
type Backlogger interface {
	Backlog() int
}

// Manifest is what a module declares when it loads.
type Manifest struct {
	Name     string
	Version  string
	Messages []wire.Schema // UserDefined types (id ≥ 1000) the module owns
	Commands []CommandSpec // admin console commands the module adds
	// EntityTypes are the replicated entity types the module owns (§9.2):
	// registered with its message types, all or none; an id another module
	// owns is refused. They go, and every entity of the module is destroyed
	// for clients, when the module unloads, crashes or reloads.
	EntityTypes []replicate.EntityType
	// Inputs subscribes the module to ClientInput: each valid input of an
	// admitted client reaches it as an EventInput.
	Inputs bool
}

// CommandSpec declares one admin console command of a module.
type CommandSpec struct {
	Name, Usage, Help string
}

// Tick describes the tick a Step runs in.
type Tick struct {
	Number uint64
	DT     time.Duration // the fixed step
	Now    time.Time
	// Deadline is when the module's work for this tick must be done (the
	// module's budget); runtimes that can be interrupted (Lua) enforce it.
	Deadline time.Time
}

// EventKind says what an Event carries.
type EventKind uint8

// Event kinds.
const (
	EventAdmitted   EventKind = iota + 1 // Client, Name: a client joined (also sent for every present client when a module loads)
	EventLeft                            // Client, Reason: a client left
	EventMessage                         // Client, Type, Payload: one of the module's messages
	EventMatchStart                      // Match
	EventMatchEnd                        // MatchEnd
	EventMapChange                       // Map, MapIndex
	EventInput                           // Client, Input: a ClientInput (modules with Manifest.Inputs)
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventAdmitted:
		return "admitted"
	case EventLeft:
		return "left"
	case EventMessage:
		return "message"
	case EventMatchStart:
		return "match_start"
	case EventMatchEnd:
		return "match_end"
	case EventMapChange:
		return "map_change"
	case EventInput:
		return "input"
	}
	return "unknown"
}

// Event is one thing that happened since the module's last Step.
type Event struct {
	Kind     EventKind
	Client   uint32
	Name     string                // EventAdmitted
	Reason   wire.DisconnectReason // EventLeft
	Type     wire.MessageType      // EventMessage
	Payload  []byte                // EventMessage: a copy owned by the event
	Match    gamemsg.MatchStart    // EventMatchStart
	MatchEnd gamemsg.MatchEnd      // EventMatchEnd
	Map      string                // EventMapChange
	MapIndex int                   // EventMapChange
	Input    gamemsg.ClientInput   // EventInput
}

// ClientInfo is what a module may know about an admitted client.
type ClientInfo struct {
	ID   uint32
	Name string
	Addr netip.AddrPort
	Ping time.Duration
	// ChannelBinding is the session's handshake transcript hash: unique to
	// this sealed session, for binding in-channel authentication (SCRAM).
	ChannelBinding [32]byte
}

// ServerInfo is what a module may know about the server.
type ServerInfo struct {
	Name       string
	Map        string
	Mode       gamemsg.GameMode
	MatchState gamemsg.MatchState
	TickRate   int
	Tick       uint64
	Players    int
	MaxPlayers int
	DataDir    string // the module's own directory inside the data directory
	// ModulesDir holds every module's own directory (DataDir is
	// ModulesDir/NAME); a runtime that learns its module's name later (a
	// plugin, during Load) derives DataDir from it.
	ModulesDir string
	// ReplicationRate is how many replication frames clients get per
	// second (Hz).
	ReplicationRate int
	// LagWindow is how far back Raycast rewinds at most.
	LagWindow time.Duration
}

// Host is the set of services the server offers every module. Its methods
// are called on the game thread only.
type Host interface {
	// Send sends a message to one client on the channel of the type's schema.
	Send(client uint32, t wire.MessageType, payload []byte) error
	// Broadcast sends to every admitted client.
	Broadcast(t wire.MessageType, payload []byte) error
	// BroadcastExcept sends to every admitted client but one.
	BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error
	// Kick disconnects a client with reason Kicked and the given detail.
	Kick(client uint32, detail string) error
	// Log is the module's logger (its records carry the module name).
	Log() *slog.Logger
	// Fault reports one fault (script error, budget overrun); the manager
	// counts it and may unload the module after too many.
	Fault(err error)
	// Client returns an admitted client's facts.
	Client(id uint32) (ClientInfo, bool)
	// Clients lists the admitted clients.
	Clients() []ClientInfo
	// Server returns the server's facts.
	Server() ServerInfo
	// AddScore adds to a client's score in the current match.
	AddScore(client uint32, score, kills, deaths int32)
	// KV is the module's persistent key-value store.
	KV() KV

	// Entities (§9.3). A module spawns entities of the types it declared,
	// with ids from its own block (EntityIDs), and may touch only those.
	// Clients learn of them at the next replication frame. Entities cannot
	// be spawned during Load (the types are registered when Load returns).

	// EntityIDs is the block of entity ids this module owns. A Spawn with
	// ID 0 gets the next free id of the block; a plugin picks its ids in
	// the block itself, so it needs no round trip.
	EntityIDs() replicate.IDRange
	// SpawnEntity creates an entity and returns its id.
	SpawnEntity(s replicate.Spawn) (uint32, error)
	// DestroyEntity removes an entity.
	DestroyEntity(id uint32) error
	// SetEntityPosition moves an entity (and writes its PositionField);
	// teleport marks a jump that lag compensation must not interpolate
	// across.
	SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error
	// SetEntityFields writes field values; unchanged values are not sent.
	SetEntityFields(id uint32, values ...gamemsg.FieldValue) error
	// SetEntityOwner gives an entity to a client (0: none): the owner sees
	// its Private fields.
	SetEntityOwner(id, client uint32) error
	// SetEntityParty puts an entity in a party (0: none).
	SetEntityParty(id, party uint32) error
	// SetClientView sets a client's party, spectator flag and focus entity.
	SetClientView(client uint32, v replicate.ClientView) error
	// Raycast validates a hitscan shot of client shooter against the
	// module's entity hitboxes rewound by half the shooter's RTT; a miss
	// has Entity 0, a refusal is an error (see replicate.Replicator.Raycast).
	Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (replicate.Hit, error)
}

// KV is a small persistent key-value store private to one module. Every
// write is durable when it returns (write to a temporary file, fsync,
// rename), so a crash never leaves it half written.
type KV interface {
	Get(key string) (string, bool)
	Set(key, value string) error
	Delete(key string) error
	Keys() []string
}
