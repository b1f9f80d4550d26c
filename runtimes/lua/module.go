package lua

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Defaults of Config and the fixed limits of the runtime.
const (
	DefaultHeapCap           = 16 << 20
	DefaultCommandBudget     = 50 * time.Millisecond
	DefaultCallStackSize     = 200
	DefaultRegistryMaxSize   = 64 << 10
	DefaultMaxStringRep      = 1 << 20
	DefaultMaxPatternSubject = 256 << 10

	// defaultStepBudget is used when a Tick carries neither Deadline nor DT.
	defaultStepBudget = 4 * time.Millisecond
	// minStepBudget is the least a Step gets even when the host hands it a
	// deadline already (nearly) past: a late tick is the host's lateness,
	// not a fault of the module.
	minStepBudget = time.Millisecond
	// maxSourceBytes bounds a script file: compiling is Go code the deadline
	// cannot interrupt.
	maxSourceBytes = 1 << 20
	// registryInitial is the Lua data stack a state starts with, in slots.
	registryInitial = 1024
	// registryGrowStep is how many slots the data stack grows by at once.
	registryGrowStep = 4096
)

// Config tunes one Lua module. The zero value of every field means its
// documented default.
type Config struct {
	// HeapCap in bytes bounds the module's estimated Lua heap (measured
	// between ticks, see heap.go) and the bytes of strings the module may
	// build in one Step or one command; 0 means 16 MiB.
	HeapCap int64
	// CommandBudget bounds the Lua work done outside Step: one console
	// command, the file's top level at Load, save_state and on_reload;
	// 0 means 50 ms.
	CommandBudget time.Duration
	// CallStackSize in Lua call frames (deeper recursion is an error);
	// 0 means 200.
	CallStackSize int
	// RegistryMaxSize in value slots of the Lua data stack (unpack of a huge
	// table, string.byte of a long string fail past it); 0 means 65,536.
	RegistryMaxSize int
	// MaxStringRep in bytes is the longest string string.rep — and every
	// other builtin that builds strings: `..`, table.concat, string.format,
	// string.gsub, string.upper/lower/reverse — may produce; 0 means 1 MiB.
	MaxStringRep int
	// MaxPatternSubject in bytes is the longest subject string.find, match,
	// gmatch and gsub accept (patterns are at most 4 KiB, and matching also
	// stops at the deadline); 0 means 256 KiB.
	MaxPatternSubject int
	// Seed seeds the module's math.random; 0 means a random seed.
	Seed uint64
}

func (c *Config) populate() error {
	if c.HeapCap < 0 || c.CommandBudget < 0 || c.CallStackSize < 0 || c.RegistryMaxSize < 0 ||
		c.MaxStringRep < 0 || c.MaxPatternSubject < 0 {
		return fmt.Errorf("lua: invalid config %+v: limits must not be negative (0 means the default)", *c)
	}
	if c.HeapCap == 0 {
		c.HeapCap = DefaultHeapCap
	}
	if c.CommandBudget == 0 {
		c.CommandBudget = DefaultCommandBudget
	}
	if c.CallStackSize == 0 {
		c.CallStackSize = DefaultCallStackSize
	}
	if c.RegistryMaxSize == 0 {
		c.RegistryMaxSize = DefaultRegistryMaxSize
	}
	if c.RegistryMaxSize < registryInitial {
		c.RegistryMaxSize = registryInitial
	}
	if c.MaxStringRep == 0 {
		c.MaxStringRep = DefaultMaxStringRep
	}
	if c.MaxPatternSubject == 0 {
		c.MaxPatternSubject = DefaultMaxPatternSubject
	}
	return nil
}

// Errors of the runtime; a Fault wraps ErrScript, ErrBudget or ErrHeapCap.
var (
	ErrScript         = errors.New("lua: script error")
	ErrBudget         = errors.New("lua: time budget exceeded")
	ErrHeapCap        = errors.New("lua: memory cap exceeded")
	ErrNotLoaded      = errors.New("lua: module is not loaded (or already unloaded)")
	ErrUnknownCommand = errors.New("lua: unknown command")
)

// The life of a Module: New → Load (loading, then running) → Unload (closed).
type phase uint8

const (
	phaseNew phase = iota
	phaseLoading
	phaseRunning
	phaseClosed
)

