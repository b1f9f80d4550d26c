// Package mmo is the MMO session gate: accounts with SCRAM-SHA-256 logins
// bound to the sealed session, characters owned by accounts, one shared area
// with server-timed movement, interest-managed position updates and nearby
// greetings, all persisted in SQLite. It runs as a Go plugin (built into the
// sparkhost binary: `sparkhost run --module mmo`); docs/mmo.md is the wire
// contract.
//
// Every handler runs on the module's game goroutine, from the batch of
// events the server sends each tick; the transport connection grants
// nothing: each request is checked against the session's authenticated
// account and the character it plays (docs/mmo.md §9).
package mmo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
	"github.com/sparkhost/sparkhost/modules/mmo/throttle"
	"github.com/sparkhost/sparkhost/modules/mmo/world"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

// Version is the module's version.
const Version = "1.0.0"

// secretFile holds the server-private key behind the mock verifiers of
// unknown accounts (so their challenges are stable and reveal nothing).
const secretFile = "mmo.secret"

// state is where a session is in docs/mmo.md §9.
type state uint8

const (
	anonymous state = iota
	challenged
	loggedIn
	inWorld
)

// session is one connection's login state.
type session struct {
	client  module.ClientInfo
	addr    string // source address, the throttle key
	state   state
	login   *scram.Server // while challenged
	pending string        // the account being logged in (canonical)
	account string        // while logged in or in world
	char    string        // the character played, in world
	wid     world.ID
}

// Module is the mmo module.
type Module struct {
	plugin.Base
	h      module.Host
	cfg    Config
	ctx    context.Context
	db     *store.Store
	w      *world.World
	gate   *throttle.LoginGate
	secret []byte

	sessions map[uint32]*session
	online   map[string]*session // account → its session
	players  map[world.ID]*session

	queue          []request // requests not yet handled, in arrival order
	fresh          bool      // before the first tick: admitted clients survived a restart
	replEvery      uint64
	saveEvery      uint64
	ticks          uint64
	refusedUploads uint64
	repl           struct { // replicate's reusable messages
		appear    mmoproto.Appear
		positions mmoproto.Positions
		disappear mmoproto.Disappear
	}
	buf      []byte
	audience []world.ID
}

// request is one client request waiting for its turn.
type request struct {
	client  module.ClientInfo
	t       wire.MessageType
	payload []byte
}

// maxQueue bounds the requests waiting across ticks; beyond it a request is
// answered Internal ("server busy") at once.
const maxQueue = 20000

// New returns the module (the built-in module's constructor).
func New() plugin.Module { return &Module{} }

// Manifest declares the module's types and admin commands.
func (m *Module) Manifest() module.Manifest {
	return module.Manifest{
		Name: mmoproto.Owner, Version: Version, Messages: mmoproto.Schemas(), Metrics: metricSpecs,
		Commands: []module.CommandSpec{
			{Name: "mmo_accounts", Usage: "", Help: "count and list the accounts"},
			{Name: "mmo_online", Usage: "", Help: "logged-in accounts, their characters and positions"},
			{Name: "mmo_kick_account", Usage: "NAME", Help: "end an account's login (the connection stays)"},
		},
	}
}

// Load opens the database and builds the world.
func (m *Module) Load(h module.Host) error {
	m.h, m.ctx, m.fresh = h, context.Background(), true
	dir := h.Server().DataDir
	if dir == "" {
		return errors.New("mmo: the server gave no data directory")
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return err
	}
	m.cfg = cfg
	if m.secret, err = loadSecret(filepath.Join(dir, secretFile)); err != nil {
		return fmt.Errorf("mmo: %w", err)
	}
	rate := max(h.Server().TickRate, 1)
	m.w, err = world.New(world.Config{
		Width: cfg.Width, Height: cfg.Height, Speed: cfg.Speed,
		InterestRadius: cfg.InterestRadius, GreetRadius: cfg.GreetRadius, TickRate: rate,
	})
	if err != nil {
		return fmt.Errorf("mmo: %w", err)
	}
	m.replEvery = uint64(max(1, rate/min(cfg.ReplicationRate, rate)))
	m.saveEvery = uint64(max(1, int(cfg.SaveInterval*float64(rate))))
	tc := throttle.Config{MaxFailures: cfg.MaxLoginFailures, Window: seconds(cfg.FailureWindow), Lockout: seconds(cfg.Lockout)}
	m.gate = throttle.NewLoginGate(tc, tc)
	if m.db, err = store.Open(m.ctx, dir, store.Options{}); err != nil {
		return fmt.Errorf("mmo: %w", err)
	}
	m.sessions = make(map[uint32]*session)
	m.online = make(map[string]*session)
	m.players = make(map[world.ID]*session)
	n, _ := m.db.CountAccounts(m.ctx)
	h.Log().Info("mmo ready", "accounts", n, "db", m.db.Path(), "area", fmt.Sprintf("%gx%g", cfg.Width, cfg.Height))
	return nil
}

