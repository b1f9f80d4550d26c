package throttle

import (
	"container/list"
	"sync"
	"time"
)

// RateConfig configures a Rate: at most Burst events per key at once,
// refilled at Burst per Per (a token bucket).
type RateConfig struct {
	// Burst is the most events a key may have in a row; 0 means 5.
	Burst int
	// Per is how long a key takes to earn Burst events back; 0 means 1 h.
	Per time.Duration
	// MaxKeys bounds the keys tracked; 0 means 10,000.
	MaxKeys int
}

func (c *RateConfig) populate() {
	if c.Burst <= 0 {
		c.Burst = 5
	}
	if c.Per <= 0 {
		c.Per = time.Hour
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
}

type bucket struct {
	key    string
	tokens float64
	at     time.Time // when tokens was computed
	elem   *list.Element
}

// Rate limits events per key (registrations per address) with a token
// bucket. A key that is forgotten to respect MaxKeys (the one touched
// longest ago) starts again with a full bucket. It is safe for concurrent
// use.
type Rate struct {
	cfg   RateConfig
	mu    sync.Mutex
	keys  map[string]*bucket
	order list.List // oldest touch first
}

// NewRate returns a Rate with cfg's zero fields set to the defaults.
func NewRate(cfg RateConfig) *Rate {
	cfg.populate()
	return &Rate{cfg: cfg, keys: make(map[string]*bucket)}
}

// Config returns the configuration with defaults filled in.
func (r *Rate) Config() RateConfig { return r.cfg }

// Allow takes one event of key at now, or reports how long until one is
// available.
func (r *Rate) Allow(key string, now time.Time) (retryAfter time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	burst := float64(r.cfg.Burst)
	every := r.cfg.Per / time.Duration(r.cfg.Burst) // one token per
	b := r.keys[key]
	if b == nil {
		if len(r.keys) >= r.cfg.MaxKeys {
			if front := r.order.Front(); front != nil {
				old := r.order.Remove(front).(*bucket)
				delete(r.keys, old.key)
			}
		}
		b = &bucket{key: key, tokens: burst, at: now}
		b.elem = r.order.PushBack(b)
		r.keys[key] = b
	} else {
		r.order.MoveToBack(b.elem)
		if el := now.Sub(b.at); el > 0 {
			b.tokens = min(burst, b.tokens+float64(el)/float64(every))
		}
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	wait := time.Duration((1 - b.tokens) * float64(every))
	return max(wait, time.Millisecond), false
}

// Len returns the number of keys tracked.
func (r *Rate) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}
