package supervisor

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// Every call into a module goes through one of the wrappers below: its
// Factory, Load, Step, Command, Unload, SaveState and RestoreState, its
// capabilities (Backlog, CodeHash, Pid, RuntimeStats) and the callbacks of
// the timers it set with Host.After and Host.Every. A panic in any of them
// — in the module's code, in its runtime's adapter, or in a host service it
// called — is recovered, counted as a fault of the module (and a panic),
// logged with its value at Warn and its stack at Debug; the server goes on.
// A module that panics on every tick reaches MaxFaults and is failed like
// any other faulting module.

// ErrPanic marks the fault a recovered panic becomes; errors.Is matches it.
var ErrPanic = errors.New("module panicked")

// panicError is a recovered panic: where it happened and its value.
type panicError struct {
	where string
	value any
}

func (e *panicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.where, e.value) }
func (e *panicError) Unwrap() error { return ErrPanic }

// recovered turns the value of a recovered panic into an error and counts
// it; the stack goes to Debug. It must be called from the deferred function
// that called recover.
func (inst *instance) recovered(where string, v any) error {
	inst.panics++
	err := &panicError{where: where, value: v}
	inst.log.Debug("module panic", "where", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return err
}

// catch is deferred by the wrappers that return an error: a panic becomes
// that error.
func (inst *instance) catch(where string, err *error) {
	if v := recover(); v != nil {
		*err = inst.recovered(where, v)
	}
}

// newModule runs the spec's constructor (the runtime's Factory).
func (inst *instance) newModule() (mod module.Module, err error) {
	defer inst.catch("the module's factory", &err)
	return inst.spec.New()
}

// prepare runs a Preparer off the game thread: it touches nothing of the
// instance, so a panic is returned as a panicError with its stack, counted
// by the game thread when it takes the result.
func prepare(p module.Preparer, info module.StartInfo) (stack []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack, err = debug.Stack(), &panicError{where: "Prepare", value: v}
		}
	}()
	return nil, p.Prepare(info)
}

// unloadAbandoned unloads a module no instance holds any more, off the game
// thread; a panic is swallowed (there is nobody left to fault).
func unloadAbandoned(mod module.Module) {
	defer func() { _ = recover() }()
	_ = mod.Unload()
}

func (inst *instance) loadModule(mod module.Module) (man module.Manifest, err error) {
	defer inst.catch("Load", &err)
	return mod.Load(inst.own)
}

func (inst *instance) stepModule(t module.Tick) (err error) {
	defer inst.catch("Step", &err)
	return inst.mod.Step(t, inst.batch)
}

// commandModule runs a console command; a panic is a fault and the
// command's error.
func (inst *instance) commandModule(name string, args []string) (out string, err error) {
	defer inst.catch("command "+name, &err)
	return inst.mod.Command(name, args)
}

// unloadModule runs a module's Unload; an error is logged, a panic is a
// fault. Either way the module is gone.
func (inst *instance) unloadModule(mod module.Module) {
	var err error
	func() {
		defer inst.catch("Unload", &err)
		err = mod.Unload()
	}()
	switch {
	case errors.Is(err, ErrPanic):
		inst.fault(err)
	case err != nil:
		inst.log.Warn("module unload", "err", err)
	}
}

func (inst *instance) saveState(sc module.StateCarrier) (state []byte, err error) {
	defer inst.catch("SaveState", &err)
	return sc.SaveState()
}

func (inst *instance) restoreState(sc module.StateCarrier, state []byte) (err error) {
	defer inst.catch("RestoreState", &err)
	return sc.RestoreState(state)
}

// backlog is how many events the module holds past a tick (Backlogger); 0
// for a module without the capability. A panic counts as a fault and as
// no backlog.
func (inst *instance) backlog() (n int) {
	b, ok := inst.mod.(module.Backlogger)
	if !ok {
		return 0
	}
	defer func() {
		if v := recover(); v != nil {
			inst.fault(inst.recovered("Backlog", v))
			n = 0
		}
	}()
	return max(b.Backlog(), 0)
}

// codeHash, pid and runtimeStats read optional capabilities; a panic
// counts as a fault and as the zero value.
func (inst *instance) codeHash(mod module.Module) (hash string) {
	h, ok := mod.(module.CodeHasher)
	if !ok {
		return ""
	}
	defer inst.catchValue("CodeHash")
	return h.CodeHash()
}

func (inst *instance) pid() (pid int) {
	p, ok := inst.mod.(module.Process)
	if !ok {
		return 0
	}
	defer inst.catchValue("Pid")
	return p.Pid()
}

func (inst *instance) runtimeStats() (st module.RuntimeStats) {
	r, ok := inst.mod.(module.Reporter)
	if !ok {
		return module.RuntimeStats{}
	}
	defer inst.catchValue("RuntimeStats")
	return r.RuntimeStats()
}

func (inst *instance) metricValues() (vals []module.MetricValue) {
	if ms, ok := inst.mod.(module.MetricsSource); ok {
		defer inst.catchValue("Metrics")
		return ms.Metrics()
	}
	if inst.metrics != nil {
		return inst.metrics.Values()
	}
	return nil
}

// catchValue is deferred by the wrappers that return a plain value: the
// panic is a fault and the function returns its zero value.
func (inst *instance) catchValue(where string) {
	if v := recover(); v != nil {
		inst.fault(inst.recovered(where, v))
	}
}

// runTimers runs the module's due Host.After/Every callbacks, each under
// its own recover: a panicking timer is a fault, the others still run.
func (inst *instance) runTimers(now time.Time) {
	inst.timers.Run(now, inst.guardTimer)
}

// timerCall wraps one timer callback. The instance keeps it as a method
// value (guardTimer), made once, so running timers allocates nothing.
func (inst *instance) timerCall(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			inst.fault(inst.recovered("a timer callback", v))
		}
	}()
	fn()
}
