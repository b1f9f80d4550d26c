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
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
)

// The game goroutine's work: jobs in the database lane and their answers,
// timers, the tick, and sending answers.

// alive reports whether s is still a connected session (a completion may
// arrive after its client left).
func (m *Module) alive(s *session) bool { return m.sessions[s.client.ID] == s }

// async runs work in the lane for session s, which is busy until the
// completion work returns has run on the game thread.
func (m *Module) async(s *session, work func(ctx context.Context) func()) {
	s.busy = true
	m.lane.push(func(ctx context.Context) func() {
		apply := work(ctx)
		return func() {
			s.busy = false
			apply()
		}
	})
}

// after runs f on the game thread once d has passed.
func (m *Module) after(d time.Duration, f func()) {
	m.timers = append(m.timers, timer{at: time.Now().Add(d), f: f})
}

func (m *Module) runTimers(now time.Time) {
	due := 0
	for _, t := range m.timers {
		if !now.Before(t.at) {
			due++
		}
	}
	if due == 0 {
		return
	}
	var run []func()
	keep := m.timers[:0]
	for _, t := range m.timers {
		if now.Before(t.at) {
			keep = append(keep, t)
		} else {
			run = append(run, t.f)
		}
	}
	clear(m.timers[len(keep):])
	m.timers = keep
	for _, f := range run {
		f()
	}
}

// OnTick handles the queued requests within a quarter of the tick (at
// least 2 ms, at most half the time left before the deadline; at least one
// request), so a burst of database writes (registrations, character
// creation) spreads over ticks instead of stretching one; then it advances
// the world, replicates and periodically saves.
//
// Database answers (completions) run first, then presence (other servers'
// logins, the lease), then due retries. A request of a session that has
// one in the lane waits, as do all requests while the lane is full.
func (m *Module) OnTick(t module.Tick) {
	start := time.Now()
	m.completions = m.lane.completions(m.completions)
	for i, f := range m.completions {
		f()
		m.completions[i] = nil
	}
	m.presenceTick(start)
	m.runTimers(start)
	budget := min(max(t.DT/4, 2*time.Millisecond), t.Deadline.Sub(start)/2)
	handled, stop := 0, false
	keep := m.queue[:0]
	for _, r := range m.queue {
		s := m.sessions[r.client.ID]
		if s == nil {
			continue // the client left while its request waited
		}
		// Once out of time or lane room, nothing more this tick: a later
		// request must not overtake an earlier one of the same session.
		stop = stop || handled > 0 && time.Since(start) >= budget || !m.lane.room()
		if stop || s.busy {
			keep = append(keep, r)
			continue
		}
		handled++
		m.handle(r.client, r.t, r.payload)
	}
	clear(m.queue[len(keep):])
	m.queue = keep
	if len(m.queue) == 0 {
		m.queue = nil // let the backing array go
	}
	m.h.SetMetric(metricInWorld, float64(len(m.players)))
	m.h.SetMetric(metricOnline, float64(len(m.online)))
	m.ticks++
	m.w.Step()
	if m.areas != nil {
		m.crossBorders(start)
		m.drainTick(start)
		m.coverTick(start)
	}
	// Every character is replicated at the replication rate, a share of
	// them each tick (by id), so that no tick carries everyone's updates.
	m.w.ReplicatePart(int(m.ticks%m.replEvery), int(m.replEvery), m.replicate)
	if m.ticks%m.saveEvery == 0 {
		m.saveAll()
	}
}

// send encodes and sends one message to a client.
func (m *Module) send(client uint32, msg mmoproto.Message) {
	m.buf = msg.Append(m.buf[:0])
	if err := m.h.Send(client, msg.Type(), m.buf); err != nil {
		m.h.Log().Warn("send", "type", mmoproto.Name(msg.Type()), "client", client, "err", err)
	}
}

// fail answers a request with an error Result.
func (m *Module) fail(client, id uint32, code mmoproto.Code, detail string) {
	m.send(client, &mmoproto.Result{RequestID: id, Code: code, Detail: detail})
}

func (m *Module) ok(client, id uint32) { m.fail(client, id, mmoproto.OK, "") }
