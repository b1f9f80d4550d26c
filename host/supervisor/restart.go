package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// Crash isolation. A runtime reports a dead instance (its process exited,
// panicked, hung or outgrew its memory cap) by returning an error that wraps
// ErrCrashed from Step, Command or Load. The manager then detaches the
// instance at once — message handlers, schemas and commands removed, queued
// events dropped, Unload called so the runtime can reap what is left — and
// marks it StateRestarting. Players stay connected; a message of the
// module's types arriving meanwhile is refused by the transport as unknown.
//
// Restarts follow a backoff measured on the tick clock (Tick.Now, never the
// wall clock, so tests run in virtual time): RestartBackoff after the first
// crash, doubled after each further crash or failed start in a row, capped
// at RestartBackoffMax. The run of crashes ends, and the backoff resets,
// once the module has run RestartBackoffMax without crashing. The
// MaxRestarts-th crash (or failed start) within RestartWindow marks the
// module StateFailed instead; it stays failed until an operator runs
// `module load`, which starts it fresh and forgets its crashes.

// LifecycleEvent is one entry of a module's history, shown by `module info`:
// "loaded", "reloaded", "crashed: ERR", "restarted (attempt N)", "restart
// failed: ERR", "failed: too many crashes (5 in 10m0s); use module load".
type LifecycleEvent struct {
	Time time.Time // tick clock (Tick.Now of the tick it happened in)
	What string
}

// historySize is how many LifecycleEvents a module keeps.
const historySize = 16

// record appends a lifecycle event, keeping the last historySize.
func (inst *instance) record(what string) {
	inst.history = append(inst.history, LifecycleEvent{Time: inst.m.now, What: what})
	if over := len(inst.history) - historySize; over > 0 {
		inst.history = slices.Delete(inst.history, 0, over)
	}
}

func (m *Manager) notify(line string) {
	if m.cfg.Notify != nil {
		m.cfg.Notify(line)
	}
}

// crash detaches an instance whose runtime reported ErrCrashed and either
// schedules its restart or marks it failed. It returns what happens next, for
// the caller's message: "restarting in 1s" or the failure.
func (m *Manager) crash(inst *instance, err error) string {
	name := inst.manifest.Name
	// A run of crashes ends once the module has run long enough.
	if m.now.Sub(inst.runningSince) >= m.cfg.RestartBackoffMax {
		inst.inARow = 0
	}
	m.unload(inst, StateRestarting)
	inst.failing = false
	reason := crashReason(err)
	inst.lastErr = reason
	inst.record("crashed: " + reason)
	var next string
	if delay, failure := m.setback(inst); failure != "" {
		next = failure
		inst.log.Error("module crashed too often and is failed; players stay connected; use module load to start it again",
			"name", name, "err", err, "crashes", len(inst.crashes), "window", m.cfg.RestartWindow)
	} else {
		next = "restarting in " + delay.String()
		inst.log.Error("module crashed; players stay connected; "+next, "name", name, "err", err)
	}
	m.notify(fmt.Sprintf("module %s crashed: %s; %s", name, reason, next))
	return next
}

// crashReason is a crash error's text without ErrCrashed's own words, which
// the surrounding "crashed:" already says, however the runtime wrapped it.
func crashReason(err error) string {
	s := err.Error()
	if s == module.ErrCrashed.Error() {
		return s
	}
	s = strings.TrimSuffix(s, ": "+module.ErrCrashed.Error())
	return strings.TrimPrefix(s, module.ErrCrashed.Error()+": ")
}

// crashError is what a command that crashed its module returns: an operator's
// sentence that still matches errors.Is(err, ErrCrashed).
type crashError struct {
	msg string
	err error
}

func (e *crashError) Error() string { return e.msg }
func (e *crashError) Unwrap() error { return e.err }

// setback counts a crash or failed start of a detached instance. It either
// schedules the next start and returns the delay, or, at MaxRestarts within
// RestartWindow, marks the module failed and returns a sentence saying so.
func (m *Manager) setback(inst *instance) (delay time.Duration, failure string) {
	now, window := m.now, m.cfg.RestartWindow
	inst.crashes = slices.DeleteFunc(append(inst.crashes, now), func(t time.Time) bool { return now.Sub(t) >= window })
	if len(inst.crashes) >= m.cfg.MaxRestarts {
		inst.state, inst.nextStart = StateFailed, time.Time{}
		what := fmt.Sprintf("failed: too many crashes (%d in %s); use module load", len(inst.crashes), window)
		inst.record(what)
		m.failed(inst)
		return 0, what + " " + inst.manifest.Name + " to start it again"
	}
	delay = m.backoff(inst.inARow)
	inst.inARow++
	inst.state, inst.nextStart = StateRestarting, now.Add(delay)
	return delay, ""
}

// backoff is the wait before the restart that follows n earlier crashes or
// failed starts in a row: RestartBackoff doubled n times, at most
// RestartBackoffMax.
func (m *Manager) backoff(n int) time.Duration {
	d := m.cfg.RestartBackoff
	for range n {
		if d >= m.cfg.RestartBackoffMax {
			break
		}
		d *= 2
	}
	return min(d, m.cfg.RestartBackoffMax)
}