// Module is one Lua script behind the module.Module contract. Every method
// but CodeHash must be called on the game thread, never concurrently.
type Module struct {
	backlog     []module.Event // events deferred by a tick that ran out of time
	backlogHead int            // backlog[:backlogHead] are consumed

	path   string
	chunk  string // the chunk name in messages and tracebacks: the file's base name
	stem   string // the module's name until spark.module names it
	source []byte
	hash   string
	cfg    Config

	L     *lua.LState
	host  module.Host
	phase phase

	manifest module.Manifest
	schemas  map[wire.MessageType]wire.Schema
	handlers map[wire.MessageType]*lua.LFunction
	commands map[string]*lua.LFunction
	hooks    [numHooks]*lua.LFunction

	entityTypes map[uint16]*entityType
	entities    map[uint32]uint16 // live entities the module spawned: their types
	inputHook   *lua.LFunction

	timers timerQueue
	clock  time.Duration // module time: the sum of the DT of its Steps
	tick   uint64

	budget budget
	rng    *mrand.Rand
	heap   heapMeter

	readerMeta, writerMeta *lua.LTable
}

var (
	_ module.Module       = (*Module)(nil)
	_ module.StateCarrier = (*Module)(nil)
)

// New reads the script at path; Load compiles and runs it. The source is
// kept for CodeHash.
func New(path string, cfg Config) (*Module, error) {
	if err := cfg.populate(); err != nil {
		return nil, err
	}
	src, err := readSource(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	base := filepath.Base(path)
	m := &Module{
		path:   path,
		chunk:  base,
		stem:   strings.TrimSuffix(base, filepath.Ext(base)),
		source: src,
		hash:   hex.EncodeToString(sum[:]),
		cfg:    cfg,
	}
	seed := cfg.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	m.rng = mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return m, nil
}

func readSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lua: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lua: reading %s: %w", path, err)
	}
	if len(src) > maxSourceBytes {
		return nil, fmt.Errorf("lua: %s is larger than %d bytes; split the module", path, maxSourceBytes)
	}
	return src, nil
}

// CodeHash returns the hex SHA-256 of the script's source as read by New.
func (m *Module) CodeHash() string { return m.hash }

// Path returns the script's path as given to New.
func (m *Module) Path() string { return m.path }

// name is the module's name for messages: spark.module's, or the file stem
// before the script has declared it.
func (m *Module) name() string {
	if m.manifest.Name != "" {
		return m.manifest.Name
	}
	return m.stem
}

// Load compiles the script and runs its top level under CommandBudget. The
// top level is the only place where spark.module, spark.message and
// spark.command may be called; the Manifest is built from those calls. A
// failed Load releases everything: the module may be dropped or Loaded
// again.
func (m *Module) Load(h module.Host) (module.Manifest, error) {
	if m.phase != phaseNew {
		return module.Manifest{}, fmt.Errorf("lua: module %s: Load called twice", m.name())
	}
	proto, err := compileShared(m.source, m.chunk, m.hash)
	if err != nil {
		return module.Manifest{}, &Fault{Module: m.name(), File: m.chunk, Line: syntaxLine(err),
			Where: "load", Err: ErrScript, Message: err.Error()}
	}
	m.host = h
	m.schemas = make(map[wire.MessageType]wire.Schema)
	m.handlers = make(map[wire.MessageType]*lua.LFunction)
	m.commands = make(map[string]*lua.LFunction)
	m.entityTypes = make(map[uint16]*entityType)
	m.entities = make(map[uint32]uint16)
	m.L = lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   m.cfg.CallStackSize,
		RegistrySize:    registryInitial,
		RegistryMaxSize: m.cfg.RegistryMaxSize,
		// gopher-lua copies the whole stack at each growth step: the
		// default step of 32 slots makes growing to the cap quadratic.
		RegistryGrowStep: registryGrowStep,
	})
	m.phase = phaseLoading
	m.openSandbox()
	m.openSpark()

	fn := m.L.NewFunctionFromProto(proto)
	m.begin(time.Now().Add(m.cfg.CommandBudget), m.cfg.CommandBudget)
	f := m.call(site{what: "load"}, fn, 0, m.concatFunction())
	m.end()
	if f == nil && m.manifest.Name == "" {
		f = &Fault{Module: m.name(), File: m.chunk, Where: "load", Err: ErrScript,
			Message: `the script never called spark.module{name = "...", version = "..."}; declare the module at the top of the file`}
	}
	if f == nil {
		if est, over := m.heap.measureAll(m); over {
			f = m.heapFault("load", est)
		}
	}
	if f != nil {
		m.release()
		m.phase = phaseNew
		return module.Manifest{}, f
	}
	m.phase = phaseRunning
	return m.manifestCopy(), nil
}

