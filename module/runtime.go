package module

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// A runtime runs modules of one kind ("lua", "plugin"). The program
// registers each runtime it links (cmd/sparkhost registers runtimes/lua and
// runtimes/pluginhost); the host finds them by kind and never imports them.

// Source says which module to run: how the operator named it, and what the
// runtime opens.
type Source struct {
	// Name is how the operator named the module (a path or a built-in
	// name): shown in messages, and the key of its [modules.sha256] entry.
	Name string
	// Path is the file the runtime runs: a .lua script, a plugin executable
	// (for a module built into the program, the program itself).
	Path string
	// Args are the executable's arguments (a built-in plugin's hidden
	// sub-command); empty for scripts.
	Args []string
}

// Env is what the host tells a runtime about the server it runs in. Each
// runtime uses what applies to it; zero values mean the runtime's defaults.
type Env struct {
	Log *slog.Logger
	// TickPeriod is the server's tick period.
	TickPeriod time.Duration
	// SHA256, if set, is the lowercase hex SHA-256 the executable must have
	// (a plugin's [modules.sha256] entry).
	SHA256 string
	// Plugin are the limits of a module that runs as its own process.
	Plugin PluginLimits
}

// PluginLimits bound a module that runs as its own process
// (docs/go-plugins.md). Zero values mean the runtime's defaults. How long
// the server waits for a plugin's answer to a tick is not among them: it
// is the tick's Deadline, the same budget a Lua module's work gets.
type PluginLimits struct {
	// HangTimeout is how long a call may go unanswered before the plugin
	// is killed as hung and restarted like a crash (seconds, not a tick: a
	// busy machine must not kill a working plugin).
	HangTimeout time.Duration
	// MemoryLimit is the plugin's memory cap in bytes: the resident size
	// of its process and the processes it started. Past it the plugin is
	// killed and restarted like a crash; its GOMEMLIMIT is set below it.
	MemoryLimit int64
	// LogLinesPerSecond and LogBurst bound the lines the plugin may log
	// (records, stdout and stderr together); the excess is dropped,
	// counted and summarised in one line a second.
	LogLinesPerSecond float64
	LogBurst          int
	// AnswerNextTick: the server never waits for the plugin's answer to a
	// tick; it applies it at the start of the next tick ([modules]
	// plugin_answers = "next_tick").
	AnswerNextTick bool
	// Nice is how much lower than the server's the plugin's CPU priority
	// is (a Unix nice increment, 0..19; [modules] plugin_nice): on a busy
	// machine the server's tick runs before the plugin's work.
	Nice int
}

// Factory makes an unstarted module of its kind; the manager calls it
// again for every reload and restart, then calls Load.
type Factory func(src Source, env Env) (Module, error)

var runtimes struct {
	sync.RWMutex
	byKind map[string]Factory
}

// RegisterRuntime makes kind's modules runnable. It panics on an empty
// kind, a nil factory or a kind registered twice: registration happens once,
// at program start, and a clash is a programming error.
func RegisterRuntime(kind string, f Factory) {
	if kind == "" || f == nil {
		panic("module: RegisterRuntime needs a kind and a factory")
	}
	runtimes.Lock()
	defer runtimes.Unlock()
	if runtimes.byKind == nil {
		runtimes.byKind = make(map[string]Factory)
	}
	if _, dup := runtimes.byKind[kind]; dup {
		panic(fmt.Sprintf("module: runtime %q registered twice", kind))
	}
	runtimes.byKind[kind] = f
}

// Runtime returns the factory registered for kind.
func Runtime(kind string) (Factory, bool) {
	runtimes.RLock()
	defer runtimes.RUnlock()
	f, ok := runtimes.byKind[kind]
	return f, ok
}

// Runtimes lists the registered kinds in order.
func Runtimes() []string {
	runtimes.RLock()
	defer runtimes.RUnlock()
	kinds := make([]string, 0, len(runtimes.byKind))
	for k := range runtimes.byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}