// restartDue restarts every restarting module whose backoff has passed. A
// module whose start is slow (module.Preparer: a plugin process to launch)
// is prepared off the game thread and attached at the first tick after it
// is ready, so that a plugin that hangs while starting never stalls the
// server; the others start at once.
func (m *Manager) restartDue() {
	for _, inst := range m.mods {
		switch {
		case inst.state != StateRestarting:
		case inst.preparing != nil:
			select {
			case p := <-inst.preparing:
				inst.preparing = nil
				if p.stack != nil {
					inst.panics++
					inst.log.Debug("module panic", "where", "Prepare", "err", p.err, "stack", string(p.stack))
				}
				m.finishRestart(inst, p.mod, p.err) // logged and announced either way
			default:
			}
		case !m.now.Before(inst.nextStart):
			m.beginRestart(inst)
		}
	}
}

// prepared is the result of a background Prepare.
type prepared struct {
	mod   module.Module
	err   error
	stack []byte // of a panic in Prepare
}

// beginRestart makes a fresh module and, if it is a Preparer, starts its
// preparation in the background; otherwise it restarts it at once.
func (m *Manager) beginRestart(inst *instance) {
	mod, err := inst.make()
	p, slow := mod.(module.Preparer)
	if err != nil || !slow {
		m.finishRestart(inst, mod, err)
		return
	}
	info := inst.own.StartInfo()
	ch := make(chan prepared, 1)
	inst.preparing = ch
	inst.log.Info("module restarting in the background", "name", inst.manifest.Name)
	go func() {
		stack, err := prepare(p, info)
		ch <- prepared{mod: mod, err: err, stack: stack}
	}()
}

// abandonPreparation lets a background preparation finish on its own and
// stops what it started (the instance is going away).
func (inst *instance) abandonPreparation() {
	ch := inst.preparing
	if ch == nil {
		return
	}
	inst.preparing = nil
	go func() {
		if p := <-ch; p.mod != nil {
			unloadAbandoned(p.mod)
		}
	}()
}

// restart starts a fresh instance of a restarting module now (on the game
// thread) and attaches it as Load would.
func (m *Manager) restart(inst *instance) error {
	inst.abandonPreparation()
	mod, err := inst.make()
	return m.finishRestart(inst, mod, err)
}

// finishRestart loads a made (perhaps prepared) module of a restarting
// instance and attaches it; made is the error of making or preparing it. A
// failure of any kind counts as a crash for the backoff and the window; the
// error says what happens next.
func (m *Manager) finishRestart(inst *instance, mod module.Module, made error) error {
	name, attempt := inst.manifest.Name, inst.inARow
	err := made
	if err != nil && mod != nil {
		inst.unloadModule(mod)
	}
	if err == nil {
		err = m.reattach(inst, mod)
	}
	if err != nil {
		reason := crashReason(err)
		inst.lastErr = reason
		inst.record("restart failed: " + reason)
		var next string
		if delay, failure := m.setback(inst); failure != "" {
			next = failure
			inst.log.Error("module restart failed and the module is failed; players stay connected; use module load to start it again",
				"name", name, "attempt", attempt, "err", err, "crashes", len(inst.crashes), "window", m.cfg.RestartWindow)
		} else {
			next = "retrying in " + delay.String()
			inst.log.Error("module restart failed; players stay connected; "+next, "name", name, "attempt", attempt, "err", err)
		}
		m.notify(fmt.Sprintf("module %s restart failed: %s; %s", name, reason, next))
		return fmt.Errorf("%w; %s", err, next)
	}
	inst.restarts++
	what := fmt.Sprintf("restarted (attempt %d)", attempt)
	inst.record(what)
	inst.log.Info("module restarted", "name", name, "attempt", attempt, "version", inst.manifest.Version, "hash", inst.hash)
	m.notify("module " + name + " " + what)
	return nil
}

// reattach starts the module again and attaches it (schemas, handlers,
// commands, a greeting for every present client), or leaves it detached and
// says why. The new code must declare the same module name.
func (m *Manager) reattach(inst *instance, made module.Module) error {
	mod, man, err := inst.loadMade(made)
	if err != nil {
		return err
	}
	if man.Name != inst.manifest.Name {
		inst.unloadModule(mod)
		return fmt.Errorf("module %s: the new code declares module %q", inst.manifest.Name, man.Name)
	}
	if !man.Rooms && len(inst.rooms) > 1 {
		inst.unloadModule(mod)
		return fmt.Errorf("module %s: the new code no longer serves many rooms", inst.manifest.Name)
	}
	if err := m.registerTypes(inst, man); err != nil {
		inst.unloadModule(mod)
		return err
	}
	inst.multi = man.Rooms
	inst.adopt(mod, man)
	if err := m.registerCommands(inst); err != nil {
		m.unload(inst, StateRestarting)
		return err
	}
	inst.greetAll()
	return nil
}
