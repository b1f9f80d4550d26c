package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/internal/kvfile"
	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/internal/timerq"
	"github.com/sparkhost/sparkhost/module"
)

// An instance: one loaded module, how it is made, started and adopted, and
// its faults.

// instance is one loaded module and its bookkeeping.
type instance struct {
	m        *Manager
	spec     Spec
	mod      module.Module
	manifest module.Manifest
	state    string
	hash     string
	log      *slog.Logger
	kv       *kvfile.Store
	timers   timerq.Queue   // Host.After/Every of this instance (game thread)
	metrics  *metricset.Set // Host.SetMetric/AddMetric of an in-process module
	// guardTimer is timerCall as a method value, made once.
	guardTimer func(fn func())

	// rooms are the scopes the instance serves, each with its entity ids
	// in the scope's world: one, unless multi (Manifest.Rooms).
	rooms []*attachment
	multi bool
	own   *moduleHost // the Host of Load: scoped to rooms[0] unless multi
	inbox chan module.Event
	drops atomic.Uint64
	// overLimit counts this module's messages dropped over their client's
	// per-tick quota.
	overLimit atomic.Uint64
	// lastInput is the newest ClientInput sequence delivered per client
	// (game thread): an older or repeated one is dropped as stale.
	lastInput   map[uint32]uint32
	staleInputs uint64
	pending     []module.Event // host events for the next Step (game thread only)
	late        []module.Event // departures and match events, delivered after the inbox
	batch       []module.Event

	faults      []time.Time
	totalFaults uint64
	panics      uint64 // recovered panics, counted in totalFaults too
	lastErr     string
	failing     bool

	crashes   []time.Time // crashes and failed starts within RestartWindow
	inARow    int         // crashes and failed starts since the backoff last reset
	restarts  uint64      // successful restarts since the module was loaded
	nextStart time.Time   // when a restarting module starts again
	// preparing carries the result of a restart being prepared off the
	// game thread (module.Preparer); nil when none is under way.
	preparing    chan prepared
	runningSince time.Time // tick time of the last (re)start
	history      []LifecycleEvent
	tickTime     time.Duration // wall time spent in the module's Step since it was loaded
	// neverRan: listed by Start after its start failed; it holds nothing
	// and its name is its source's (it has no manifest).
	neverRan bool
}

// newInstance returns an instance of spec, not started.
func (m *Manager) newInstance(spec Spec) *instance {
	inst := &instance{m: m, spec: spec, state: StateRunning, inbox: make(chan module.Event, m.cfg.InboxCapacity)}
	inst.log = m.cfg.Log.With("module", spec.Source)
	inst.guardTimer = inst.timerCall
	inst.own = &moduleHost{inst: inst}
	return inst
}

// start creates a fresh module and runs its Load. A panic in either is a
// failed start.
func (inst *instance) start() (module.Module, module.Manifest, error) {
	mod, err := inst.make()
	if err != nil {
		return nil, module.Manifest{}, err
	}
	return inst.loadMade(mod)
}

// make creates a fresh, unstarted module.
func (inst *instance) make() (module.Module, error) {
	mod, err := inst.newModule()
	if err == nil && mod == nil {
		err = errors.New("the runtime made no module")
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", inst.spec.Source, err)
	}
	return mod, nil
}

// loadMade runs a made (and perhaps prepared) module's Load and checks its
// manifest.
func (inst *instance) loadMade(mod module.Module) (module.Module, module.Manifest, error) {
	man, err := inst.loadModule(mod)
	if err != nil {
		inst.unloadModule(mod)
		return nil, module.Manifest{}, fmt.Errorf("module %s failed to load: %w", inst.spec.Source, err)
	}
	if man.Name == "" {
		inst.unloadModule(mod)
		return nil, module.Manifest{}, fmt.Errorf("module %s declares no name", inst.spec.Source)
	}
	if err := module.CheckMetrics(man.Metrics); err != nil {
		inst.unloadModule(mod)
		return nil, module.Manifest{}, fmt.Errorf("module %s: %w", man.Name, err)
	}
	return mod, man, nil
}

// adopt makes mod the instance's running module.
func (inst *instance) adopt(mod module.Module, man module.Manifest) {
	inst.mod, inst.manifest, inst.state = mod, man, StateRunning
	inst.runningSince, inst.nextStart = inst.m.now, time.Time{}
	inst.log = inst.m.cfg.Log.With("module", man.Name)
	inst.metrics, _ = metricset.New(man.Metrics) // start checked them
	inst.hash = inst.codeHash(mod)
	inst.m.refreshRoutes()
}

// releaseAll gives every entity id block of the instance back and takes
// it out of its scopes.
func (inst *instance) releaseAll() {
	for _, a := range inst.rooms {
		a.release()
		a.sc.atts = slices.DeleteFunc(a.sc.atts, func(x *attachment) bool { return x == a })
	}
	inst.rooms = nil
}

// greetAll queues, for every room the instance serves, what it learns of
// a room it starts serving (greet): it starts, restarts or reloads.
func (inst *instance) greetAll() {
	for _, a := range inst.rooms {
		inst.greet(a)
	}
}

// roomIDs lists the rooms the instance serves.
func (inst *instance) roomIDs() []module.RoomID {
	ids := make([]module.RoomID, 0, len(inst.rooms))
	for _, a := range inst.rooms {
		ids = append(ids, a.sc.ID)
	}
	return ids
}

func (inst *instance) command(name string, args []string) (string, error) {
	if inst.state != StateRunning || inst.mod == nil {
		return "", fmt.Errorf("module %s is %s", inst.manifest.Name, inst.state)
	}
	out, err := inst.commandModule(name, args)
	if errors.Is(err, ErrPanic) {
		inst.fault(err)
		inst.m.afterCall(inst)
		return "", fmt.Errorf("module %s: %w", inst.manifest.Name, err)
	}
	if errors.Is(err, module.ErrCrashed) {
		next := inst.m.crash(inst, err)
		return "", &crashError{fmt.Sprintf("module %s crashed: %s; %s", inst.manifest.Name, crashReason(err), next), err}
	}
	inst.m.afterCall(inst)
	return out, err
}

// forgetFaults starts the fault record again (a successful reload).
func (inst *instance) forgetFaults() {
	inst.faults = inst.faults[:0]
	inst.totalFaults, inst.panics, inst.lastErr, inst.failing = 0, 0, "", false
}

// fault counts one fault and marks the module failing past the limit.
func (inst *instance) fault(err error) {
	now := inst.m.now
	inst.totalFaults++
	inst.lastErr = err.Error()
	inst.log.Warn("module fault", "err", err)
	window := inst.m.cfg.FaultWindow
	inst.faults = slices.DeleteFunc(append(inst.faults, now), func(t time.Time) bool { return now.Sub(t) > window })
	if len(inst.faults) >= inst.m.cfg.MaxFaults {
		inst.failing = true
	}
}
