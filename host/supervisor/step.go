package supervisor

import (
	"errors"
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// The tick: every instance's turn within its budget, and what a call that
// went wrong does to it.

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
