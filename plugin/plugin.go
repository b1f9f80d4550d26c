// Package plugin is the SDK for sparkhost game modules written in Go and run
// out of process. A plugin is its own program whose whole main is
//
//	func main() { plugin.Serve(&MyModule{}) }
//
// The server starts it as a subprocess (hashicorp/go-plugin over gRPC with
// mutual TLS), so a crash, a panic or a hang in the module never takes the
// server down, and the module can be debugged by attaching a debugger to its
// process. Once per server tick the server sends the batch of events that
// arrived for the module (admissions, departures, its messages, match
// events) and receives the batch of actions the module took (sends, kicks,
// score updates, faults): one round trip per tick, whatever the traffic.
//
// The events are those of the Lua API (docs/lua-modules.md): OnAdmitted,
// OnLeft, OnMessage, OnTick, OnMatchStart, OnMatchEnd, OnMapChange, plus
// console commands and timers. Every callback runs on one goroutine, in
// order; the Host handed to Load is valid in callbacks only.
//
// Stdout belongs to the plugin protocol: the SDK redirects file descriptor 1
// to stderr when it initialises, so a stray fmt.Println cannot break the
// handshake. Log with Host.Log(); records reach the server's log with the
// module's name and level.
//
// See docs/go-plugins.md for writing, building, running, debugging and
// versioning a plugin, and examples/greeter for a complete one.
package plugin

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/host/lagcomp"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Module is what a plugin implements. Embed Base to get no-op defaults and
// write only the callbacks you need.
type Module interface {
	// Manifest declares the module: name, version, message types, console
	// commands. It must not depend on Load having run (`sparkhost module
	// describe` calls it without serving).
	Manifest() Manifest
	// Load starts the module. Keep h: it is the module's handle to the
	// server for the life of this process.
	Load(h Host) error
	// OnAdmitted: a client joined (also called for every present client
	// when the module starts or restarts).
	OnAdmitted(c Client)
	// OnLeft: a client left.
	OnLeft(c Client, reason wire.DisconnectReason)
	// OnMessage: a client sent one of the module's message types. The
	// payload has passed the type's schema and is the module's to keep.
	OnMessage(c Client, t wire.MessageType, payload []byte)
	// OnTick runs once per server tick, after the tick's events and due
	// timers.
	OnTick(t Tick)
	// OnMatchStart, OnMatchEnd and OnMapChange follow the match.
	OnMatchStart(m wire.MatchStart)
	OnMatchEnd(m wire.MatchEnd)
	OnMapChange(name string, index int)
	// Command runs one of the module's console commands; the string is
	// printed on the admin console.
	Command(name string, args []string) (string, error)
	// Unload runs when the server unloads the module or shuts down.
	Unload()
}

// Base implements every Module callback as a no-op; embed it.
type Base struct{}

func (Base) Load(Host) error                            { return nil }
func (Base) OnAdmitted(Client)                          {}
func (Base) OnLeft(Client, wire.DisconnectReason)       {}
func (Base) OnMessage(Client, wire.MessageType, []byte) {}
func (Base) OnTick(Tick)                                {}
func (Base) OnMatchStart(wire.MatchStart)               {}
func (Base) OnMatchEnd(wire.MatchEnd)                   {}
func (Base) OnMapChange(string, int)                    {}
func (Base) Unload()                                    {}
func (Base) Command(name string, _ []string) (string, error) {
	return "", errors.New("no such command: " + name)
}

// Manifest is what a module declares.
type Manifest struct {
	Name    string // module name: the owner of its message types and commands
	Version string
	// Messages are the module's UserDefined types (id ≥ 1000), as in
	// protocol v3 §10; payloads of these types are checked against the
	// schema by the server before the module sees them.
	Messages []wire.Schema
	Commands []CommandSpec
	// EntityTypes are the replicated entity types the module owns (§9.2);
	// an id another module owns makes the load fail.
	EntityTypes []EntityType
	// Inputs subscribes the module to ClientInput: the module must
	// implement InputHandler, whose OnInput receives every valid input of
	// every admitted client.
	Inputs bool
	// Metrics are the module's own numbers (logins, kills, players in a
	// mode): the server exports each as sparkhost_<module>_<name> on its
	// metrics endpoint and shows them on its status page. At most 32, each
	// one number without labels; set them with Host.SetMetric and
	// Host.AddMetric.
	Metrics []MetricSpec
}

