package supervisor

import (
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// What the game thread and the network side tell the instances: messages
// and inputs into their inboxes, admissions and departures, the match.

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

// ClientResumed tells the modules of its room and of the whole server that
// a client came back to its seat on a new connection (game thread): it
// was never reported left.
func (m *Manager) ClientResumed(ci module.ClientInfo) {
	if known, ok := m.clients[ci.ID]; ok {
		known.Addr = ci.Addr
		ci = known
	}
	m.clients[ci.ID] = ci
	ev := module.Event{Kind: module.EventResumed, Client: ci.ID, Name: ci.Name}
	var told *scope
	if v, ok := m.where.Load(ci.ID); ok {
		told = v.(*scope)
		m.Announce(told.ID, ev)
	}
	for _, sc := range *m.wide.Load() {
		if sc != told {
			m.Announce(sc.ID, ev)
		}
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
