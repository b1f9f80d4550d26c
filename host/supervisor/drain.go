package supervisor

import (
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// drainState is the server's drain as its modules see it: Host.Server's
// Draining and DrainDeadline (game thread).
type drainState struct {
	on       bool
	deadline time.Time
}

// SetDraining tells every running module instance, of the whole server
// and of each room, that the server began draining (on) or called the
// drain off, with an EventDrain, and makes Host.Server say so from now on
// (game thread).
func (m *Manager) SetDraining(on bool, deadline time.Time) {
	if !on {
		deadline = time.Time{}
	}
	m.drain = drainState{on: on, deadline: deadline}
	ev := module.Event{Kind: module.EventDrain, Draining: on, DrainDeadline: deadline}
	m.Announce(m.server.ID, ev)
	for _, sc := range m.rooms {
		m.Announce(sc.ID, ev)
	}
}

// withDrain adds the drain to a module's facts.
func (m *Manager) withDrain(si module.ServerInfo) module.ServerInfo {
	si.Draining, si.DrainDeadline = m.drain.on, m.drain.deadline
	return si
}
