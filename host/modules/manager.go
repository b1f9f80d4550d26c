package modules

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/internal/kvfile"
	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/internal/timerq"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Defaults of Config.
const (
	DefaultInboxCapacity     = 4096
	DefaultRoomInboxCapacity = 512
	DefaultMaxFaults         = 10
	DefaultFaultWindow       = time.Minute
	DefaultRestartBackoff    = time.Second
	DefaultRestartBackoffMax = 30 * time.Second
	DefaultMaxRestarts       = 5
	DefaultRestartWindow     = 10 * time.Minute
	// DefaultClientMessagesPerTick is [limits] module_messages_per_tick's
	// default.
	DefaultClientMessagesPerTick = 64
)

// Transport is what the manager needs of the network side; *netstack.Server
// implements it.
type Transport interface {
	Handle(t wire.MessageType, h netstack.Handler)
	Send(id uint32, t wire.MessageType, ch wire.Channel, payload []byte) error
	BroadcastExcept(except uint32, t wire.MessageType, ch wire.Channel, payload []byte) error
	Kick(id uint32, reason wire.DisconnectReason, detail string) error
	ClientStats(id uint32) (netstack.Stats, bool)
	ChannelBinding(id uint32) ([32]byte, bool)
	Registry() *wire.Registry
	Counters() *netstack.Counters
}

// Spec says how to create a module: where it comes from and a constructor
// (called again for every reload and restart).
type Spec struct {
	Source string // the path or name it was loaded by
	Kind   string // "lua", "plugin", "go"
	New    func() (module.Module, error)
}

// Config configures a Manager. Zero values mean the documented defaults.
type Config struct {
	Transport Transport
	Commands  *admin.Registry
	Log       *slog.Logger
	DataDir   string // module directories are DataDir/modules/NAME
	// InboxCapacity is each module's inbox size in events (0 = 4096).
	InboxCapacity int
	// RoomInboxCapacity is the inbox size of an instance that serves one
	// room of a server with a lobby (0 = 512): a room's few players need
	// less, and there are many rooms. An instance that serves many rooms
	// has InboxCapacity.
	RoomInboxCapacity int
	// ClientMessagesPerTick is how many messages of module types (and
	// ClientInputs, each counted once) one client may have copied into the
	// module inboxes per tick, all modules together; the rest are dropped
	// and counted (0 = 64; [limits] module_messages_per_tick).
	ClientMessagesPerTick int
	// Budget is how long a module's work may take per tick (Tick.Deadline).
	Budget time.Duration
	// MaxFaults in FaultWindow mark a module failed and unload it (0 = 10 per minute).
	MaxFaults   int
	FaultWindow time.Duration
	// Server and AddScore are the host's facts and scoreboard.
	Server   func() module.ServerInfo
	AddScore func(client uint32, score, kills, deaths int32)
	// Resolve turns a `module load` argument into a Spec.
	Resolve func(nameOrPath string) (Spec, error)
	// RestartBackoff is the wait, in tick time, before a crashed module (see
	// ErrCrashed) is started again (0 = 1s). It doubles after each crash or
	// failed start in a row, up to RestartBackoffMax (0 = 30s; never below
	// RestartBackoff), and resets once the module has run RestartBackoffMax
	// without crashing.
	RestartBackoff    time.Duration
	RestartBackoffMax time.Duration
	// MaxRestarts crashes (failed starts included) within RestartWindow mark
	// a module failed instead of restarting it; it stays failed until an
	// operator runs `module load` (0 = 5 within 10 minutes).
	MaxRestarts   int
	RestartWindow time.Duration
	// Notify, when set, receives one human-readable line for each crash,
	// restart and failure of a module, e.g. "module echo crashed: plugin
	// process exited: exit status 3; restarting in 1s". It is called on the
	// game thread and must not block; the manager logs the same events.
	Notify func(line string)
	// World is the entity world of the whole server's scope (room 0, where
	// Load runs modules unless SetDefaultRoom names a room); nil gives its
	// modules no entities (the entity API returns ErrNoWorld and a manifest
	// declaring entity types is refused). Rooms bring their own (Room).
	World *replicate.Replicator
	// Failed, when set, is told when a module fails for good (too many
	// faults or crashes) with the rooms it served, so that the host can
	// close them. Game thread; it must not call back into the manager.
	Failed func(name string, rooms []module.RoomID)
}

