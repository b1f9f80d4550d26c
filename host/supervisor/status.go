package supervisor

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// What `module list`, `module info`, the metrics and the status page read.

// Module states shown by `module list`.
const (
	StateRunning = "running"
	StateFailed  = "failed"
	// StateRestarting: the module crashed and is detached (no message types,
	// no commands, no events); the manager starts it again after a backoff.
	StateRestarting = "restarting"
)

// Status describes a module for `module list` and `module info`.
type Status struct {
	Name, Version, Source, Kind, State, Hash, LastError string
	Types                                               []wire.MessageType
	InboxDepth, InboxCapacity                           int
	InboxDrops, Faults                                  uint64
	// OverLimit counts the module's messages dropped because their client
	// was over its per-tick quota (Config.ClientMessagesPerTick).
	OverLimit uint64
	// Messages are the declarations of Types (`module info` names them).
	Messages []wire.Schema
	// Panics counts the recovered panics among Faults.
	Panics uint64
	// Runtime are the runtime's own figures (module.Reporter): a plugin's
	// late answers, resident memory, dropped log lines.
	Runtime module.RuntimeStats
	// StaleInputs counts the ClientInputs dropped because a newer one of
	// the same client had been delivered already.
	StaleInputs uint64
	// TickTime is the wall time spent in the module's Step since it was
	// loaded; Metrics are what it reports (MetricsSource), if anything.
	TickTime time.Duration
	Metrics  []module.MetricValue
	// Restarts counts the successful restarts after crashes since the
	// module was (last) loaded.
	Restarts uint64
	// NextRestart is when a restarting module starts again (tick clock);
	// zero in any other state.
	NextRestart time.Time
	// Events are the module's last lifecycle events, oldest first.
	Events []LifecycleEvent
	// PID is the process of a module that runs in its own (a Go plugin;
	// attach a debugger to it), 0 otherwise.
	PID int
	// Rooms are the rooms the instance serves (none: the whole server, or
	// the one room of a one-match server); MultiRoom says one instance
	// serves them all (Manifest.Rooms).
	Rooms     []module.RoomID
	MultiRoom bool
}

// Modules lists the loaded (and failed) module instances in load order: one
// per room for a module that runs an instance in each.
func (m *Manager) Modules() []Status {
	out := make([]Status, 0, len(m.mods))
	for _, inst := range m.mods {
		out = append(out, inst.status())
	}
	return out
}

// status describes one instance.
func (inst *instance) status() Status {
	st := Status{
		Name: inst.manifest.Name, Version: inst.manifest.Version, Source: inst.spec.Source, Kind: inst.spec.Kind,
		State: inst.state, Hash: inst.hash, LastError: inst.lastErr,
		InboxDepth: len(inst.inbox), InboxCapacity: cap(inst.inbox),
		InboxDrops: inst.drops.Load(), Faults: inst.totalFaults, StaleInputs: inst.staleInputs,
		OverLimit: inst.overLimit.Load(), Panics: inst.panics,
		Restarts: inst.restarts, NextRestart: inst.nextStart, Events: slices.Clone(inst.history),
		TickTime: inst.tickTime, MultiRoom: inst.multi,
	}
	for _, a := range inst.rooms {
		if a.sc.ID != 0 && !a.sc.Everyone { // the one room of a one-match server is the whole server
			st.Rooms = append(st.Rooms, a.sc.ID)
		}
	}
	if inst.mod != nil {
		st.PID, st.Runtime, st.Metrics = inst.pid(), inst.runtimeStats(), inst.metricValues()
	}
	for _, s := range inst.manifest.Messages {
		st.Types = append(st.Types, s.ID)
	}
	st.Messages = slices.Clone(inst.manifest.Messages)
	return st
}

// MessagesOverLimit counts, server-wide, the module messages dropped because
// their client was over its per-tick quota; safe from any goroutine.
func (m *Manager) MessagesOverLimit() uint64 { return m.quota.over.Load() }

// moduleDir is the module's private directory (kv store, module data).
func (m *Manager) moduleDir(name string) string {
	return filepath.Join(m.cfg.DataDir, "modules", name)
}
