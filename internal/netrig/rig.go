package netrig

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// MaxClients bounds Config.Clients: client i's subnet is 198.19.i.0/24.
const MaxClients = 200

// Config says what rig to build. The zero value is one client on the None
// profile, without NAT.
type Config struct {
	// Clients is the number of client namespaces, each on its own link;
	// 0 means 1, at most MaxClients.
	Clients int
	// Profile is every client's link at start (SetProfile changes one).
	Profile Profile
	// NAT puts the router's masquerade between the clients and the server:
	// the server sees every client at the router's address (PublicAddr),
	// on a port of the NAT's choosing, and Rebind changes that port.
	NAT bool
	// Seed seeds the impairment of every link; 0 means 1, so that a run's
	// drops and delays repeat for the same packets in the same order.
	Seed uint64
	// Lifetime bounds the rig: past it, the rig tears itself down (and
	// logs so) even if nobody called Close. 0 means 10 minutes.
	Lifetime time.Duration
	// Logf receives the rig's log lines and the output of commands started
	// with Run; nil discards them. New sets it to the test's log.
	Logf func(format string, args ...any)
}

// Rig is a running set of namespaces: a server, a router and clients.
// Its methods are safe for concurrent use.
type Rig struct {
	// Server is the server's namespace; Server.Addr is where clients reach it.
	Server *Node
	// Router is the router's namespace; Router.Addr is the NAT's public address.
	Router *Node

	cfg     Config
	clients []*Client
	ctx     context.Context // done when the rig closes: kills its commands
	cancel  context.CancelFunc
	nat     *natTable

	mu        sync.Mutex // serialises nft and tc changes
	undo      []func()   // teardown steps, run last first
	closeOnce sync.Once
	closeErr  error
	watchdog  *time.Timer

	logMu  sync.Mutex
	closed atomic.Bool
}

// Client is one client namespace and its link through the router.
type Client struct {
	Node
	index   int
	up      *pipe // client → server
	down    *pipe // server → client
	profile atomic.Pointer[Profile]
}

// LinkStats counts what a client's link did in each direction.
type LinkStats struct {
	Up   DirStats // client → server
	Down DirStats // server → client
}

var rigSeq atomic.Uint64

// Start builds a rig: it sweeps the namespaces of dead rigs, makes the
// namespaces, links and rules, and starts the forwarders. On error nothing
// of it is left. The caller must Close it.
func Start(cfg Config) (*Rig, error) {
	if err := cfg.populate(); err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	r := &Rig{cfg: cfg}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if removed, err := Sweep(); err != nil {
		r.logf("netrig: sweeping stale namespaces: %v", err)
	} else if len(removed) > 0 {
		r.logf("netrig: removed %d namespaces of dead rigs: %v", len(removed), removed)
	}
	if err := r.build(); err != nil {
		r.Close()
		return nil, err
	}
	r.watchdog = time.AfterFunc(cfg.Lifetime, func() {
		r.logf("netrig: the rig outlived its %v lifetime: tearing it down", r.cfg.Lifetime)
		r.Close()
	})
	r.logf("netrig: rig up: server %s, %d clients, %s, NAT %v", r.Server.Name, len(r.clients), cfg.Profile, cfg.NAT)
	return r, nil
}

func (c *Config) populate() error {
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Clients < 0 || c.Clients > MaxClients {
		return fmt.Errorf("netrig: %d clients: the rig takes 1 to %d", c.Clients, MaxClients)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Lifetime == 0 {
		c.Lifetime = 10 * time.Minute
	}
	if c.Profile == (Profile{}) {
		c.Profile = None
	}
	return c.Profile.Validate()
}

// Client returns client i (0 ≤ i < Clients); it panics on another i, as an
// index out of range does.
func (r *Rig) Client(i int) *Client { return r.clients[i] }

// Clients is the number of clients.
func (r *Rig) Clients() int { return len(r.clients) }

// PublicAddr is the address the server sees clients at with NAT on (the
// router's server-side address).
func (r *Rig) PublicAddr() netip.Addr { return r.Router.Addr }

// Index is the client's number in its rig.
func (c *Client) Index() int { return c.index }

// Profile is the client's link profile now.
func (c *Client) Profile() Profile { return *c.profile.Load() }

// Stats returns what client i's link did so far.
func (r *Rig) Stats(i int) LinkStats {
	c := r.clients[i]
	return LinkStats{Up: c.up.stats.snapshot(), Down: c.down.stats.snapshot()}
}

// SetProfile changes client i's link, both directions, from now on:
// packets already held keep the delay they were given.
func (r *Rig) SetProfile(i int, p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c := r.clients[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.shape(c, p); err != nil {
		return err
	}
	c.up.setDirection(p.oneWay())
	c.down.setDirection(p.oneWay())
	c.profile.Store(&p)
	r.logf("netrig: client %d link is now %s", i, p)
	return nil
}

// Outage drops every packet of client i, both ways, for d from now: those
// that enter the router and those it held that fall due meanwhile. It
// returns at once, with the time the outage ends; a later call replaces
// the window (d = 0 ends it).
func (r *Rig) Outage(i int, d time.Duration) (until time.Time) {
	c := r.clients[i]
	until = time.Now().Add(d)
	c.up.outage(until)
	c.down.outage(until)
	r.logf("netrig: client %d is cut off for %v", i, d)
	return until
}

// Rebind forces a NAT rebinding for client i: the router's mapping for it
// moves to another port range and its conntrack entries are deleted, so its
// next packet leaves from a new public port (the old one no longer leads to
// it). It fails without NAT.
func (r *Rig) Rebind(i int) error {
	if r.nat == nil {
		return ErrNoNAT
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nat.rebind(i)
}

// ErrNoNAT is Rebind's answer on a rig built without NAT.
var ErrNoNAT = errors.New("netrig: the rig has no NAT (Config.NAT is false)")

// Close kills the commands started in the rig, stops the forwarders and
// removes every namespace. It is safe to call more than once.
func (r *Rig) Close() error {
	r.closeOnce.Do(func() {
		if r.watchdog != nil {
			r.watchdog.Stop()
		}
		r.cancel()
		r.mu.Lock()
		undo := r.undo
		r.undo = nil
		r.mu.Unlock()
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		for _, n := range r.namespaces() {
			killNamespace(n)
			if err := deleteNamespace(n); err != nil {
				errs = append(errs, err)
			}
		}
		r.closeErr = errors.Join(errs...)
		r.logMu.Lock()
		r.closed.Store(true)
		r.logMu.Unlock()
	})
	return r.closeErr
}

// track adds a teardown step.
func (r *Rig) track(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.undo = append(r.undo, f)
}

func (r *Rig) logf(format string, args ...any) {
	if r.cfg.Logf == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if !r.closed.Load() {
		r.cfg.Logf(format, args...)
	}
}