// CommandSpec declares one admin console command.
type CommandSpec struct {
	Name, Usage, Help string
}

// Client is what the module knows of an admitted client.
type Client struct {
	ID   uint32
	Name string
	Addr netip.AddrPort
	// Ping is the smoothed round trip, refreshed about once a second.
	Ping time.Duration
	// ChannelBinding is the session's handshake transcript hash, unique to
	// this sealed session: bind in-channel authentication (SCRAM) to it.
	ChannelBinding [32]byte
}

// ServerInfo is what the module knows of the server, as of this tick.
type ServerInfo struct {
	Name       string
	Map        string
	Mode       wire.GameMode
	MatchState wire.MatchState
	TickRate   int
	Tick       uint64
	Players    int
	MaxPlayers int
	// DataDir is the module's own directory inside the server's data
	// directory (created on demand by the module).
	DataDir string
	// ReplicationRate is how many replication frames clients get per
	// second (Hz).
	ReplicationRate int
	// LagWindow is how far back Raycast rewinds at most.
	LagWindow time.Duration
}

// Tick describes the tick being run.
type Tick struct {
	Number uint64
	DT     time.Duration // the fixed step
	Now    time.Time     // the server's tick time
	// Deadline is when the server stops waiting for this tick's answer;
	// a module that misses it is killed and restarted.
	Deadline time.Time
}

// Host is the module's handle to the server. Its methods may be called
// from callbacks only (they return ErrOutsideCallback otherwise): the
// actions they take are collected and carried out by the server when the
// callback's batch returns, in the order they were taken.
type Host interface {
	// Send sends a message of one of the module's types (or a built-in
	// server-to-client type) to one client, on the type's channel. The
	// payload is checked against the schema now; the error says why not.
	Send(client uint32, t wire.MessageType, payload []byte) error
	// Broadcast sends to every admitted client.
	Broadcast(t wire.MessageType, payload []byte) error
	// BroadcastExcept sends to every admitted client but one.
	BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error
	// Kick disconnects a client with reason Kicked and the detail.
	Kick(client uint32, detail string) error
	// AddScore adds to a client's score in the current match.
	AddScore(client uint32, score, kills, deaths int32)
	// Fault reports an error the module caught and survived; the server
	// counts it, shows it in `module info` and may fail the module after
	// too many.
	Fault(err error)
	// Log is the module's logger; records reach the server's log.
	Log() *slog.Logger
	// SetMetric sets one of the manifest's metrics; AddMetric adds to it
	// (a counter only goes up). The server learns the new value with the
	// tick's answer.
	SetMetric(name string, value float64) error
	AddMetric(name string, delta float64) error
	// Client returns an admitted client.
	Client(id uint32) (Client, bool)
	// Clients lists the admitted clients in id order.
	Clients() []Client
	// Server returns the server's facts as of this tick.
	Server() ServerInfo
	// Now is the current tick's time (the server's clock).
	Now() time.Time
	// After runs fn once, at the first tick at or after Now()+d.
	After(d time.Duration, fn func()) TimerID
	// Every runs fn at every period (at most once per tick), first at Now()+period.
	Every(period time.Duration, fn func()) TimerID
	// Cancel stops a timer; it reports whether the timer was pending.
	Cancel(id TimerID) bool
	// KV is the module's small persistent key-value store (the same file
	// and limits as Lua's spark.kv: 64 KiB a value, 1 MiB in all), in its
	// data directory. Every write is durable when it returns. Modules with
	// real data bring an embedded database (see modules/mmo).
	KV() (KV, error)

	// Entities (protocol v3 §9.3; see docs/go-plugins.md). The SDK checks
	// each call against the manifest's entity types and returns the error
	// at once; the server applies the calls when the callback's batch
	// returns, and clients learn of them at the next replication frame.
	// Entities exist from the first tick on: not during Load.

	// EntityIDs is the block of entity ids the server gave this module.
	EntityIDs() IDRange
	// SpawnEntity creates an entity of one of the module's types and
	// returns its id: s.ID if set (in the block, not in use), else the
	// next free id of the block, picked here without a round trip.
	SpawnEntity(s Spawn) (uint32, error)
	// DestroyEntity removes one of the module's entities.
	DestroyEntity(id uint32) error
	// SetEntityPosition moves an entity (and writes its PositionField);
	// teleport marks a jump that lag compensation must not interpolate
	// across (a respawn).
	SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error
	// SetEntityFields writes field values (Index and the member of the
	// field's Kind); values that do not change are not sent to clients.
	SetEntityFields(id uint32, values ...wire.FieldValue) error
	// SetEntityOwner gives an entity to a client (0: none), who then sees
	// its Private fields.
	SetEntityOwner(id, client uint32) error
	// SetEntityParty puts an entity in a party (0: none).
	SetEntityParty(id, party uint32) error
	// SetClientView sets a client's party, spectator flag and focus.
	SetClientView(client uint32, v ClientView) error
	// Raycast validates a hitscan shot of client shooter against the
	// hitboxes of the module's entities as they were half the shooter's
	// ping ago (lag compensation), from a history the SDK records of the
	// positions the module set, every tick. A miss is a Hit with Entity 0;
	// a refusal (a latency beyond the window, an unknown shooter, a bad
	// ray, no type with a Box) is an error.
	Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (Hit, error)
}

