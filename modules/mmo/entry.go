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
	"errors"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
	"github.com/sparkhost/sparkhost/modules/mmo/world"
)

// Entering the world (docs/mmo.md §8): the claim of a character across
// servers, leaving, and greetings.

func (m *Module) enter(s *session, r *mmoproto.Enter) {
	switch s.state {
	case inWorld:
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyInWorld, "leave first")
		return
	case loggedIn:
	default:
		m.fail(s.client.ID, r.RequestID, mmoproto.NotLoggedIn, "log in first")
		return
	}
	m.claim(s, r.RequestID, r.Name, time.Now().Add(min(m.pres.lease+time.Second, maxEnterWait)))
}

// claim claims the character for the session's login in the database, and
// enters it into the world once claimed. While another live server plays
// the character (it is leaving there, or that server died and its lease
// runs), the claim is retried every enterRetry until deadline.
func (m *Module) claim(s *session, id uint32, name string, deadline time.Time) {
	account, token, server := s.account, s.token, m.pres.id
	m.async(s, func(ctx context.Context) func() {
		ch, err := m.db.ClaimCharacter(ctx, server, account, token, name)
		return func() {
			if !m.alive(s) || s.state != loggedIn || s.account != account || s.token != token {
				if err == nil {
					m.releaseCharacter(store.Position{Name: ch.Name, X: ch.X, Y: ch.Y}, false)
				}
				return
			}
			var busy *store.BusyError
			switch {
			case errors.As(err, &busy) && time.Now().Before(deadline):
				s.busy = true // the session's next requests wait for this one
				m.after(enterRetry, func() {
					s.busy = false
					if m.alive(s) {
						m.claim(s, id, name, deadline)
					}
				})
				return
			case busy != nil:
				m.fail(s.client.ID, id, mmoproto.AlreadyInWorld, "the character is in the world on another server; try again in a few seconds")
				return
			case errors.Is(err, store.ErrLoginLost):
				m.fail(s.client.ID, id, mmoproto.NotLoggedIn, "your account logged in elsewhere")
				return
			case err != nil:
				m.storeError(s, id, err)
				return
			}
			m.enterClaimed(s, id, ch)
		}
	})
}

// enterClaimed puts a claimed character into the world.
func (m *Module) enterClaimed(s *session, reqID uint32, ch store.Character) {
	id, err := m.w.Enter(ch.Name, ch.X, ch.Y)
	if err != nil {
		code := mmoproto.Internal
		if errors.Is(err, world.ErrAlreadyInWorld) {
			code = mmoproto.AlreadyInWorld
		} else {
			m.releaseCharacter(store.Position{Name: ch.Name, X: ch.X, Y: ch.Y}, false)
		}
		m.h.Log().Info("mmo: a claimed character could not enter the world", "client", s.client.ID, "character", ch.Name, "code", code.String(), "err", err)
		m.fail(s.client.ID, reqID, code, err.Error())
		return
	}
	s.state, s.char, s.wid = inWorld, ch.Name, id
	m.players[id] = s
	c := m.w.Config()
	sn, _ := m.w.Get(id)
	m.send(s.client.ID, &mmoproto.Entered{
		RequestID: reqID, ID: uint32(id), X: float32(sn.X), Y: float32(sn.Y),
		Width: float32(c.Width), Height: float32(c.Height), Speed: float32(c.Speed),
		InterestRadius: float32(c.InterestRadius), GreetRadius: float32(c.GreetRadius), Name: ch.Name,
	})
}

// releaseCharacter gives the character back in the database, saving p's
// position first if save is set.
func (m *Module) releaseCharacter(p store.Position, save bool) {
	server := m.pres.id
	m.lane.push(func(ctx context.Context) func() {
		if err := m.db.ReleaseCharacter(ctx, server, p, save); err != nil {
			m.h.Log().Error("mmo: saving a position", "character", p.Name, "err", err)
		}
		return nil
	})
}

// leaveWorld takes a session's character out of the world and saves where
// it was (the lane writes it before any later claim of the character here).
func (m *Module) leaveWorld(s *session) {
	if sn, err := m.w.Leave(s.wid); err == nil {
		m.releaseCharacter(store.Position{Name: sn.Name, X: sn.X, Y: sn.Y}, true)
	}
	delete(m.players, s.wid)
	s.state, s.char, s.wid = loggedIn, "", 0
}

func (m *Module) greet(s *session, r *mmoproto.Greet) {
	if !m.needWorld(s, r.RequestID) {
		return
	}
	g, aud, err := m.w.Greet(s.wid, r.Target, m.audience[:0])
	m.audience = aud
	if err != nil {
		code := mmoproto.BadRequest
		switch {
		case errors.Is(err, world.ErrUnknownTarget):
			code = mmoproto.TargetNotInWorld
		case errors.Is(err, world.ErrSelf):
			code = mmoproto.GreetSelf
		case errors.Is(err, world.ErrTooFar):
			code = mmoproto.TooFar
		}
		m.fail(s.client.ID, r.RequestID, code, "")
		return
	}
	m.ok(s.client.ID, r.RequestID)
	msg := &mmoproto.Greeting{FromID: uint32(g.From), ToID: uint32(g.To), FromName: g.FromName, ToName: g.ToName}
	for _, id := range aud {
		p := m.players[id]
		if p == nil {
			continue
		}
		// An observer sees the greeter (and the greeted) appear before the
		// greeting: one that was not told of them yet (they came near since
		// the last replication step) is sent their appearance first, on the
		// same ordered channel.
		if m.revealed = m.w.Reveal(id, m.revealed[:0], g.From, g.To); len(m.revealed) > 0 {
			m.replicate(&world.Delta{Observer: id, Appear: m.revealed})
			clear(m.revealed)
		}
		m.send(p.client.ID, msg)
	}
}
