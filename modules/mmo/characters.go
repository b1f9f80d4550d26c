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
	"strings"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
)

// Characters (docs/mmo.md §3): list, create, delete.

func (m *Module) listCharacters(s *session, id uint32) {
	if !m.needLogin(s, id) {
		return
	}
	account := s.account
	m.async(s, func(ctx context.Context) func() {
		chars, err := m.db.Characters(ctx, account)
		return func() {
			if !m.alive(s) {
				return
			}
			if err != nil {
				m.storeError(s, id, err)
				return
			}
			out := &mmoproto.CharacterList{RequestID: id}
			for _, c := range chars {
				out.Characters = append(out.Characters, mmoproto.CharacterInfo{Name: c.Name, X: float32(c.X), Y: float32(c.Y)})
			}
			m.send(s.client.ID, out)
		}
	})
}

func (m *Module) createCharacter(s *session, r *mmoproto.CharacterCreate) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	account, name, id := s.account, r.Name, r.RequestID
	x, y := m.cfg.Width/2, m.cfg.Height/2
	if a := m.areas; a != nil {
		x, y = (a.own.x0+a.own.x1)/2, (a.own.y0+a.own.y1)/2 // new characters start in this server's area
	}
	m.async(s, func(ctx context.Context) func() {
		_, err := m.db.CreateCharacter(ctx, account, name, x, y)
		return func() { m.answer(s, id, err) }
	})
}

// answer answers a request with OK or the store error.
func (m *Module) answer(s *session, id uint32, err error) {
	switch {
	case !m.alive(s):
	case err != nil:
		m.storeError(s, id, err)
	default:
		m.ok(s.client.ID, id)
	}
}

func (m *Module) deleteCharacter(s *session, r *mmoproto.CharacterDelete) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	if s.state == inWorld && strings.EqualFold(s.char, r.Name) {
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyInWorld, "leave the world before deleting the character you play")
		return
	}
	account, name, id := s.account, r.Name, r.RequestID
	m.async(s, func(ctx context.Context) func() {
		err := m.db.DeleteCharacter(ctx, account, name)
		return func() { m.answer(s, id, err) }
	})
}
