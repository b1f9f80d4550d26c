package lua

import (
	"context"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// budget is what the running call (a Step, a command, Load, save_state or
// on_reload) may spend. Its context is set on the LState once per call, not
// per Lua function called: gopher-lua checks ctx.Done() between
// instructions, and creating a context costs several times a short call.
// Go builtins are not interrupted by the context; the ones that can run long
// (pattern matching, sorting, the heap walk) poll expired() themselves, and
// the ones that allocate are bounded by their input and charge build().
type budget struct {
	ctx      context.Context // non-nil while a call runs
	cancel   context.CancelFunc
	deadline time.Time
	limit    time.Duration // for messages; 0 in a Step (the host chose the deadline)
	paused   time.Duration // time handed back for blocking host calls (hostCall)

	built      int64 // bytes of strings built by the budgeted builtins
	memory     bool  // the build allowance ran out: the fault is a memory fault
	overran    bool  // a builtin stopped at the deadline
	logLines   int
	logDropped int
}

// maxLogLinesPerCall bounds what one Step or command may log; the rest is
// dropped and counted.
const maxLogLinesPerCall = 100

func (m *Module) begin(deadline time.Time, limit time.Duration) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	m.budget = budget{ctx: ctx, cancel: cancel, deadline: deadline, limit: limit}
	m.L.SetContext(ctx)
}

func (m *Module) end() {
	if m.L != nil {
		m.L.RemoveContext()
	}
	m.budget.cancel()
	if n := m.budget.logDropped; n > 0 {
		m.logger().Warn("lua: log lines dropped", "module", m.name(), "dropped", n,
			"limit", maxLogLinesPerCall)
	}
	m.budget = budget{}
	if m.phase == phaseClosed {
		m.release() // Unload was called from inside the call (from Host.Fault, say)
	}
}

// hostCallGrace is how long a host service call may block before the time
// is handed back to the script's budget.
const hostCallGrace = 100 * time.Microsecond

// hostCall runs a host service call (send, broadcast, kick). Time spent
// blocked in it — a transport lock held by a network goroutine that the
// scheduler preempted, a slow syscall on a loaded machine — is not the
// script's: past hostCallGrace the deadlines move by that much, so load on
// the server does not turn an ordinary handler into a budget fault. (A new
// context is made only then; in the common case this costs two clock reads.)
func (m *Module) hostCall(call func() error) error {
	t0 := time.Now()
	err := call()
	if d := time.Since(t0); d > hostCallGrace && m.budget.ctx != nil {
		b := &m.budget
		b.deadline = b.deadline.Add(d)
		b.paused += d
		ctx, cancel := context.WithDeadline(context.Background(), b.deadline)
		m.L.SetContext(ctx)
		b.cancel()
		b.ctx, b.cancel = ctx, cancel
	}
	return err
}

// expired reports whether the running call's deadline has passed.
func (m *Module) expired() bool {
	d := m.budget.deadline
	return !d.IsZero() && !time.Now().Before(d)
}

// pollEvery is how many units of work a long-running builtin does between
// two looks at the clock.
const pollEvery = 1 << 12

// stopIfExpired raises the budget error from a builtin that ran into the
// deadline.
func (m *Module) stopIfExpired(L *lua.LState, fn string) {
	if m.expired() {
		m.budget.overran = true
		L.RaiseError("%s: stopped: the module's time budget ran out", fn)
	}
}

// build charges n bytes of string about to be built by fn; it raises an
// error when n is over MaxStringRep or when the call's allowance (HeapCap
// bytes) is spent.
func (m *Module) build(L *lua.LState, fn string, n int64) {
	if n > int64(m.cfg.MaxStringRep) {
		L.RaiseError("%s: result would be %d bytes, more than the limit of %d", fn, n, m.cfg.MaxStringRep)
	}
	m.budget.built += n
	if m.budget.built > m.cfg.HeapCap {
		m.budget.memory = true
		L.RaiseError("%s: the module built more than %d bytes of strings in one tick", fn, m.cfg.HeapCap)
	}
}

// site says what Lua code was running, for a Fault; formatted only when one
// happens.
type site struct {
	what string // "load", "on_tick", "on_message", "timer", "command", ...
	name string // command name
	id   int64  // message type, timer id
}

func (s site) String() string {
	switch {
	case s.name != "":
		return s.what + " " + s.name
	case s.what == "on_message":
		return s.what + "(" + strconv.FormatInt(s.id, 10) + ")"
	case s.what == "timer":
		return s.what + " " + strconv.FormatInt(s.id, 10)
	}
	return s.what
}

// call runs fn(args...) protected under the running budget and leaves nret
// results on the stack. A failure, or a success that ends past the
// deadline, is returned as a Fault (not yet reported).
func (m *Module) call(s site, fn *lua.LFunction, nret int, args ...lua.LValue) *Fault {
	L := m.L
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), nret, nil)
	if err != nil {
		return m.faultFrom(s, err)
	}
	if m.expired() {
		L.Pop(nret)
		return m.budgetFault(s, 0, "")
	}
	return nil
}
