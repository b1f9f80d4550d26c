package supervisor

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Reload loads a fresh copy of a module, in every room it runs in; if that
// fails, the old one keeps running and the error says why. State travels
// through StateCarrier. A restarting module is restarted now, as if its
// backoff had passed (a failure counts as a failed restart).
func (m *Manager) Reload(name string) error {
	group := m.named(name)
	if len(group) == 0 {
		return fmt.Errorf("%w %q; see module list", ErrNoModule, name)
	}
	var errs []error
	swapped := false
	for _, inst := range group {
		var err error
		if inst.neverRan { // nothing to reload: start it (Start listed it)
			_, err = m.load(inst.rooms[0].sc, inst.spec)
		} else if inst.state == StateRestarting {
			err = m.restart(inst)
		} else if err = m.reloadOne(inst, name, !swapped); err == nil {
			swapped = true
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reloadOne reloads one instance. The first of a name to reload (swap)
// replaces the name's message types and commands with the new code's; the
// others must declare the same.
func (m *Manager) reloadOne(inst *instance, name string, swap bool) error {
	attached := inst.mod != nil
	mod, man, err := inst.start()
	if err != nil {
		return fmt.Errorf("%w; the old version keeps running", err)
	}
	if man.Name != name {
		inst.unloadModule(mod)
		return fmt.Errorf("reload %s: the new code declares module %q; the old version keeps running", name, man.Name)
	}
	if man.Rooms != inst.multi && len(inst.rooms) > 1 {
		inst.unloadModule(mod)
		return fmt.Errorf("reload %s: the new code changes whether one instance serves many rooms; close its rooms first; the old version keeps running", name)
	}
	o := m.owners[name]
	if swap {
		var old []wire.Schema
		if o != nil {
			old = o.messages
			m.reg.UnregisterOwner(name)
		}
		restore := func() {
			if old == nil {
				return
			}
			if rerr := m.registerMessages(module.Manifest{Name: name, Messages: old}); rerr != nil {
				inst.log.Error("could not restore the old message types after a failed reload", "err", rerr)
			}
		}
		if err := m.registerMessages(man); err != nil {
			inst.unloadModule(mod)
			restore()
			return m.reloadFailed(err, attached)
		}
		if err := inst.setTypesAll(man); err != nil {
			inst.unloadModule(mod)
			m.reg.UnregisterOwner(name)
			restore()
			return m.reloadFailed(err, attached)
		}
		for _, s := range old {
			if !slices.ContainsFunc(man.Messages, func(n wire.Schema) bool { return n.ID == s.ID }) {
				m.cfg.Transport.Handle(s.ID, nil)
			}
		}
		for _, s := range man.Messages {
			m.cfg.Transport.Handle(s.ID, m.route)
		}
		if o == nil {
			o = &owner{}
			m.owners[name] = o
		}
		o.messages = slices.Clone(man.Messages)
		if m.cfg.Commands != nil {
			m.cfg.Commands.UnregisterOwner(name)
		}
		o.commands = false
	} else {
		if o == nil || !slices.EqualFunc(o.messages, man.Messages, wire.Schema.Equal) {
			inst.unloadModule(mod)
			return fmt.Errorf("reload %s: this instance's new code declares other message types than the others'; the old version keeps running", name)
		}
		if err := inst.setTypesAll(man); err != nil {
			inst.unloadModule(mod)
			return m.reloadFailed(err, attached)
		}
	}
	if !attached {
		o.users++
	}
	var state []byte
	var haveState bool
	if oc, ok := inst.mod.(module.StateCarrier); ok && inst.state == StateRunning {
		if st, err := inst.saveState(oc); err != nil {
			inst.log.Warn("save_state failed; reloading without state", "err", err)
		} else {
			state, haveState = st, true
		}
	}
	if inst.mod != nil {
		inst.unloadModule(inst.mod)
	}
	inst.timers.Clear() // the old code's timers
	inst.multi = man.Rooms
	inst.adopt(mod, man)
	inst.forgetFaults() // the new code starts with a clean record
	if err := m.registerCommands(inst); err != nil {
		inst.log.Warn("reload: command registration", "err", err)
	}
	if nc, ok := mod.(module.StateCarrier); ok && haveState {
		if err := inst.restoreState(nc, state); err != nil {
			inst.fault(fmt.Errorf("on_reload: %w", err))
		}
	}
	inst.pending = inst.pending[:0]
	inst.greetAll()
	inst.record("reloaded")
	inst.log.Info("module reloaded", "version", man.Version, "hash", inst.hash)
	return nil
}

func (m *Manager) reloadFailed(err error, attached bool) error {
	if !attached {
		return err
	}
	return fmt.Errorf("%w; the old version keeps running", err)
}

// setTypesAll registers the manifest's entity types in every room the
// instance serves.
func (inst *instance) setTypesAll(man module.Manifest) error {
	for _, a := range inst.rooms {
		if err := a.setTypes(man); err != nil {
			return err
		}
	}
	return nil
}
