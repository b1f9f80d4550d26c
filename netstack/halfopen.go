package netstack

import (
	"net/netip"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
)

// Defaults of the half-open table (docs/protocol.md §3.6).
const (
	DefaultHalfOpenMax        = 1024
	DefaultHalfOpenPerAddress = 16
	DefaultHalfOpenPerPrefix  = 64
)

// HalfOpenConfig bounds the handshakes that were answered with a
// ConnectAccepted but have not finished. Zero fields mean the defaults.
type HalfOpenConfig struct {
	// Max is the table's capacity; 0 means 1024. A full table evicts the
	// oldest handshake of the most represented prefix: it never refuses a
	// source that validated its address.
	Max int
	// PerAddress bounds the half-open handshakes of one IP address; 0 means 16.
	PerAddress int
	// PerPrefix bounds those of one IPv4 /24 or IPv6 /64; 0 means 64.
	PerPrefix int
}

func (c *HalfOpenConfig) populate() {
	if c.Max <= 0 {
		c.Max = DefaultHalfOpenMax
	}
	if c.PerAddress <= 0 {
		c.PerAddress = DefaultHalfOpenPerAddress
	}
	if c.PerPrefix <= 0 {
		c.PerPrefix = DefaultHalfOpenPerPrefix
	}
}

// halfOpen is one answered, unfinished handshake: what the server needs to
// recognise a repeated hello (its core), answer it again (the cached
// ConnectAccepted) and open the ClientFinished. It holds no session: the
// sealed channel, its buffers and its reliability state are built only for a
// ClientFinished that authenticated and parsed, so a half-open handshake
// costs a few hundred bytes.
//
// Every field but opener is immutable once the entry is in the table; opener
// is built and used by the receive goroutine only.
type halfOpen struct {
	addr     netip.AddrPort
	prefix   netip.Prefix
	id       uint32
	version  uint16
	proof    addrProof // how the source proved its address
	created  time.Time
	core     [handshake.HelloCoreSize]byte
	accepted []byte // the ConnectAccepted datagram, resent for a repeated hello
	keys     sessionKeys
	opener   *seal.Opener
	dead     bool // removed; guarded by the table's lock
}

// halfOpenTable is the bounded table of half-open handshakes. It never counts
// toward max_clients. Its invariants, under mu:
//
//   - len(byAddr) ≤ Max; per address ≤ PerAddress and per prefix ≤ PerPrefix
//     entries (admits refuses a new handshake beyond those);
//   - fifo holds every live entry in creation order (and dead ones not yet
//     popped), so expiry pops from its front;
//   - byPrefix lists the live entries of each prefix in creation order.
type halfOpenTable struct {
	cfg     HalfOpenConfig
	timeout time.Duration
	ctr     *Counters

	mu       sync.Mutex
	byAddr   map[netip.AddrPort]*halfOpen
	perAddr  map[netip.Addr]int
	byPrefix map[netip.Prefix][]*halfOpen
	fifo     []*halfOpen
}

func newHalfOpenTable(cfg HalfOpenConfig, timeout time.Duration, ctr *Counters) *halfOpenTable {
	cfg.populate()
	return &halfOpenTable{
		cfg: cfg, timeout: timeout, ctr: ctr,
		byAddr:   make(map[netip.AddrPort]*halfOpen),
		perAddr:  make(map[netip.Addr]int),
		byPrefix: make(map[netip.Prefix][]*halfOpen),
	}
}

// prefixOf returns the budget prefix of a: its /24 for IPv4, /64 for IPv6.
func prefixOf(a netip.Addr) netip.Prefix {
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

func (t *halfOpenTable) lookup(from netip.AddrPort) *halfOpen {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byAddr[from]
}

// admits reports whether a new handshake from from fits the per-address and
// per-prefix caps. An entry of that very endpoint does not count: the new
// handshake replaces it.
func (t *halfOpenTable) admits(from netip.AddrPort) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	same := 0
	if t.byAddr[from] != nil {
		same = 1
	}
	return t.perAddr[from.Addr()]-same < t.cfg.PerAddress &&
		len(t.byPrefix[prefixOf(from.Addr())])-same < t.cfg.PerPrefix
}

// insert adds e, replacing an entry of the same endpoint; a full table first
// evicts the oldest entry of the most represented prefix.
func (t *halfOpenTable) insert(e *halfOpen) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.byAddr[e.addr]; old != nil {
		t.removeLocked(old)
	}
	if len(t.byAddr) >= t.cfg.Max {
		if victim := t.evictionVictimLocked(); victim != nil {
			t.removeLocked(victim)
			t.ctr.HalfOpenEvicted.Add(1)
		}
	}
	e.prefix = prefixOf(e.addr.Addr())
	t.byAddr[e.addr] = e
	t.perAddr[e.addr.Addr()]++
	t.byPrefix[e.prefix] = append(t.byPrefix[e.prefix], e)
	t.fifo = append(t.fifo, e)
	t.ctr.HalfOpen.Add(1)
}

// evictionVictimLocked returns the oldest entry of the prefix with the most
// entries (ties: the prefix whose oldest entry is older).
func (t *halfOpenTable) evictionVictimLocked() *halfOpen {
	var victim *halfOpen
	most := 0
	for _, list := range t.byPrefix {
		if len(list) > most || (len(list) == most && list[0].created.Before(victim.created)) {
			most, victim = len(list), list[0]
		}
	}
	return victim
}

// remove takes e out of the table if it is still in it and reports whether it was.
func (t *halfOpenTable) remove(e *halfOpen) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.dead {
		return false
	}
	t.removeLocked(e)
	return true
}

func (t *halfOpenTable) removeLocked(e *halfOpen) {
	e.dead = true
	delete(t.byAddr, e.addr)
	if n := t.perAddr[e.addr.Addr()] - 1; n > 0 {
		t.perAddr[e.addr.Addr()] = n
	} else {
		delete(t.perAddr, e.addr.Addr())
	}
	list := t.byPrefix[e.prefix]
	for i, x := range list {
		if x == e {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(t.byPrefix, e.prefix)
	} else {
		t.byPrefix[e.prefix] = list
	}
	t.ctr.HalfOpen.Add(-1)
}

// expire frees the entries older than the timeout. Entries are created in
// time order, so it stops at the first live one that is young enough.
func (t *halfOpenTable) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.fifo {
		if !e.dead {
			if now.Sub(e.created) < t.timeout {
				break
			}
			t.removeLocked(e)
		}
		n++
	}
	if n > 0 {
		clear(t.fifo[:n])
		t.fifo = t.fifo[n:]
	}
}

func (t *halfOpenTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byAddr)
}

// clearAll empties the table (server shutdown).
func (t *halfOpenTable) clearAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.byAddr {
		t.removeLocked(e)
	}
	clear(t.fifo)
	t.fifo = nil
}
