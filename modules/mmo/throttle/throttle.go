// Package throttle limits failed logins and other events per key. Time is
// always passed in by the caller, so the game thread's clock (or a test's)
// drives it, and memory is bounded: at most MaxKeys keys are tracked, and
// the one touched longest ago is forgotten first.
//
//   - Limiter: a key (an account name) that fails MaxFailures times within
//     Window is locked out for Lockout.
//   - Backoff: a key's failures beyond Free make it wait Base, 2·Base, …
//     up to Max before its next attempt; never a hard lock.
//   - Rate: a token bucket of Burst events per Per (registrations per
//     address).
//
// The package never decides what a key is; LoginGate combines a Backoff
// per (account, address), a Backoff per address and a loose Limiter per
// account, which is what the mmo module needs. Its answers say only "wait
// d", the same for a name that exists and one that does not.
package throttle

import (
	"container/list"
	"sync"
	"time"
)

// Config configures a Limiter. The zero value means the documented defaults.
type Config struct {
	// MaxFailures within Window that lock a key; 0 means 5.
	MaxFailures int
	// Window in which failures are counted, from the first of them; 0 means 60 s.
	Window time.Duration
	// Lockout is how long a locked key stays locked; 0 means 30 s.
	Lockout time.Duration
	// MaxKeys bounds the keys tracked; 0 means 10,000.
	MaxKeys int
}

// Defaults of Config's zero fields.
const (
	DefaultMaxFailures = 5
	DefaultWindow      = 60 * time.Second
	DefaultLockout     = 30 * time.Second
	DefaultMaxKeys     = 10_000
)

func (c *Config) populate() {
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Lockout <= 0 {
		c.Lockout = DefaultLockout
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
}

// record is one tracked key. Invariant: it is in Limiter.keys under key and
// in Limiter.order, which is sorted by last (oldest first).
type record struct {
	key         string
	failures    int       // within the window that began at first
	first       time.Time // start of the counting window
	last        time.Time // latest failure: the eviction order
	lockedUntil time.Time // zero: not locked
	elem        *list.Element
}

// Limiter counts failures per key. It is safe for concurrent use.
type Limiter struct {
	cfg   Config
	mu    sync.Mutex
	keys  map[string]*record
	order list.List // of *record, oldest last failure first
	evict uint64
}

// New returns a Limiter with cfg's zero fields set to the defaults.
func New(cfg Config) *Limiter {
	cfg.populate()
	return &Limiter{cfg: cfg, keys: make(map[string]*record)}
}

// Config returns the limiter's configuration with defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }

// Check reports whether key may try now; when it may not, retryAfter is how
// long its lockout still lasts.
func (l *Limiter) Check(key string, now time.Time) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.keys[key]
	if r == nil || !now.Before(r.lockedUntil) {
		return 0, true
	}
	return r.lockedUntil.Sub(now), false
}

// Failure records a failed attempt of key at now and reports whether key is
// now locked (by this failure or an earlier one), with the time left.
func (l *Limiter) Failure(key string, now time.Time) (retryAfter time.Duration, locked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.keys[key]
	if r == nil {
		if len(l.keys) >= l.cfg.MaxKeys {
			l.evictOldest()
		}
		r = &record{key: key, first: now}
		r.elem = l.order.PushBack(r)
		l.keys[key] = r
	} else {
		l.order.MoveToBack(r.elem)
	}
	r.last = now
	if now.Before(r.lockedUntil) {
		return r.lockedUntil.Sub(now), true // a caller that did not Check first
	}
	if now.Sub(r.first) >= l.cfg.Window {
		r.failures, r.first = 0, now
	}
	r.failures++
	if r.failures < l.cfg.MaxFailures {
		return 0, false
	}
	r.failures, r.first, r.lockedUntil = 0, now, now.Add(l.cfg.Lockout)
	return l.cfg.Lockout, true
}

// Success forgets key's failures (and any lockout).
func (l *Limiter) Success(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.keys[key]; r != nil {
		l.order.Remove(r.elem)
		delete(l.keys, key)
	}
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Evictions returns how many keys were forgotten to respect MaxKeys.
func (l *Limiter) Evictions() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.evict
}

func (l *Limiter) evictOldest() {
	front := l.order.Front()
	if front == nil {
		return
	}
	r := l.order.Remove(front).(*record)
	delete(l.keys, r.key)
	l.evict++
}
