package supervisor

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

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
	drain  drainState // drain.go
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
	cfg.populate()
	m := &Manager{cfg: cfg, reg: cfg.Transport.Registry(), clients: make(map[uint32]module.ClientInfo), now: time.Now(),
		quota: newMessageQuota(cfg.ClientMessagesPerTick), rooms: make(map[module.RoomID]*scope), owners: make(map[string]*owner)}
	m.route = m.routeMessage
	m.server = m.newScope(RoomSpec{World: cfg.World, Info: cfg.Server, AddScore: cfg.AddScore, Everyone: true})
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