// Module states shown by `module list`.
const (
	StateRunning = "running"
	StateFailed  = "failed"
	// StateRestarting: the module crashed and is detached (no message types,
	// no commands, no events); the manager starts it again after a backoff.
	StateRestarting = "restarting"
)

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

// Manager loads modules and runs them on the game thread. All methods except
// the transport handlers it installs are for the game thread.
type Manager struct {
	cfg     Config
	reg     *wire.Registry
	mods    []*instance
	clients map[uint32]module.ClientInfo
	now     time.Time

	server *scope // the whole server (room 0)
	def    *scope // where Load runs modules: server, or a server's one room
	rooms  map[module.RoomID]*scope
	// where maps a client to its room (a scope that is not Everyone), for
	// the network goroutines; wide lists the scopes that hold every client.
	where  sync.Map
	wide   atomic.Pointer[[]*scope]
	owners map[string]*owner // message types and commands, by module name
	route  netstack.Handler  // routeMessage, made once
	// quota is the per-client limit on module messages per tick.
	quota    *messageQuota
	unrouted atomic.Uint64
}

// owner is what the instances of one module name hold together: its
// message types and console commands are registered once, by the first
// instance, and removed with the last.
type owner struct {
	users    int
	messages []wire.Schema
	commands bool
}

// NewManager returns an empty manager and registers the `module` admin command.
func NewManager(cfg Config) *Manager {
	if cfg.InboxCapacity <= 0 {
		cfg.InboxCapacity = DefaultInboxCapacity
	}
	if cfg.RoomInboxCapacity <= 0 {
		cfg.RoomInboxCapacity = DefaultRoomInboxCapacity
	}
	if cfg.MaxFaults <= 0 {
		cfg.MaxFaults = DefaultMaxFaults
	}
	if cfg.FaultWindow <= 0 {
		cfg.FaultWindow = DefaultFaultWindow
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = DefaultRestartBackoff
	}
	if cfg.RestartBackoffMax <= 0 {
		cfg.RestartBackoffMax = DefaultRestartBackoffMax
	}
	cfg.RestartBackoffMax = max(cfg.RestartBackoffMax, cfg.RestartBackoff)
	if cfg.MaxRestarts <= 0 {
		cfg.MaxRestarts = DefaultMaxRestarts
	}
	if cfg.RestartWindow <= 0 {
		cfg.RestartWindow = DefaultRestartWindow
	}
	if cfg.ClientMessagesPerTick <= 0 {
		cfg.ClientMessagesPerTick = DefaultClientMessagesPerTick
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Server == nil {
		cfg.Server = func() module.ServerInfo { return module.ServerInfo{} }
	}
	if cfg.AddScore == nil {
		cfg.AddScore = func(uint32, int32, int32, int32) {}
	}
	m := &Manager{cfg: cfg, reg: cfg.Transport.Registry(), clients: make(map[uint32]module.ClientInfo), now: time.Now(),
		quota: newMessageQuota(cfg.ClientMessagesPerTick), rooms: make(map[module.RoomID]*scope), owners: make(map[string]*owner)}
	m.route = m.routeMessage
	m.server = m.newScope(Room{World: cfg.World, Info: cfg.Server, AddScore: cfg.AddScore, Everyone: true})
	m.def = m.server
	m.refreshRoutes()
	if cfg.Commands != nil {
		m.registerAdmin()
	}
	cfg.Transport.Handle(gamemsg.TypeClientInput, m.receiveInput)
	return m
}

// Load creates, starts and registers a module in the default scope (the
// whole server, or the one room SetDefaultRoom named). A module whose
// message id another module owns fails to load with an error naming both.
// Loading a module that is failed or restarting starts it fresh in its
// place: its crash and restart counts start again from zero; its lifecycle
// history is kept. If the fresh start fails, the old entry stays as it was.
func (m *Manager) Load(spec Spec) (string, error) { return m.load(m.def, spec) }

// load starts spec's module for scope sc.
func (m *Manager) load(sc *scope, spec Spec) (string, error) {
	inst := m.newInstance(spec)
	if sc.ID != 0 && !sc.Everyone {
		inst.inbox = make(chan module.Event, m.cfg.RoomInboxCapacity)
	}
	a, err := inst.newAttachment(sc)
	if err != nil {
		return "", err
	}
	inst.rooms = []*attachment{a}
	mod, man, err := inst.start()
	if err != nil {
		a.release()
		return "", err
	}
	var prev *instance
	if pa := sc.find(man.Name); pa != nil {
		prev = pa.inst
	} else {
		prev = sc.neverStarted(spec.Source)
	}
	if prev != nil && prev.state != StateFailed && prev.state != StateRestarting {
		inst.unloadModule(mod)
		a.release()
		return "", fmt.Errorf("module %q is already loaded; use module reload %s", man.Name, man.Name)
	}
	inst.multi = man.Rooms
	if inst.multi && cap(inst.inbox) < m.cfg.InboxCapacity {
		inst.inbox = make(chan module.Event, m.cfg.InboxCapacity) // empty: no route leads to it yet
	}
	if prev != nil { // it takes the other rooms of a module that served many
		for _, pa := range prev.rooms {
			if pa.sc != sc {
				pa.inst, pa.host.inst = inst, inst
				inst.rooms = append(inst.rooms, pa)
			}
		}
	}
	if err := m.registerTypes(inst, man); err != nil {
		inst.unloadModule(mod)
		a.release()
		if prev != nil {
			for _, pa := range inst.rooms[1:] {
				pa.inst, pa.host.inst = prev, prev
			}
		}
		return "", err
	}
	inst.adopt(mod, man)
	if prev != nil { // replace it in place
		inst.history = prev.history
		for _, pa := range prev.rooms {
			if pa.sc == sc {
				pa.release()
				sc.atts = slices.DeleteFunc(sc.atts, func(x *attachment) bool { return x == pa })
			} else {
				i := slices.Index(pa.sc.atts, pa)
				pa.sc.atts[i] = pa // the same attachment, now inst's
			}
		}
		prev.rooms = nil
		m.mods[slices.Index(m.mods, prev)] = inst
	} else {
		m.mods = append(m.mods, inst)
	}
	sc.atts = append(sc.atts, a)
	m.refreshRoutes() // adopt ran before the instance was listed
	if err := m.registerCommands(inst); err != nil {
		m.unload(inst, StateFailed)
		inst.record("failed: " + err.Error())
		return "", err
	}
	inst.greetAll()
	inst.record("loaded")
	inst.log.Info("module loaded", "name", man.Name, "version", man.Version, "types", len(man.Messages), "hash", inst.hash, "room", sc.ID)
	return man.Name, nil
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

// receiveInput runs on a network goroutine for every ClientInput the
// transport validated (§9.1: ranges, finite floats, reserved bits): it
// copies it into the inbox of every subscribed module of the client's
// room, never blocking.
func (m *Manager) receiveInput(client uint32, _ *wire.Header, payload []byte) {
	var buf [4]inputTarget
	subs := m.inputSubscribers(client, buf[:0])
	if len(subs) == 0 {
		return
	}
	in, err := gamemsg.ParseClientInput(payload)
	if err != nil {
		return // unreachable: the transport validated it
	}
	if !m.quota.take(client) {
		for _, s := range subs {
			s.inst.overLimit.Add(1)
		}
		return
	}
	for _, s := range subs {
		ev := module.Event{Kind: module.EventInput, Room: s.room, Client: client, Input: in}
		select {
		case s.inst.inbox <- ev:
		default:
			s.inst.drops.Add(1)
			m.cfg.Transport.Counters().InboxDrops.Add(1)
		}
	}
}

// freshInput reports whether an input is newer than the last one delivered
// from its client (serial-number order, so sequences may wrap), and records
// it. ClientInput is unreliable: a late or duplicated datagram is stale.
func (inst *instance) freshInput(ev *module.Event) bool {
	if inst.lastInput == nil {
		inst.lastInput = make(map[uint32]uint32)
	}
	last, seen := inst.lastInput[ev.Client]
	if seen && int32(ev.Input.InputSeq-last) <= 0 {
		inst.staleInputs++
		return false
	}
	inst.lastInput[ev.Client] = ev.Input.InputSeq
	return true
}

// receive runs on a network goroutine: it only copies the validated message
// into the inbox, never blocking. A message over its client's quota for the
// tick, or one that finds the inbox full, is dropped and counted.
func (inst *instance) receive(room module.RoomID, client uint32, h *wire.Header, payload []byte) {
	if !inst.m.quota.take(client) {
		inst.overLimit.Add(1)
		return
	}
	ev := module.Event{Kind: module.EventMessage, Room: room, Client: client, Type: h.Type, Payload: append([]byte(nil), payload...)}
	select {
	case inst.inbox <- ev:
	default:
		inst.drops.Add(1)
		inst.m.cfg.Transport.Counters().InboxDrops.Add(1)
	}
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

// find returns the first instance named name.
func (m *Manager) find(name string) *instance {
	for _, inst := range m.mods {
		if inst.manifest.Name == name {
			return inst
		}
	}
	return nil
}

// named lists the instances named name, in load order.
func (m *Manager) named(name string) []*instance {
	var out []*instance
	for _, inst := range m.mods {
		if inst.manifest.Name == name {
			out = append(out, inst)
		}
	}
	return out
}

// ErrNoModule is returned for a module name that is not loaded.
var ErrNoModule = errors.New("no such module")

// Unload stops a module of the default scope and removes its message types
// and commands; a failed or restarting module is simply removed. A module
// that runs in rooms stops with them.
func (m *Manager) Unload(name string) error {
	a := m.def.find(name)
	if a == nil {
		if group := m.named(name); len(group) > 0 {
			return fmt.Errorf("module %s runs in rooms %v; it stops when they close (room close ID)", name, group[0].roomIDs())
		}
		return fmt.Errorf("%w %q; see module list", ErrNoModule, name)
	}
	m.remove(a.inst)
	return nil
}

// unload detaches a module; with state StateFailed or StateRestarting it
// stays listed. An instance already detached (no module) holds nothing: its
// former message ids may belong to another module by now, so they are left
// alone.
func (m *Manager) unload(inst *instance, state string) {
	if inst.mod != nil {
		m.releaseTypes(inst.manifest.Name)
		inst.unloadModule(inst.mod)
		// After Unload, which may still act on the module's entities.
		for _, a := range inst.rooms {
			a.clear()
		}
		inst.mod = nil
		m.refreshRoutes()
	}
	for len(inst.inbox) > 0 {
		<-inst.inbox
	}
	inst.timers.Clear()
	inst.pending, inst.late = nil, nil
	if state != "" {
		inst.state = state
	}
}

// UnloadAll unloads every module in reverse load order (shutdown).
func (m *Manager) UnloadAll() {
	for i := len(m.mods) - 1; i >= 0; i-- {
		if m.mods[i].mod != nil {
			m.unload(m.mods[i], "")
			m.mods[i].log.Info("module unloaded")
		}
		m.mods[i].abandonPreparation()
		m.mods[i].releaseAll()
	}
	m.mods = nil
	m.refreshRoutes()
}

// Step runs one tick of every running module: host events, then the inbox
// in arrival order, then departures and match events. First it restarts the
// crashed modules whose backoff has passed (t.Now is the clock); a module
// restarted this way runs its first Step in the same tick, starting with the
// EventAdmitted of every present client.
func (m *Manager) Step(t module.Tick, budget time.Duration) {
	m.now = t.Now
	m.quota.nextTick()
	m.restartDue()
	for _, inst := range m.mods {
		if inst.state != StateRunning {
			continue
		}
		inst.batch = append(inst.batch[:0], inst.pending...)
		inst.pending = inst.pending[:0]
		room := cap(inst.inbox) - inst.backlog()
	drain:
		for range max(room, 0) {
			select {
			case ev := <-inst.inbox:
				if ev.Kind == module.EventInput && !inst.freshInput(&ev) {
					continue
				}
				inst.batch = append(inst.batch, ev)
			default:
				break drain
			}
		}
		inst.batch = append(inst.batch, inst.late...)
		inst.late = inst.late[:0]
		mt := t
		mt.Deadline = time.Now().Add(budget)
		began := time.Now()
		inst.runTimers(t.Now)
		if inst.state != StateRunning || inst.mod == nil { // a timer's fault failed it
			clear(inst.batch)
			continue
		}
		err := inst.stepModule(mt)
		inst.tickTime += time.Since(began)
		clear(inst.batch) // drop payload references
		switch {
		case errors.Is(err, module.ErrCrashed):
			m.crash(inst, err)
			continue
		case errors.Is(err, ErrPanic):
			inst.fault(err)
		case err != nil:
			inst.fault(err)
			inst.failing = true
		}
		m.afterCall(inst)
	}
}

// afterCall unloads a module whose faults crossed the limit.
func (m *Manager) afterCall(inst *instance) {
	if !inst.failing || inst.state != StateRunning {
		return
	}
	inst.failing = false
	inst.log.Error("module failed and was unloaded; players stay connected; use module load to start it again",
		"faults", inst.totalFaults, "last_error", inst.lastErr)
	m.unload(inst, StateFailed)
	inst.record("failed: too many faults; last: " + inst.lastErr)
	m.notify(fmt.Sprintf("module %s failed after %d faults (last: %s); use module load %s to start it again",
		inst.manifest.Name, inst.totalFaults, inst.lastErr, inst.manifest.Name))
	m.failed(inst)
}

// failed tells the host a module failed for good, with its rooms.
func (m *Manager) failed(inst *instance) {
	m.abandonTypes(inst.manifest.Name)
	if m.cfg.Failed != nil {
		m.cfg.Failed(inst.manifest.Name, inst.roomIDs())
	}
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

// ClientAdmitted tells the modules of the whole server (and of a room that
// holds everyone) that a client was admitted (game thread).
func (m *Manager) ClientAdmitted(ci module.ClientInfo) {
	m.clients[ci.ID] = ci
	for _, sc := range *m.wide.Load() {
		for _, a := range sc.atts {
			if a.inst.state == StateRunning {
				a.inst.pending = append(a.inst.pending, module.Event{Kind: module.EventAdmitted, Room: sc.ID, Client: ci.ID, Name: ci.Name})
			}
		}
	}
}

// ClientLeft tells every module concerned that a client left: the modules
// of its room and those of the whole server (game thread).
func (m *Manager) ClientLeft(id uint32, reason wire.DisconnectReason) {
	leave := gamemsg.LeaveReasonFor(reason)
	if v, ok := m.where.Load(id); ok {
		m.LeaveRoom(id, v.(*scope).ID, leave, reason)
	}
	delete(m.clients, id)
	m.quota.keep(func(c uint32) bool { _, ok := m.clients[c]; return ok })
	for _, inst := range m.mods {
		delete(inst.lastInput, id)
	}
	for _, sc := range *m.wide.Load() {
		m.Announce(sc.ID, module.Event{Kind: module.EventLeft, Client: id, Reason: reason, Leave: leave})
	}
}

// MatchStart, MatchEnd and MapChange forward match events to the modules
// of the default scope (Announce does it for a room).
func (m *Manager) MatchStart(ms gamemsg.MatchStart) {
	m.Announce(m.def.ID, module.Event{Kind: module.EventMatchStart, Match: ms})
}

// MatchEnd forwards a MatchEnd.
func (m *Manager) MatchEnd(me gamemsg.MatchEnd) {
	m.Announce(m.def.ID, module.Event{Kind: module.EventMatchEnd, MatchEnd: me})
}

// MapChange forwards a map change.
func (m *Manager) MapChange(name string, index int) {
	m.Announce(m.def.ID, module.Event{Kind: module.EventMapChange, Map: name, MapIndex: index})
}

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
