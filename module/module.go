// Package module is the one contract every game module implements, whatever
// its runtime (Lua in-process, a Go plugin out of process, plain Go in
// tests): the Module interface and its optional capabilities, the events a
// module receives, the Host handle through which it acts, its manifest and
// message schemas, and the registry of runtimes. The plugin SDK (package
// plugin) builds on these same types, so a client, an event or a schema has
// one definition.
//
// It holds types only: it imports no host package, opens nothing and runs
// nothing. The manager that loads modules into the DedicatedServer is
// host/supervisor; the runtimes (runtimes/lua, runtimes/pluginhost) are registered with
// RegisterRuntime by the program (cmd/sparkhost), never imported by the host.
//
// Threads: every Module method and every Host call happens on the game
// thread. A module never sees a Securing slot and never a payload that
// failed its schema.
package module

import (
	"errors"
	"time"
)

// Module is what every runtime implements. Every method is called on the
// game thread, never concurrently, and the manager recovers a panic in any
// of them as a fault of the module.
type Module interface {
	// Load starts the module. It returns the module's manifest: its name,
	// version, message types, entity types and console commands. The Host
	// stays valid until Unload returns.
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
// process exited, panicked, hung or outgrew its memory cap and was killed.
// A Step, Command or Load error that wraps it makes the manager detach the
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
// past a tick (Lua when its budget runs out, a plugin whose answer is
// late). The manager takes no more from the module's inbox than the inbox
// capacity minus Backlog, so a module that falls behind fills its bounded
// inbox instead of its memory, and the network side drops and counts.
type Backlogger interface {
	Backlog() int
}

// Process is the optional capability of a module that runs as a process of
// its own (a Go plugin): its pid, for `module info` and a debugger; 0 when
// it is not running.
type Process interface {
	Pid() int
}

// Preparer is the optional capability of a module whose start is slow (a
// process to launch and greet): the manager may call Prepare off the game
// thread before Load, so that the server keeps ticking while it runs (the
// restart after a crash does). Prepare may take as long as the runtime's
// own start timeout; the Load that follows, on the game thread, must then
// be quick. Prepare uses no Host: what it needs of the server is in info.
type Preparer interface {
	Prepare(info StartInfo) error
}

// StartInfo is what a module's start needs of the server, taken on the
// game thread for a Preparer.
type StartInfo struct {
	Server    ServerInfo
	EntityIDs IDRange
}

// Starter is implemented by a Host that can say what a module's start is
// for: the facts (Server.Room names the room; 0 the whole server) and the
// entity ids of the first room the instance serves. A module that serves
// many rooms has an own Host scoped to none of them, so a runtime that
// starts the module elsewhere (a plugin process, which loads its first
// room while it starts) asks the Host for this rather than for Server and
// EntityIDs.
type Starter interface {
	StartInfo() StartInfo
}

// CodeHasher is the optional capability of a module that can name the code
// it runs (the SHA-256 of a script or an executable), shown by
// `module info`.
type CodeHasher interface {
	CodeHash() string
}

// Reporter is the optional capability of a runtime that keeps figures of
// its own (a plugin's late answers and resident memory): `module info`
// shows them. Called on the game thread; it must be cheap.
type Reporter interface {
	RuntimeStats() RuntimeStats
}

// RuntimeStats are a runtime's own figures; a field that does not apply
// to the runtime stays zero.
type RuntimeStats struct {
	// LateAnswers counts ticks whose answer came after the server stopped
	// waiting for it (its actions applied at a later tick).
	LateAnswers uint64
	// HeldTicks counts ticks whose events were held back because the
	// module's previous answer had not come yet (it ran behind the
	// server); they travel with the next call.
	HeldTicks uint64
	// AnswerTime is the round trip of the recent answers (a moving
	// average).
	AnswerTime time.Duration
	// TickWaits counts the times a tick stopped to wait for the module's
	// answer (same_tick: every call's; next_tick: never), and TickWaitTime
	// is the time the game thread spent so waiting, in all: the part of
	// the tick time that was the plugin's, not the server's.
	TickWaits    uint64
	TickWaitTime time.Duration
	// Resident is the memory the module's processes hold, in bytes, as
	// last measured; MemoryLimit is its cap.
	Resident, MemoryLimit int64
	// LogDropped counts the log lines dropped over the module's rate limit.
	LogDropped uint64
}