func (m *Module) manifestCopy() module.Manifest {
	man := m.manifest
	man.Messages = append([]wire.Schema(nil), m.manifest.Messages...)
	man.Commands = append([]module.CommandSpec(nil), m.manifest.Commands...)
	man.EntityTypes = append([]module.EntityType(nil), m.manifest.EntityTypes...)
	return man
}

// logger is the module's logger as the host gives it now: asked each time,
// because the host tags it with the module's name only once the manifest
// is known (a logger kept from Load would tag every line with the path).
func (m *Module) logger() *slog.Logger {
	if m.host != nil {
		if l := m.host.Log(); l != nil {
			return l
		}
	}
	return discardLog
}

var discardLog = slog.New(slog.DiscardHandler)

// Step delivers the events in order, then runs the due timers, then the
// on_tick hook, all under one deadline (Tick.Deadline; if zero, a quarter
// of Tick.DT). A fault is reported through Host.Fault and the Step goes on
// with the next handler; when the deadline passes, the rest of the tick's
// Lua work is skipped (its events are dropped, due timers wait for the next
// Step) and one budget fault is reported. Step returns an error only when
// the module is not loaded.
func (m *Module) Step(t module.Tick, events []module.Event) error {
	if m.phase != phaseRunning {
		return ErrNotLoaded
	}
	// Two deadlines: no event starts after the soft one (the tick's budget);
	// the hard one, a budget later, interrupts a handler still running. A
	// handler that started in time is not punished for the load before it.
	soft := m.stepDeadline(t)
	m.begin(soft.Add(max(soft.Sub(time.Now()), minHardGrace)), 0)
	defer m.end()
	m.clock += t.DT
	m.tick = t.Number

	// Events left over from a tick that ran out of time come first. An event
	// is never started after the deadline (but at least one runs per Step, so
	// the module always progresses): the rest wait for the next tick — an
	// accepted message is delivered late, not lost. Only a handler that the
	// hard deadline interrupts loses its event, and that is a fault. The
	// manager reads Backlog and takes no more from the inbox than fits, so a
	// module that cannot keep up fills its bounded inbox, where the network
	// side drops and counts.
	started := false
	for m.backlogHead < len(m.backlog) {
		if started && time.Now().After(soft.Add(m.budget.paused)) {
			m.keep(events)
			return nil
		}
		started = true
		ev := &m.backlog[m.backlogHead]
		m.backlogHead++
		stop := m.deliver(ev)
		*ev = module.Event{} // release the payload
		if stop {
			m.keep(events)
			return nil
		}
	}
	m.backlog, m.backlogHead = m.backlog[:0], 0
	for i := range events {
		if started && time.Now().After(soft.Add(m.budget.paused)) {
			m.keep(events[i:])
			return nil
		}
		started = true
		if m.deliver(&events[i]) {
			m.keep(events[i+1:])
			return nil
		}
	}
	if m.runTimers() {
		return nil
	}
	if fn := m.hooks[hookTick]; fn != nil {
		if m.run(site{what: "on_tick"}, fn, lua.LNumber(t.DT.Seconds()), lua.LNumber(t.Number)) {
			return nil
		}
	}
	if m.phase == phaseRunning {
		m.heap.stepSlice(m)
	}
	return nil
}

func (m *Module) stepDeadline(t module.Tick) time.Time {
	now := time.Now()
	d := t.Deadline
	if d.IsZero() {
		b := t.DT / 4
		if b <= 0 {
			b = defaultStepBudget
		}
		d = now.Add(b)
	}
	if floor := now.Add(minStepBudget); d.Before(floor) {
		d = floor
	}
	return d
}

