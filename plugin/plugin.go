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
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Module is what a plugin implements. Embed Base to get no-op defaults and
// write only the callbacks you need.
type Module interface {
	// Manifest declares the module: name, version, message types, console
	// commands. It must not depend on Load having run (`sparkhost module
	// describe` calls it without serving).
	Manifest() module.Manifest
	// Load starts the module. Keep h: it is the module's handle to the
	// server for the life of this process.
	Load(h module.Host) error
	// OnAdmitted: a client joined (also called for every present client
	// when the module starts or restarts).
	OnAdmitted(c module.ClientInfo)
	// OnLeft: a client left.
	OnLeft(c module.ClientInfo, reason wire.DisconnectReason)
	// OnMessage: a client sent one of the module's message types. The
	// payload has passed the type's schema and is the module's to keep.
	OnMessage(c module.ClientInfo, t wire.MessageType, payload []byte)
	// OnTick runs once per server tick, after the tick's events and due
	// timers.
	OnTick(t module.Tick)
	// OnMatchStart, OnMatchEnd and OnMapChange follow the match.
	OnMatchStart(m gamemsg.MatchStart)
	OnMatchEnd(m gamemsg.MatchEnd)
	OnMapChange(name string, index int)
	// Command runs one of the module's console commands; the string is
	// printed on the admin console.
	Command(name string, args []string) (string, error)
	// Unload runs when the server unloads the module or shuts down.
	Unload()
}

// Base implements every Module callback as a no-op; embed it.
type Base struct{}

func (Base) Load(module.Host) error                                { return nil }
func (Base) OnAdmitted(module.ClientInfo)                          {}
func (Base) OnLeft(module.ClientInfo, wire.DisconnectReason)       {}
func (Base) OnMessage(module.ClientInfo, wire.MessageType, []byte) {}
func (Base) OnTick(module.Tick)                                    {}
func (Base) OnMatchStart(gamemsg.MatchStart)                       {}
func (Base) OnMatchEnd(gamemsg.MatchEnd)                           {}
func (Base) OnMapChange(string, int)                               {}
func (Base) Unload()                                               {}
func (Base) Command(name string, _ []string) (string, error) {
	return "", errors.New("no such command: " + name)
}

// InputHandler is implemented by a module whose manifest sets Inputs.
type InputHandler interface {
	// OnInput receives one ClientInput of an admitted client, already
	// validated (§9.1: ranges, finite values, reserved bits) and newer
	// than the last one delivered from that client. Answer with an
	// InputAck (Host.Send of gamemsg.TypeInputAck) carrying the authoritative
	// state, for the client's reconciliation.
	OnInput(c module.ClientInfo, in gamemsg.ClientInput)
}

// PauseHandler is implemented by a module that reacts when its room's match
// is paused or resumed (the match clock, which the host owns, stops by
// itself; a module with a world of its own freezes it here).
type PauseHandler interface {
	OnPause(paused bool)
}

// DrainHandler is implemented by a module that reacts when the server
// begins draining (draining true: it admits nobody new, lets running
// matches end and stops at deadline at the latest) or calls the drain off
// (false). A module that can move its players to another server does it
// here; Host.Server().Draining says the same at any time.
type DrainHandler interface {
	OnDrain(draining bool, deadline time.Time)
}

// ErrOutsideCallback is returned by Host methods called from a goroutine
// of the module's own, outside a callback.
var ErrOutsideCallback = errors.New("plugin: Host used outside a callback; keep Host calls in the module's callbacks")
