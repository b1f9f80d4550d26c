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
	"errors"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Clients and their requests: admission, departure, and each request
// routed to its handler once the session's state allows it.

func (m *Module) OnAdmitted(c module.ClientInfo) {
	s := &session{client: c, addr: c.Addr.Addr().String(), src: throttleSource(c.Addr.Addr())}
	m.sessions[c.ID] = s
	if c.Present { // the module (re)started while this client stayed: its login is gone
		m.send(c.ID, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutModuleRestarted, Detail: "the game module restarted; log in again"})
	}
	m.onAdmittedTicket(s, c)
}

func (m *Module) OnLeft(c module.ClientInfo, _ wire.DisconnectReason) {
	if s := m.sessions[c.ID]; s != nil {
		m.logout(s)
		delete(m.sessions, c.ID)
	}
}

// OnMessage queues a request; OnTick handles it.
func (m *Module) OnMessage(c module.ClientInfo, t wire.MessageType, p []byte) {
	if len(m.queue) >= maxQueue {
		if id, ok := mmoproto.PeekRequestID(p); ok {
			m.fail(c.ID, id, mmoproto.Internal, "server busy; try again")
		}
		return
	}
	m.queue = append(m.queue, request{client: c, t: t, payload: p})
}

// handle runs one request.
func (m *Module) handle(c module.ClientInfo, t wire.MessageType, p []byte) {
	s := m.sessions[c.ID]
	if s == nil {
		return // the client left while its request waited
	}
	msg, err := mmoproto.Parse(t, p)
	if err != nil {
		if id, ok := mmoproto.PeekRequestID(p); ok {
			m.fail(c.ID, id, mmoproto.BadRequest, err.Error())
		}
		return
	}
	switch r := msg.(type) {
	case *mmoproto.Register:
		m.register(s, r)
	case *mmoproto.LoginStart:
		m.loginStart(s, r)
	case *mmoproto.LoginFinish:
		m.loginFinish(s, r)
	case *mmoproto.Logout:
		if s.state < loggedIn {
			m.fail(c.ID, r.RequestID, mmoproto.NotLoggedIn, "")
			return
		}
		m.logout(s)
		m.ok(c.ID, r.RequestID)
	case *mmoproto.CharacterListRequest:
		m.listCharacters(s, r.RequestID)
	case *mmoproto.CharacterCreate:
		m.createCharacter(s, r)
	case *mmoproto.CharacterDelete:
		m.deleteCharacter(s, r)
	case *mmoproto.Enter:
		m.enter(s, r)
	case *mmoproto.Leave:
		if m.needWorld(s, r.RequestID) {
			m.leaveWorld(s)
			m.ok(c.ID, r.RequestID)
		}
	case *mmoproto.MoveIntent:
		if m.needWorld(s, r.RequestID) {
			if err := m.w.SetIntent(s.wid, float64(r.DX), float64(r.DY)); err != nil {
				m.fail(c.ID, r.RequestID, mmoproto.BadRequest, "dx and dy must be finite and within -1..1")
				return
			}
			m.ok(c.ID, r.RequestID)
		}
	case *mmoproto.Stop:
		if m.needWorld(s, r.RequestID) {
			m.w.Stop(s.wid)
			m.ok(c.ID, r.RequestID)
		}
	case *mmoproto.Where:
		if m.needWorld(s, r.RequestID) {
			sn, _ := m.w.Get(s.wid)
			m.send(c.ID, &mmoproto.WhereResult{RequestID: r.RequestID, ID: uint32(sn.ID), X: float32(sn.X), Y: float32(sn.Y), DX: float32(sn.DX), DY: float32(sn.DY)})
		}
	case *mmoproto.Greet:
		m.greet(s, r)
	case *mmoproto.HandoffKey:
		m.setHandoffKey(s, r)
	case *mmoproto.SetVerifier:
		m.setVerifier(s, r)
	case *mmoproto.PositionUpload:
		m.refusedUploads++
		m.fail(c.ID, r.RequestID, mmoproto.PositionUploadRefused, "positions are server-timed: send MoveIntent")
	default:
		if id, ok := mmoproto.PeekRequestID(p); ok {
			m.fail(c.ID, id, mmoproto.BadRequest, mmoproto.Name(t)+" is sent by the server only")
		}
	}
}

// needWorld checks that a session plays a character, answering otherwise.
func (m *Module) needWorld(s *session, id uint32) bool {
	switch s.state {
	case inWorld:
		return true
	case loggedIn:
		m.fail(s.client.ID, id, mmoproto.NotInWorld, "enter the world with a character first")
	default:
		m.fail(s.client.ID, id, mmoproto.NotLoggedIn, "log in first")
	}
	return false
}

// needLogin checks that a session is logged in (or plays), answering otherwise.
func (m *Module) needLogin(s *session, id uint32) bool {
	if s.state >= loggedIn {
		return true
	}
	m.fail(s.client.ID, id, mmoproto.NotLoggedIn, "log in first")
	return false
}

// storeError answers a store error with its code; an unexpected one is
// logged and answered Internal.
func (m *Module) storeError(s *session, id uint32, err error) {
	code := mmoproto.Internal
	switch {
	case errors.Is(err, store.ErrAccountNameInvalid), errors.Is(err, store.ErrCharacterNameInvalid):
		code = mmoproto.NameInvalid
	case errors.Is(err, store.ErrAccountExists):
		code = mmoproto.AccountExists
	case errors.Is(err, store.ErrBadVerifier):
		code = mmoproto.BadRequest
	case errors.Is(err, store.ErrCharacterExists):
		code = mmoproto.CharacterExists
	case errors.Is(err, store.ErrTooManyCharacters):
		code = mmoproto.TooManyCharacters
	case errors.Is(err, store.ErrNoCharacter):
		code = mmoproto.NoSuchCharacter
	case errors.Is(err, store.ErrNotOwner):
		code = mmoproto.NotYourCharacter
	case errors.Is(err, store.ErrCharacterBusy):
		code = mmoproto.AlreadyInWorld
	default:
		m.h.Log().Error("mmo database", "err", err)
	}
	m.fail(s.client.ID, id, code, "")
}