// keep queues events for the next Step. The queue is compacted when its
// consumed head passes half of it, so each event is copied O(1) times.
func (m *Module) keep(rest []module.Event) {
	if m.phase != phaseRunning || len(rest) == 0 {
		return
	}
	if m.backlogHead > len(m.backlog)/2 {
		n := copy(m.backlog, m.backlog[m.backlogHead:])
		clear(m.backlog[n:])
		m.backlog, m.backlogHead = m.backlog[:n], 0
	}
	m.backlog = append(m.backlog, rest...)
	if over := m.Backlog() - maxBacklog; over > 0 {
		m.skipped(over, "event")
		clear(m.backlog[m.backlogHead : m.backlogHead+over])
		m.backlogHead += over
	}
}

// Backlog reports how many events wait for the next Step; the manager takes
// no more from the module's inbox than its capacity minus this.
func (m *Module) Backlog() int { return len(m.backlog) - m.backlogHead }

// maxBacklog bounds the events a module carries from one tick to the next
// (a safety net: the manager keeps the backlog within the inbox capacity).
const maxBacklog = 1 << 16

// minHardGrace is the least time a handler that started before the soft
// deadline gets to finish: scheduler and GC pauses on a busy machine must not
// turn an ordinary handler into a fault at high tick rates.
const minHardGrace = 20 * time.Millisecond

func (m *Module) skipped(n int, what string) {
	if n > 0 {
		m.logger().Warn("lua: work skipped after the module ran out of time", "module", m.name(),
			"skipped", n, "kind", what)
	}
}

// run calls fn protected under the running budget and reports a fault. It
// returns true when the caller must stop: the budget is gone, or the module
// was unloaded while it ran.
func (m *Module) run(s site, fn *lua.LFunction, args ...lua.LValue) (stop bool) {
	if f := m.call(s, fn, 0, args...); f != nil {
		m.host.Fault(f)
		return errors.Is(f, ErrBudget) || m.phase == phaseClosed
	}
	return m.phase == phaseClosed
}

// Command runs one of the module's console commands under CommandBudget.
// The command's function gets the arguments as strings and returns the text
// for the operator. A script error is returned (the operator sees it) but is
// not a fault; running out of time or memory is both.
func (m *Module) Command(name string, args []string) (string, error) {
	if m.phase != phaseRunning {
		return "", ErrNotLoaded
	}
	fn, ok := m.commands[name]
	if !ok {
		return "", fmt.Errorf("%w %q in module %s", ErrUnknownCommand, name, m.name())
	}
	m.begin(time.Now().Add(m.cfg.CommandBudget), m.cfg.CommandBudget)
	defer m.end()
	largs := make([]lua.LValue, len(args))
	for i, a := range args {
		largs[i] = lua.LString(a)
	}
	if f := m.call(site{what: "command", name: name}, fn, 1, largs...); f != nil {
		if !errors.Is(f, ErrScript) {
			m.host.Fault(f)
		}
		return "", f
	}
	ret := m.L.Get(-1)
	m.L.Pop(1)
	switch v := ret.(type) {
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		return v.String(), nil
	case *lua.LNilType:
		return "", nil
	case lua.LBool:
		return v.String(), nil
	}
	return "", fmt.Errorf("%w: module %s: command %s returned a %s; return a string", ErrScript,
		m.name(), name, ret.Type())
}

// Unload stops the module: the Lua state is closed and every reference it
// held is dropped. Unload is idempotent.
//
// Unload may be called from inside a call of the module — from Host.Fault,
// when the manager decides the module has faulted once too often: the
// running Step or command then stops at its next handler and the state is
// closed when it returns.
func (m *Module) Unload() error {
	if m.phase == phaseClosed {
		return nil
	}
	m.phase = phaseClosed
	if m.budget.ctx == nil {
		m.release()
	}
	return nil
}

func (m *Module) release() {
	if m.L != nil {
		m.L.Close()
	}
	m.L = nil
	m.handlers, m.commands, m.schemas = nil, nil, nil
	m.entityTypes, m.entities, m.inputHook = nil, nil, nil
	m.hooks = [numHooks]*lua.LFunction{}
	m.timers = timerQueue{}
	m.clock, m.tick = 0, 0
	m.heap = heapMeter{}
	m.readerMeta, m.writerMeta = nil, nil
	m.manifest = module.Manifest{}
}
