// Package mmo is the MMO session gate: accounts with SCRAM-SHA-256 logins
// bound to the sealed session, characters owned by accounts, one shared area
// with server-timed movement, interest-managed position updates and nearby
// greetings, all persisted in SQLite or in a PostgreSQL database that several
// servers share as one world (docs/scaling.md). It runs as a Go plugin
// (built into the sparkhost binary: `sparkhost run --module mmo`);
// docs/mmo.md is the wire contract.
//
// Every handler runs on the module's game goroutine, from the batch of
// events the server sends each tick; the transport connection grants
// nothing: each request is checked against the session's authenticated
// account and the character it plays (docs/mmo.md §9). The game goroutine
// never waits for the database: database work goes to the lane (dblane.go)
// and its answers come back as completions at the next tick; a session has
// at most one request in the lane, so its requests keep their order.
package mmo

import (
	"context"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
	"github.com/sparkhost/sparkhost/modules/mmo/world"
)

// Replication (docs/mmo.md §1.1, §8): each observer's step in the form
// its protocol reads, and saving positions.

// replicate sends one observer a replication step: as WorldUpdate to a
// client of mmo protocol 2, as Appear, Positions and Disappear to one of
// protocol 1 (docs/mmo.md §1.1).
func (m *Module) replicate(d *world.Delta) {
	s := m.players[d.Observer]
	if s == nil {
		return
	}
	u := &m.repl // reused for every observer: send encodes at once
	u.Tick = uint32(m.w.Tick())
	send := func() { m.send(s.client.ID, u) }
	if s.speaks < 2 {
		send = func() { m.sendTrio(s.client.ID, u) }
	}
	splitUpdate(u, d, send)
	clear(u.Appear[:cap(u.Appear)]) // drop the names
}

// sendTrio sends a WorldUpdate's lists the protocol 1 way: an Appear, a
// Positions and a Disappear, each only when its list has entries, in that
// order (the order WorldUpdate applies them in).
func (m *Module) sendTrio(client uint32, u *mmoproto.WorldUpdate) {
	if len(u.Appear) > 0 {
		m.send(client, &mmoproto.Appear{Tick: u.Tick, Entries: u.Appear})
	}
	if len(u.Positions) > 0 {
		m.send(client, &mmoproto.Positions{Tick: u.Tick, Entries: u.Positions})
	}
	if len(u.Disappear) > 0 {
		m.send(client, &mmoproto.Disappear{Tick: u.Tick, IDs: u.Disappear})
	}
}

// splitUpdate fills u with d's lists — in the common case all of them, one
// message — calling send for each message as it is full and for the last:
// a step that would pass mmoproto.RecommendedMaxPayload goes in several
// messages, in list order (appearances, positions, departures), each
// entry whole. A message always takes at least one entry; an empty step
// sends nothing.
func splitUpdate(u *mmoproto.WorldUpdate, d *world.Delta, send func()) {
	reset := func() { u.Appear, u.Positions, u.Disappear = u.Appear[:0], u.Positions[:0], u.Disappear[:0] }
	reset()
	size := mmoproto.WorldUpdateHeader
	room := func(n int) { // makes room for an entry of n bytes
		if size+n > mmoproto.RecommendedMaxPayload && size > mmoproto.WorldUpdateHeader {
			send()
			reset()
			size = mmoproto.WorldUpdateHeader
		}
		size += n
	}
	for _, a := range d.Appear {
		room(mmoproto.AppearanceSize(a.Name))
		u.Appear = append(u.Appear, mmoproto.Appearance{ID: uint32(a.ID), X: float32(a.X), Y: float32(a.Y), Name: a.Name})
	}
	for _, p := range d.Update {
		room(mmoproto.PositionEntrySize)
		u.Positions = append(u.Positions, mmoproto.Position{ID: uint32(p.ID), X: float32(p.X), Y: float32(p.Y)})
	}
	for _, id := range d.Disappear {
		room(mmoproto.DisappearEntrySize)
		u.Disappear = append(u.Disappear, uint32(id))
	}
	if size > mmoproto.WorldUpdateHeader {
		send()
	}
}

// positions returns every character's position in the world.
func (m *Module) positions() []store.Position {
	batch := make([]store.Position, 0, len(m.players))
	m.w.Each(func(sn world.Snapshot) { batch = append(batch, store.Position{Name: sn.Name, X: sn.X, Y: sn.Y}) })
	return batch
}

// saveAll writes every character's position in one transaction (one save
// in the lane at a time; a tick that finds one there skips).
func (m *Module) saveAll() {
	if len(m.players) == 0 || m.saving {
		return
	}
	m.saving = true
	batch, server := m.positions(), m.pres.id
	m.lane.push(func(ctx context.Context) func() {
		_, err := m.db.SaveClaimed(ctx, server, batch)
		return func() {
			m.saving = false
			if err != nil {
				m.h.Log().Error("saving positions", "err", err)
			}
		}
	})
}