// InputHandler is implemented by a module whose manifest sets Inputs.
type InputHandler interface {
	// OnInput receives one ClientInput of an admitted client, already
	// validated (§9.1: ranges, finite values, reserved bits) and newer
	// than the last one delivered from that client. Answer with an
	// InputAck (Host.Send of wire.TypeInputAck) carrying the authoritative
	// state, for the client's reconciliation.
	OnInput(c Client, in wire.ClientInput)
}

// EntityType is a replicated entity type the module owns.
type EntityType struct {
	ID     uint16
	Name   string             // 1..32 bytes, no control characters
	Fields []wire.FieldSchema // at most 64; Fields[i] is bit i of the masks
	// PositionField names a vec3 field that SetEntityPosition also writes;
	// "" means the position is not replicated (the server still uses it
	// for interest and lag compensation).
	PositionField string
	// Box is the hitbox relative to the position, for Raycast; the zero
	// box means none.
	Box AABB
}

// AABB is an axis-aligned box, Min ≤ Max on every axis.
type AABB = lagcomp.AABB

// IDRange is an inclusive range of entity ids.
type IDRange struct{ First, Last uint32 }

// Spawn describes a new entity.
type Spawn struct {
	ID       uint32 // 0: the next free id of the module's block
	Type     uint16
	Owner    uint32 // the client that sees its Private fields; 0 none
	Party    uint32 // clients of this party see its Party fields; 0 none
	Position wire.Vec3
	// Global entities are relevant to every client whatever the distance.
	Global bool
	Fields []wire.FieldValue // initial values; the others are zero
}

// ClientView is what the module says about a client's view of the world.
type ClientView struct {
	Party     uint32 // the client sees the Party fields of this party's entities
	Spectator bool   // sees Party and Spectator fields of every entity it is sent
	// Focus is the entity whose position is the client's viewpoint for
	// interest; 0 means the lowest-id entity it owns.
	Focus uint32
}

// Hit is the result of a Raycast.
type Hit struct {
	Entity   uint32    // 0: nothing was hit
	Point    wire.Vec3 // where the ray enters the entity's rewound box
	Distance float32
}

// KV is a small persistent key-value store private to one module.
type KV interface {
	Get(key string) (string, bool)
	Set(key, value string) error
	Delete(key string) error
	Keys() []string
}

// ErrOutsideCallback is returned by Host methods called from a goroutine
// of the module's own, outside a callback.
var ErrOutsideCallback = errors.New("plugin: Host used outside a callback; keep Host calls in the module's callbacks")
