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
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
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
	addr    string // source address, for the log
	src     string // the throttle key: the IPv4 address, or the IPv6 address's /64
	state   state
	login   *scram.Server // while challenged
	pending string        // the account being logged in (canonical)
	iters   int           // while challenged: the account's stored iteration count (0: unknown name)
	upgrade int           // while logged in: the iteration count SetVerifier must use (0: none asked)
	account string        // while logged in or in world
	token   int64         // the login's token (store.Login), while logged in
	char    string        // the character played, in world
	wid     world.ID
	busy    bool   // a request of this session is in the lane
	speaks  uint16 // the mmo protocol the client stated at its last LoginStart (0: none yet, 1)
	// Areas (handoff.go): the client's handoff key (HandoffKey, or the key
	// of the ticket it came with), a handoff in the lane, and when a
	// handoff that was not made may be tried again.
	key     *[32]byte
	handing bool
	retryAt time.Time
}

// Module is the mmo module.
type Module struct {
	plugin.Base
	h      module.Host
	cfg    Config
	ctx    context.Context
	db     *store.Store
	lane   *dbLane
	pres   *presence
	w      *world.World
	gate   *throttle.LoginGate
	regs   *throttle.Rate // registrations per address; nil: no limit
	secret []byte

	areas          *areaMap // nil: the whole world is this server's
	worldKey       ed25519.PrivateKey
	worldPub       ed25519.PublicKey
	handoffsOut    uint64
	handoffsIn     uint64
	ticketsRefused uint64

	sessions map[uint32]*session
	online   map[string]*session // account → its session
	players  map[world.ID]*session

	pendingLogins map[string]int   // account → its login claims in the lane
	noticed       map[string]int64 // account → the newest other server's token seen while a claim was pending
	timers        []timer          // retries, run by OnTick
	saving        bool             // a periodic save is in the lane
	completions   []func()

	queue          []request // requests not yet handled, in arrival order
	fresh          bool      // before the first tick: admitted clients survived a restart
	replEvery      uint64
	saveEvery      uint64
	ticks          uint64
	refusedUploads uint64
	repl           mmoproto.WorldUpdate // replicate's reusable message
	buf            []byte
	audience       []world.ID
	revealed       []world.Snapshot // greet's reusable Reveal buffer
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

// timer is a function the game thread runs at or after at.
type timer struct {
	at time.Time
	f  func()
}

// Database timing.
const (
	jobTimeout   = 15 * time.Second // one lane job
	adminTimeout = 3 * time.Second  // an admin command's query (it runs on the game thread)
	enterRetry   = 200 * time.Millisecond
	maxEnterWait = 8 * time.Second // below the client's 10 s request timeout
)

// New returns the module (the built-in module's constructor).
func New() plugin.Module { return &Module{} }

// Manifest declares the module's types and admin commands.
func (m *Module) Manifest() module.Manifest {
	return module.Manifest{
		Name: mmoproto.Owner, Version: Version, Messages: mmoproto.Schemas(), Metrics: metricSpecs,
		// A world, not a match: no match timer, no scoreboard; discovery
		// announces "mmo" and the area this server owns.
		NoMatch: true,
		// Replicating at 10 Hz, the world does not notice its answers
		// applying one tick later: the server's tick never waits for it.
		AnswersNextTick: true,
		Protocol:        mmoproto.Protocol, OldestProtocol: mmoproto.OldestProtocol,
		Commands: []module.CommandSpec{
			{Name: "mmo_accounts", Usage: "", Help: "count and list the accounts"},
			{Name: "mmo_online", Usage: "", Help: "logged-in accounts, their characters and positions"},
			{Name: "mmo_kick_account", Usage: "NAME", Help: "end an account's login (the connection stays)"},
			{Name: "mmo_ban", Usage: "ACCOUNT [REASON...]", Help: "ban an account (persisted; ends its login; its logins are refused AccountBanned)"},
			{Name: "mmo_unban", Usage: "ACCOUNT", Help: "lift an account's ban"},
			{Name: "mmo_bans", Usage: "", Help: "count and list the banned accounts"},
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
	if m.areas, err = cfg.areas(dir); err != nil {
		return fmt.Errorf("mmo: %w", err)
	}
	if m.areas != nil {
		if err := h.SetArea(m.areas.own.name); err != nil {
			h.Log().Warn("the area's name is not announced", "area", m.areas.own.name, "err", err)
		}
	}
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
	backoff := func(free int) throttle.BackoffConfig {
		return throttle.BackoffConfig{Free: free, Base: seconds(cfg.LoginBackoff), Max: seconds(cfg.LoginBackoffMax)}
	}
	m.gate = throttle.NewLoginGate(throttle.GateConfig{
		Pairs:     backoff(cfg.LoginFreeFailures),
		Addresses: backoff(cfg.AddressFreeFailures),
		Accounts:  throttle.WindowConfig{Max: cfg.AccountAttempts, Per: seconds(cfg.AccountWindow)},
		Trusted:   throttle.RecentConfig{For: seconds(cfg.TrustedFor)},
	})
	for _, k := range cfg.Retired() {
		h.Log().Warn("a config key no longer applies: strangers share account_attempts per account_window instead (docs/mmo.md §7.4)", "key", k)
	}
	if cfg.MaxRegistrations > 0 {
		m.regs = throttle.NewRate(throttle.RateConfig{Burst: cfg.MaxRegistrations, Per: seconds(cfg.RegistrationWindow)})
	}
	dbc, err := cfg.Database.Resolve(os.Getenv)
	if err != nil {
		return cfg.located(err, "database", "url")
	}
	id, err := loadServerID(filepath.Join(dir, serverIDFile))
	if err != nil {
		return fmt.Errorf("mmo: the server id: %w", err)
	}
	octx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	var sopt store.Options
	if m.areas != nil {
		sopt.Area = m.areas.own.name
	}
	if dbc.URL != "" {
		m.db, err = store.OpenPostgres(octx, dbc.URL, dbc.Password, sopt)
	} else {
		m.db, err = store.Open(octx, dir, sopt)
	}
	if err != nil {
		return cfg.databaseError(dbc, os.Getenv, err)
	}
	if err := m.db.StartServer(octx, id, dbc.Lease); err != nil {
		m.db.Close()
		return fmt.Errorf("mmo: taking the server's lease in %s: %w", m.db.Where(), err)
	}
	if m.areas != nil {
		if err := m.loadWorldKey(octx); err != nil {
			m.db.StopServer(octx, id)
			m.db.Close()
			return cfg.located(fmt.Errorf("[world] key_file: %w", err), "world", "key_file")
		}
	}
	m.pres = &presence{id: id, lease: dbc.Lease}
	m.lane = newLane(m.ctx, jobTimeout)
	m.sessions = make(map[uint32]*session)
	m.online = make(map[string]*session)
	m.players = make(map[world.ID]*session)
	m.pendingLogins = make(map[string]int)
	m.noticed = make(map[string]int64)
	m.startPresence()
	n, _ := m.db.CountAccounts(octx)
	area := fmt.Sprintf("%gx%g", cfg.Width, cfg.Height)
	if a := m.areas; a != nil {
		area = fmt.Sprintf("%s [%g,%g]-[%g,%g] of %s, pin %s", a.own.name, a.own.x0, a.own.y0, a.own.x1, a.own.y1, area, a.own.pin)
	}
	h.Log().Info("mmo ready", "accounts", n, "db", m.db.Backend()+" "+m.db.Where(), "server", id,
		"lease", dbc.Lease, "area", area)
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

// Unload saves every position, gives up the server's logins, claims and
// lease, and closes the database (waiting up to 10 s for the lane).
func (m *Module) Unload() {
	if m.db == nil {
		return
	}
	m.stopPresence()
	batch := m.positions()
	id := m.pres.id
	m.lane.push(func(ctx context.Context) func() {
		if _, err := m.db.SaveClaimed(ctx, id, batch); err != nil {
			m.h.Log().Error("mmo: saving positions at unload", "err", err)
		}
		if err := m.db.StopServer(ctx, id); err != nil {
			m.h.Log().Warn("mmo: giving up the lease at unload (it will expire)", "err", err)
		}
		return nil
	})
	if !m.lane.close(10 * time.Second) {
		m.h.Log().Error("mmo: the database did not finish within 10 s of unload; unsaved positions may be lost", "pending", m.lane.pending())
	}
	m.db.Close()
	m.db = nil
}

// throttleSource is addr as the login and registration limits count it:
// an IPv4 address, or an IPv6 address's /64 (one host's share, which it
// can fill with addresses of its own).
func throttleSource(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func (m *Module) OnAdmitted(c module.ClientInfo) {
	s := &session{client: c, addr: c.Addr.Addr().String(), src: throttleSource(c.Addr.Addr())}
	m.sessions[c.ID] = s
	if m.fresh {
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
	m.fresh = false
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

// unsupportedProtocol is ProtocolUnsupported's detail for a client that
// speaks v.
func unsupportedProtocol(v uint16) string {
	return fmt.Sprintf("client speaks mmo protocol %d, this server serves %d..%d; update the client", v, mmoproto.OldestProtocol, mmoproto.Protocol)
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

// Command runs the admin commands.
func (m *Module) Command(name string, args []string) (string, error) {
	switch name {
	case "mmo_accounts":
		// Admin commands answer at once, so this one queries from the game
		// thread, bounded by adminTimeout.
		ctx, cancel := context.WithTimeout(m.ctx, adminTimeout)
		defer cancel()
		n, err := m.db.CountAccounts(ctx)
		if err != nil {
			return "", err
		}
		list, err := m.db.ListAccounts(ctx, "", 50)
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
		fmt.Fprintf(&b, "\n  server %s, database %s %s, lease %v", m.pres.id, m.db.Backend(), m.db.Where(), m.pres.lease)
		b.WriteString(m.areaLine())
		return b.String(), nil
	case "mmo_ban":
		return m.banCommand(args)
	case "mmo_unban":
		return m.unbanCommand(args)
	case "mmo_bans":
		return m.bansCommand()
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
		m.endLogin(s, mmoproto.LoggedOutKicked, "an administrator ended your login", true)
		return "logged out " + key, nil
	}
	return "", fmt.Errorf("no such command %q", name)
}
