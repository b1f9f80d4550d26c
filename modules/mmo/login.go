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
	"fmt"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Accounts and logins (docs/mmo.md §6, §7): registration, the SCRAM
// exchange with the protocol a client speaks, logout.

func (m *Module) register(s *session, r *mmoproto.Register) {
	if s.state >= loggedIn {
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyLoggedIn, "log out to register another account")
		return
	}
	v := scram.Verifier{Salt: r.Salt[:], Iterations: int(r.Iterations), StoredKey: r.StoredKey, ServerKey: r.ServerKey}
	if err := v.Check(m.cfg.MinIterations); err != nil {
		code := mmoproto.BadRequest
		if errors.Is(err, scram.ErrIterationsTooLow) {
			code = mmoproto.IterationsTooLow
		}
		m.fail(s.client.ID, r.RequestID, code, fmt.Sprintf("at least %d iterations", m.cfg.MinIterations))
		return
	}
	if m.regs != nil {
		if wait, ok := m.regs.Allow(s.src, m.h.Now()); !ok {
			m.h.AddMetric(metricRegistrationsRefused, 1)
			m.send(s.client.ID, &mmoproto.Result{RequestID: r.RequestID, Code: mmoproto.RegistrationLimited,
				RetryAfterMS: uint32(min(wait.Milliseconds(), 1<<31)), Detail: "too many registrations from your address"})
			return
		}
	}
	sv := store.Verifier{Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey[:], ServerKey: v.ServerKey[:]}
	name, id := r.Account, r.RequestID
	m.async(s, func(ctx context.Context) func() {
		acct, err := m.db.CreateAccount(ctx, name, sv)
		return func() {
			if !m.alive(s) {
				return
			}
			if err != nil {
				m.storeError(s, id, err)
				return
			}
			m.h.AddMetric(metricRegistrations, 1)
			m.h.Log().Info("account registered", "account", acct.Name, "client", s.client.ID)
			m.send(s.client.ID, &mmoproto.RegisterResult{RequestID: id, Account: acct.Name})
		}
	})
}

func (m *Module) loginStart(s *session, r *mmoproto.LoginStart) {
	if s.state >= loggedIn {
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyLoggedIn, "log out first")
		return
	}
	s.state, s.login, s.pending = anonymous, nil, ""
	if v := r.Speaks(); v < mmoproto.OldestProtocol || v > mmoproto.Protocol {
		m.fail(s.client.ID, r.RequestID, mmoproto.ProtocolUnsupported, unsupportedProtocol(v))
		return
	}
	s.speaks = r.Speaks()
	srv, err := scram.NewServer(scram.ServerConfig{ChannelBinding: s.client.ChannelBinding[:]})
	if err != nil {
		m.fail(s.client.ID, r.RequestID, mmoproto.Internal, "")
		return
	}
	cf, err := srv.ReadClientFirst(r.ClientFirst)
	if err != nil {
		m.fail(s.client.ID, r.RequestID, mmoproto.BadRequest, "client-first: "+err.Error())
		return
	}
	key, err := store.AccountKey(cf.Username)
	if err != nil {
		m.fail(s.client.ID, r.RequestID, mmoproto.NameInvalid, "")
		return
	}
	if wait, ok := m.gate.Begin(key, s.src, m.h.Now()); !ok {
		m.h.AddMetric(metricThrottled, 1)
		m.send(s.client.ID, &mmoproto.Result{RequestID: r.RequestID, Code: mmoproto.Throttled, RetryAfterMS: uint32(min(wait.Milliseconds(), 1<<31))})
		return
	}
	id := r.RequestID
	m.async(s, func(ctx context.Context) func() {
		acct, err := m.db.Account(ctx, key)
		return func() {
			if !m.alive(s) || s.state >= loggedIn {
				return
			}
			var v scram.Verifier
			iters := 0
			switch {
			case err == nil:
				v = scram.Verifier{Salt: acct.Verifier.Salt, Iterations: acct.Verifier.Iterations}
				copy(v.StoredKey[:], acct.Verifier.StoredKey)
				copy(v.ServerKey[:], acct.Verifier.ServerKey)
				iters = v.Iterations
			case errors.Is(err, store.ErrNoAccount):
				// A salt keyed by the server's secret and the name (stable
				// across attempts and restarts) and today's count: the
				// challenge of a name that does not exist looks like that
				// of one registered now.
				v = scram.MockVerifier(m.secret, key, m.cfg.Iterations)
			default:
				m.storeError(s, id, err)
				return
			}
			sf, err := srv.ServerFirst(v)
			if err != nil {
				m.fail(s.client.ID, id, mmoproto.Internal, "")
				return
			}
			s.state, s.login, s.pending, s.iters = challenged, srv, key, iters
			m.send(s.client.ID, &mmoproto.LoginChallenge{RequestID: id, ServerFirst: sf})
		}
	})
}

