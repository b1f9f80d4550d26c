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
