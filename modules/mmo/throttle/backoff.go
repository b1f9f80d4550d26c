package throttle

import (
	"container/list"
	"sync"
	"time"
)

// BackoffConfig configures a Backoff. The zero value means the documented
// defaults.
type BackoffConfig struct {
	// Free is how many failures a key may have before any delay; 0 means 3.
	Free int
	// Base is the delay after failure Free+1; each further failure doubles
	// it; 0 means 1 s.
	Base time.Duration
	// Max caps the delay; 0 means 5 min.
	Max time.Duration
	// Forget: a key with no failure for this long starts again from zero;
	// 0 means 1 h.
	Forget time.Duration
	// MaxKeys bounds the keys tracked; 0 means 10,000.
	MaxKeys int
}

// Defaults of BackoffConfig's zero fields.
const (
	DefaultFree   = 3
	DefaultBase   = time.Second
	DefaultMax    = 5 * time.Minute
	DefaultForget = time.Hour
)

func (c *BackoffConfig) populate() {
	if c.Free <= 0 {
		c.Free = DefaultFree
	}
	if c.Base <= 0 {
		c.Base = DefaultBase
	}
	if c.Max <= 0 {
		c.Max = DefaultMax
	}
	if c.Max < c.Base {
		c.Max = c.Base
	}
	if c.Forget <= 0 {
		c.Forget = DefaultForget
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
}

// backoffRecord is one tracked key, in Backoff.keys and Backoff.order
// (sorted by last failure, oldest first).
type backoffRecord struct {
	key      string
	failures int
	last     time.Time
	until    time.Time // no attempt before this
	elem     *list.Element
}

// Backoff delays a key's attempts after repeated failures: the first Free
// failures cost nothing, then each failure makes the key wait Base, 2·Base,
// 4·Base … up to Max before its next attempt. There is never a hard lock:
// a key may always try again once its delay has passed, and it is
// forgotten after Forget without failures. It is safe for concurrent use.
type Backoff struct {
	cfg   BackoffConfig
	mu    sync.Mutex
	keys  map[string]*backoffRecord
	order list.List
	evict uint64
}

// NewBackoff returns a Backoff with cfg's zero fields set to the defaults.
func NewBackoff(cfg BackoffConfig) *Backoff {
	cfg.populate()
	return &Backoff{cfg: cfg, keys: make(map[string]*backoffRecord)}
}

// Config returns the configuration with defaults filled in.
func (b *Backoff) Config() BackoffConfig { return b.cfg }

// Delay is the wait imposed after a key's n-th consecutive failure.
func (c BackoffConfig) Delay(n int) time.Duration {
	if n <= c.Free {
		return 0
	}
	d := c.Base
	for i := c.Free + 1; i < n && d < c.Max; i++ {
		d *= 2
	}
	return min(d, c.Max)
}

// get returns key's live record, or nil (a forgotten one is removed).
func (b *Backoff) get(key string, now time.Time) *backoffRecord {
	r := b.keys[key]
	if r != nil && now.Sub(r.last) >= b.cfg.Forget {
		b.order.Remove(r.elem)
		delete(b.keys, key)
		return nil
	}
	return r
}

// Check reports whether key may try now; when it may not, retryAfter is
// how long it must still wait.
func (b *Backoff) Check(key string, now time.Time) (retryAfter time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.get(key, now)
	if r == nil || !now.Before(r.until) {
		return 0, true
	}
	return r.until.Sub(now), false
}

// Failure records a failed attempt of key at now and returns the delay it
// imposes before the key's next attempt (0 while failures are free).
func (b *Backoff) Failure(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.get(key, now)
	if r == nil {
		if len(b.keys) >= b.cfg.MaxKeys {
			if front := b.order.Front(); front != nil {
				old := b.order.Remove(front).(*backoffRecord)
				delete(b.keys, old.key)
				b.evict++
			}
		}
		r = &backoffRecord{key: key}
		r.elem = b.order.PushBack(r)
		b.keys[key] = r
	} else {
		b.order.MoveToBack(r.elem)
	}
	r.failures++
	r.last = now
	d := b.cfg.Delay(r.failures)
	r.until = now.Add(d)
	return d
}

// Success forgets key's failures.
func (b *Backoff) Success(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.keys[key]; r != nil {
		b.order.Remove(r.elem)
		delete(b.keys, key)
	}
}

// Len returns the number of keys tracked.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.keys)
}

// Evictions returns how many keys were forgotten to respect MaxKeys.
func (b *Backoff) Evictions() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.evict
}