// loadSecret reads the module's secret, creating it (0600) on first start.
func loadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) == 32 {
		return b, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b = make([]byte, 32)
	rand.Read(b)
	return b, atomicfile.WriteFile(path, b)
}

// Unload saves every position and closes the database.
func (m *Module) Unload() {
	if m.db == nil {
		return
	}
	m.saveAll()
	m.db.Close()
	m.db = nil
}

func (m *Module) OnAdmitted(c module.ClientInfo) {
	s := &session{client: c, addr: c.Addr.Addr().String()}
	m.sessions[c.ID] = s
	if m.fresh {
		m.send(c.ID, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutModuleRestarted, Detail: "the game module restarted; log in again"})
	}
}

func (m *Module) OnLeft(c module.ClientInfo, _ wire.DisconnectReason) {
	if s := m.sessions[c.ID]; s != nil {
		m.logout(s)
		delete(m.sessions, c.ID)
	}
}

// OnTick handles the queued requests within a quarter of the tick (at
// least 2 ms, at most half the time left before the deadline; at least one
// request), so a burst of database writes (registrations, character
// creation) spreads over ticks instead of stretching one; then it advances
// the world, replicates and periodically saves.
func (m *Module) OnTick(t module.Tick) {
	m.fresh = false
	start := time.Now()
	budget := min(max(t.DT/4, 2*time.Millisecond), t.Deadline.Sub(start)/2)
	n := 0
	for n < len(m.queue) && (n == 0 || time.Since(start) < budget) {
		r := m.queue[n]
		m.queue[n] = request{}
		n++
		m.handle(r.client, r.t, r.payload)
	}
	m.queue = m.queue[n:]
	if len(m.queue) == 0 {
		m.queue = nil // let the backing array go
	}
	m.h.SetMetric(metricInWorld, float64(len(m.players)))
	m.h.SetMetric(metricOnline, float64(len(m.online)))
	m.ticks++
	m.w.Step()
	if m.ticks%m.replEvery == 0 {
		m.w.Replicate(m.replicate)
	}
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
	default:
		m.h.Log().Error("mmo database", "err", err)
	}
	m.fail(s.client.ID, id, code, "")
}

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
	acct, err := m.db.CreateAccount(m.ctx, r.Account, store.Verifier{
		Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey[:], ServerKey: v.ServerKey[:],
	})
	if err != nil {
		m.storeError(s, r.RequestID, err)
		return
	}
	m.h.AddMetric(metricRegistrations, 1)
	m.h.Log().Info("account registered", "account", acct.Name, "client", s.client.ID)
	m.send(s.client.ID, &mmoproto.RegisterResult{RequestID: r.RequestID, Account: acct.Name})
}

func (m *Module) loginStart(s *session, r *mmoproto.LoginStart) {
	if s.state >= loggedIn {
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyLoggedIn, "log out first")
		return
	}
	s.state, s.login, s.pending = anonymous, nil, ""
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
	if wait, ok := m.gate.Check(key, s.addr, m.h.Now()); !ok {
		m.h.AddMetric(metricThrottled, 1)
		m.send(s.client.ID, &mmoproto.Result{RequestID: r.RequestID, Code: mmoproto.Throttled, RetryAfterMS: uint32(wait.Milliseconds())})
		return
	}
	var v scram.Verifier
	acct, err := m.db.Account(m.ctx, key)
	switch {
	case err == nil:
		v = scram.Verifier{Salt: acct.Verifier.Salt, Iterations: acct.Verifier.Iterations}
		copy(v.StoredKey[:], acct.Verifier.StoredKey)
		copy(v.ServerKey[:], acct.Verifier.ServerKey)
	case errors.Is(err, store.ErrNoAccount):
		v = scram.MockVerifier(m.secret, key, scram.DefaultIterations)
	default:
		m.storeError(s, r.RequestID, err)
		return
	}
	sf, err := srv.ServerFirst(v)
	if err != nil {
		m.fail(s.client.ID, r.RequestID, mmoproto.Internal, "")
		return
	}
	s.state, s.login, s.pending = challenged, srv, key
	m.send(s.client.ID, &mmoproto.LoginChallenge{RequestID: r.RequestID, ServerFirst: sf})
}

