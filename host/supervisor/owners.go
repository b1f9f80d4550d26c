package supervisor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The instances of one module name — one per room, or one for many, or
// one for the whole server — share their message types and console
// commands: the first to start registers them, the last to go removes
// them, and a module's command runs in the instance its first argument
// @ROOM names.

// registerTypes takes the manifest's message schemas (registered by the
// first instance of the module's name; the others must declare the same)
// and registers its entity types in every room the instance serves, all
// or none. Registering the entity types destroys the instance's entities
// (a reload replaces them).
func (m *Manager) registerTypes(inst *instance, man module.Manifest) error {
	if err := m.acquireMessages(man); err != nil {
		return err
	}
	for _, a := range inst.rooms {
		if err := a.setTypes(man); err != nil {
			m.releaseTypes(man.Name)
			return err
		}
	}
	return nil
}

// acquireMessages registers a manifest's message schemas, all or none, for
// the first instance of its name; a later one must declare the same.
func (m *Manager) acquireMessages(man module.Manifest) error {
	if o := m.owners[man.Name]; o != nil {
		if !slices.EqualFunc(o.messages, man.Messages, wire.Schema.Equal) {
			return fmt.Errorf("module %s: another instance (in another room) runs with other message types; reload it everywhere with module reload %s", man.Name, man.Name)
		}
		o.users++
		return nil
	}
	if err := m.registerMessages(man); err != nil {
		return err
	}
	for _, s := range man.Messages {
		m.cfg.Transport.Handle(s.ID, m.route)
	}
	m.owners[man.Name] = &owner{users: 1, messages: slices.Clone(man.Messages)}
	return nil
}

// releaseTypes gives up an instance's hold on its name's message types and
// commands; the last one removes them.
func (m *Manager) releaseTypes(name string) {
	o := m.owners[name]
	if o == nil {
		return
	}
	if o.users--; o.users > 0 {
		return
	}
	delete(m.owners, name)
	for _, s := range o.messages {
		m.cfg.Transport.Handle(s.ID, nil)
	}
	m.reg.UnregisterOwner(name)
	if m.cfg.Commands != nil {
		m.cfg.Commands.UnregisterOwner(name)
	}
}

// registerMessages registers all of a manifest's message schemas or none.
// Its protocol version (docs/protocol.md §10.4) is declared with them.
func (m *Manager) registerMessages(man module.Manifest) error {
	newest, oldest := man.Protocols()
	p := wire.ModuleProtocol{Protocol: newest, Oldest: oldest}
	if err := wire.CheckProtocol(p); err != nil {
		return fmt.Errorf("module %s declares protocol %d with oldest %d: %w", man.Name, newest, oldest, err)
	}
	for _, s := range man.Messages {
		if err := m.reg.Register(man.Name, s); err != nil {
			m.reg.UnregisterOwner(man.Name)
			return fmt.Errorf("module %s: %w", man.Name, err)
		}
	}
	if err := m.reg.SetProtocol(man.Name, p); err != nil {
		m.reg.UnregisterOwner(man.Name)
		return fmt.Errorf("module %s: %w", man.Name, err)
	}
	return nil
}

// registerCommands registers the module's console commands, once for all
// the instances of its name.
func (m *Manager) registerCommands(inst *instance) error {
	name := inst.manifest.Name
	o := m.owners[name]
	if m.cfg.Commands == nil || o == nil || o.commands {
		return nil
	}
	for _, c := range inst.manifest.Commands {
		cmd := c.Name
		err := m.cfg.Commands.Register(admin.Command{
			Name: cmd, Usage: c.Usage, Help: c.Help, Owner: name,
			Run: func(args []string) (string, error) { return m.command(name, cmd, args) },
		})
		if err != nil {
			m.cfg.Commands.UnregisterOwner(name)
			return fmt.Errorf("module %s: %w", name, err)
		}
	}
	o.commands = true
	return nil
}

// command runs a module's console command in one of its instances: the
// one of room N for a first argument "@N" (a module that serves many rooms
// gets the "@N" too, and picks the room itself), else the only one, else
// the one of the default scope.
func (m *Manager) command(name, cmd string, args []string) (string, error) {
	group := m.named(name)
	if len(args) > 0 && strings.HasPrefix(args[0], "@") {
		n, err := strconv.ParseUint(args[0][1:], 10, 32)
		if err != nil {
			return "", fmt.Errorf("%s: %q is not a room; write @ROOM, e.g. @3", cmd, args[0])
		}
		for _, inst := range group {
			if slices.Contains(inst.roomIDs(), module.RoomID(n)) {
				if !inst.multi {
					args = args[1:]
				}
				return inst.command(cmd, args)
			}
		}
		return "", fmt.Errorf("module %s does not run in room %d", name, n)
	}
	if len(group) == 1 {
		return group[0].command(cmd, args)
	}
	if a := m.def.find(name); a != nil {
		return a.inst.command(cmd, args)
	}
	var rooms []string
	for _, inst := range group {
		for _, id := range inst.roomIDs() {
			rooms = append(rooms, strconv.FormatUint(uint64(id), 10))
		}
	}
	return "", fmt.Errorf("module %s runs in rooms %s; name one: %s @ROOM", name, strings.Join(rooms, ", "), cmd)
}
