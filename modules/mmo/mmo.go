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

	areas          *areaMap   // nil: the whole world is this server's
	dr             drainState // drain.go
	cov            coverState // drain.go: the areas covered for drained neighbours
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
	m.h, m.ctx = h, context.Background()
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