func (m *Module) loginFinish(s *session, r *mmoproto.LoginFinish) {
	if s.state != challenged {
		m.fail(s.client.ID, r.RequestID, mmoproto.OutOfOrder, "send LoginStart first")
		return
	}
	key, srv := s.pending, s.login
	s.state, s.login, s.pending = anonymous, nil, ""
	final, err := srv.ReadClientFinal(r.ClientFinal)
	if err != nil {
		now := m.h.Now()
		m.gate.Failure(key, s.addr, now)
		m.h.AddMetric(metricLoginFailures, 1)
		m.h.Log().Info("login failed", "account", key, "client", s.client.ID, "addr", s.addr)
		m.fail(s.client.ID, r.RequestID, mmoproto.AuthFailed, "")
		return
	}
	m.gate.Success(key, s.addr)
	if old := m.online[key]; old != nil && old != s {
		m.logout(old)
		m.send(old.client.ID, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutElsewhere, Detail: "your account logged in on another connection"})
	}
	s.state, s.account = loggedIn, key
	m.online[key] = s
	m.h.AddMetric(metricLogins, 1)
	m.h.Log().Info("logged in", "account", key, "client", s.client.ID)
	m.send(s.client.ID, &mmoproto.LoginResult{RequestID: r.RequestID, Account: key, ServerFinal: final})
}

// logout ends a session's login (saving its character's position).
func (m *Module) logout(s *session) {
	if s.state == inWorld {
		m.leaveWorld(s)
	}
	if s.account != "" && m.online[s.account] == s {
		delete(m.online, s.account)
	}
	s.state, s.account, s.login, s.pending = anonymous, "", nil, ""
}

func (m *Module) listCharacters(s *session, id uint32) {
	if !m.needLogin(s, id) {
		return
	}
	chars, err := m.db.Characters(m.ctx, s.account)
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

func (m *Module) createCharacter(s *session, r *mmoproto.CharacterCreate) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	if _, err := m.db.CreateCharacter(m.ctx, s.account, r.Name, m.cfg.Width/2, m.cfg.Height/2); err != nil {
		m.storeError(s, r.RequestID, err)
		return
	}
	m.ok(s.client.ID, r.RequestID)
}

func (m *Module) deleteCharacter(s *session, r *mmoproto.CharacterDelete) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	if s.state == inWorld && strings.EqualFold(s.char, r.Name) {
		m.fail(s.client.ID, r.RequestID, mmoproto.AlreadyInWorld, "leave the world before deleting the character you play")
		return
	}
	if err := m.db.DeleteCharacter(m.ctx, s.account, r.Name); err != nil {
		m.storeError(s, r.RequestID, err)
		return
	}
	m.ok(s.client.ID, r.RequestID)
}

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
	ch, err := m.db.Character(m.ctx, r.Name)
	if err != nil {
		m.storeError(s, r.RequestID, err)
		return
	}
	if ch.Account != s.account {
		m.fail(s.client.ID, r.RequestID, mmoproto.NotYourCharacter, "")
		return
	}
	id, err := m.w.Enter(ch.Name, ch.X, ch.Y)
	if err != nil {
		code := mmoproto.Internal
		if errors.Is(err, world.ErrAlreadyInWorld) {
			code = mmoproto.AlreadyInWorld
		}
		m.fail(s.client.ID, r.RequestID, code, err.Error())
		return
	}
	s.state, s.char, s.wid = inWorld, ch.Name, id
	m.players[id] = s
	c := m.w.Config()
	sn, _ := m.w.Get(id)
	m.send(s.client.ID, &mmoproto.Entered{
		RequestID: r.RequestID, ID: uint32(id), X: float32(sn.X), Y: float32(sn.Y),
		Width: float32(c.Width), Height: float32(c.Height), Speed: float32(c.Speed),
		InterestRadius: float32(c.InterestRadius), GreetRadius: float32(c.GreetRadius), Name: ch.Name,
	})
}

// leaveWorld takes a session's character out of the world and saves where it was.
func (m *Module) leaveWorld(s *session) {
	sn, err := m.w.Leave(s.wid)
	if err == nil {
		if err := m.db.SavePosition(m.ctx, sn.Name, sn.X, sn.Y); err != nil {
			m.h.Log().Error("saving a position", "character", sn.Name, "err", err)
		}
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
		if p := m.players[id]; p != nil {
			m.send(p.client.ID, msg)
		}
	}
}