func (m *Module) loginFinish(s *session, r *mmoproto.LoginFinish) {
	if s.state != challenged {
		m.fail(s.client.ID, r.RequestID, mmoproto.OutOfOrder, "send LoginStart first")
		return
	}
	key, srv, iters := s.pending, s.login, s.iters
	s.state, s.login, s.pending, s.iters = anonymous, nil, "", 0
	final, err := srv.ReadClientFinal(r.ClientFinal)
	if err != nil {
		now := m.h.Now()
		m.gate.Failure(key, s.src, now)
		m.h.AddMetric(metricLoginFailures, 1)
		m.h.Log().Info("login failed", "account", key, "client", s.client.ID, "addr", s.addr)
		m.fail(s.client.ID, r.RequestID, mmoproto.AuthFailed, "")
		return
	}
	m.gate.Success(key, s.src, m.h.Now())
	if m.pres.local {
		m.fail(s.client.ID, r.RequestID, mmoproto.Internal, "the server lost its database; try again shortly")
		return
	}
	// The proof is good; the login is the account's once the database says
	// so (ClaimLogin takes it from any other server and tells them).
	id, server := r.RequestID, m.pres.id
	m.pendingLogins[key]++
	m.async(s, func(ctx context.Context) func() {
		// A banned account's right password is told so (only the
		// password's holder learns the account is banned); the ban is
		// read here, after the proof, so a ban made during the login holds.
		ban, banned, err := m.db.BanOf(ctx, key)
		var l store.Login
		if err == nil && !banned {
			l, err = m.db.ClaimLogin(ctx, server, key)
		}
		return func() {
			newer := m.noticed[key]
			if m.pendingLogins[key]--; m.pendingLogins[key] <= 0 {
				delete(m.pendingLogins, key)
				delete(m.noticed, key)
			}
			if !m.alive(s) || s.state != anonymous {
				if err == nil && !banned {
					m.releaseLogin(key, l.Token)
				}
				return
			}
			if err != nil {
				m.storeError(s, id, err)
				return
			}
			if banned {
				m.h.AddMetric(metricBannedLogins, 1)
				m.h.Log().Info("login of a banned account refused", "account", key, "client", s.client.ID, "addr", s.addr)
				m.fail(s.client.ID, id, mmoproto.AccountBanned, banDetail(ban))
				return
			}
			if old := m.online[key]; old != nil && old != s {
				m.endLogin(old, mmoproto.LoggedOutElsewhere, "your account logged in on another connection", false)
			}
			s.state, s.account, s.token = loggedIn, key, l.Token
			m.online[key] = s
			m.h.AddMetric(metricLogins, 1)
			m.h.Log().Info("logged in", "account", key, "client", s.client.ID, "took_over_from", l.Previous)
			m.send(s.client.ID, &mmoproto.LoginResult{RequestID: id, Account: key, ServerFinal: final})
			if iters != m.cfg.Iterations {
				// Counts converge on today's: the client, which has just
				// proved the password, computes the new verifier.
				s.upgrade = m.cfg.Iterations
				m.send(s.client.ID, &mmoproto.VerifierUpgrade{Iterations: uint32(m.cfg.Iterations)})
			}
			if newer > l.Token {
				// Another server's login of this account committed after
				// this one while it was on its way here.
				m.endLogin(s, mmoproto.LoggedOutElsewhere, "your account logged in on another server", false)
			}
		}
	})
}

// releaseLogin drops this server's login of account in the database, if
// token is still current there.
func (m *Module) releaseLogin(account string, token int64) {
	id := m.pres.id
	m.lane.push(func(ctx context.Context) func() {
		if err := m.db.ReleaseLogin(ctx, id, account, token); err != nil {
			m.h.Log().Warn("mmo: releasing a login", "account", account, "err", err)
		}
		return nil
	})
}

// endLogin ends a session's login on the server's initiative and tells the
// client why. release says whether the database still holds this login for
// this server (a kick) or already holds a newer one (logged in elsewhere).
func (m *Module) endLogin(s *session, reason mmoproto.LoggedOutReason, detail string, release bool) {
	if !release {
		s.token = 0 // nothing to release: the database holds a newer login
	}
	m.logout(s)
	m.send(s.client.ID, &mmoproto.LoggedOut{Reason: reason, Detail: detail})
}

// logout ends a session's login (saving its character's position and
// giving the character and the login back in the database).
func (m *Module) logout(s *session) {
	if s.state == inWorld {
		m.leaveWorld(s)
	}
	if s.account != "" && m.online[s.account] == s {
		delete(m.online, s.account)
		if s.token != 0 {
			m.releaseLogin(s.account, s.token)
		}
	}
	s.state, s.account, s.token, s.login, s.pending, s.key = anonymous, "", 0, nil, "", nil
	s.iters, s.upgrade = 0, 0
}

// unsupportedProtocol is ProtocolUnsupported's detail for a client that
// speaks v.
func unsupportedProtocol(v uint16) string {
	return fmt.Sprintf("client speaks mmo protocol %d, this server serves %d..%d; update the client", v, mmoproto.OldestProtocol, mmoproto.Protocol)
}