// replicate sends one observer its Appear, Positions and Disappear lists,
// each split to stay under mmoproto.RecommendedMaxPayload.
func (m *Module) replicate(d *world.Delta) {
	s := m.players[d.Observer]
	if s == nil {
		return
	}
	tick := uint32(m.w.Tick())
	to := s.client.ID
	const room = mmoproto.RecommendedMaxPayload - 6
	// The three messages are reused for every observer (send encodes at once).
	ap, ps, dis := &m.repl.appear, &m.repl.positions, &m.repl.disappear
	for rest := d.Appear; len(rest) > 0; {
		ap.Tick, ap.Entries = tick, ap.Entries[:0]
		size := 0
		for len(rest) > 0 && (len(ap.Entries) == 0 || size+14+len(rest[0].Name) <= room) {
			a := rest[0]
			ap.Entries = append(ap.Entries, mmoproto.Appearance{ID: uint32(a.ID), X: float32(a.X), Y: float32(a.Y), Name: a.Name})
			size += 14 + len(a.Name)
			rest = rest[1:]
		}
		m.send(to, ap)
	}
	for rest := d.Update; len(rest) > 0; {
		n := min(len(rest), room/12)
		ps.Tick, ps.Entries = tick, ps.Entries[:0]
		for _, u := range rest[:n] {
			ps.Entries = append(ps.Entries, mmoproto.Position{ID: uint32(u.ID), X: float32(u.X), Y: float32(u.Y)})
		}
		m.send(to, ps)
		rest = rest[n:]
	}
	for rest := d.Disappear; len(rest) > 0; {
		n := min(len(rest), room/4)
		dis.Tick, dis.IDs = tick, dis.IDs[:0]
		for _, id := range rest[:n] {
			dis.IDs = append(dis.IDs, uint32(id))
		}
		m.send(to, dis)
		rest = rest[n:]
	}
	clear(ap.Entries[:cap(ap.Entries)]) // drop the names
}

// saveAll writes every character's position in one transaction.
func (m *Module) saveAll() {
	if len(m.players) == 0 {
		return
	}
	batch := make([]store.Position, 0, len(m.players))
	m.w.Each(func(sn world.Snapshot) { batch = append(batch, store.Position{Name: sn.Name, X: sn.X, Y: sn.Y}) })
	if _, err := m.db.SavePositions(m.ctx, batch); err != nil {
		m.h.Log().Error("saving positions", "err", err)
	}
}

// Command runs the admin commands.
func (m *Module) Command(name string, args []string) (string, error) {
	switch name {
	case "mmo_accounts":
		n, err := m.db.CountAccounts(m.ctx)
		if err != nil {
			return "", err
		}
		list, err := m.db.ListAccounts(m.ctx, "", 50)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "accounts %d", n)
		for _, a := range list {
			fmt.Fprintf(&b, "\n  %s  characters %d  created %s", a.Name, a.Characters, a.Created.UTC().Format(time.DateTime))
		}
		if n > len(list) {
			fmt.Fprintf(&b, "\n  … and %d more", n-len(list))
		}
		return b.String(), nil
	case "mmo_online":
		var b strings.Builder
		fmt.Fprintf(&b, "online %d, in world %d, refused position uploads %d", len(m.online), len(m.players), m.refusedUploads)
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range m.online {
				if !yield(k) {
					return
				}
			}
		})
		for _, a := range names {
			s := m.online[a]
			fmt.Fprintf(&b, "\n  %s  client %d (%s)", a, s.client.ID, s.client.Name)
			if s.state == inWorld {
				sn, _ := m.w.Get(s.wid)
				fmt.Fprintf(&b, "  playing %s at %.1f,%.1f", sn.Name, sn.X, sn.Y)
			}
		}
		return b.String(), nil
	case "mmo_kick_account":
		if len(args) != 1 {
			return "", errors.New("usage: mmo_kick_account NAME")
		}
		key, err := store.AccountKey(args[0])
		if err != nil {
			return "", err
		}
		s := m.online[key]
		if s == nil {
			return "", fmt.Errorf("account %s is not logged in; see mmo_online", key)
		}
		m.logout(s)
		m.send(s.client.ID, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutKicked, Detail: "an administrator ended your login"})
		return "logged out " + key, nil
	}
	return "", fmt.Errorf("no such command %q", name)
}
