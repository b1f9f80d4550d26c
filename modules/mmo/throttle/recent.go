package throttle

import (
	"container/list"
	"sync"
	"time"
)

// RecentConfig configures a Recent.
type RecentConfig struct {
	// For is how long a key is remembered after it was last marked; 0
	// means 30 days.
	For time.Duration
	// MaxKeys bounds the keys remembered; 0 means 100,000.
	MaxKeys int
}

// Defaults of RecentConfig's zero fields.
const (
	DefaultRecentFor     = 30 * 24 * time.Hour
	DefaultRecentMaxKeys = 100_000
)

type recentKey struct {
	key  string
	at   time.Time
	elem *list.Element
}

// Recent remembers keys (an account and an address that logged into it)
// for a while after they were last marked. At most MaxKeys are kept; the
// one marked longest ago is forgotten first. It is safe for concurrent use.
type Recent struct {
	cfg   RecentConfig
	mu    sync.Mutex
	keys  map[string]*recentKey
	order list.List // of *recentKey, marked longest ago first
}

// NewRecent returns a Recent with cfg's zero fields set to the defaults.
func NewRecent(cfg RecentConfig) *Recent {
	if cfg.For <= 0 {
		cfg.For = DefaultRecentFor
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultRecentMaxKeys
	}
	return &Recent{cfg: cfg, keys: make(map[string]*recentKey)}
}

// Mark remembers key as of now.
func (r *Recent) Mark(key string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[key]
	if k == nil {
		if len(r.keys) >= r.cfg.MaxKeys {
			old := r.order.Remove(r.order.Front()).(*recentKey)
			delete(r.keys, old.key)
		}
		k = &recentKey{key: key}
		k.elem = r.order.PushBack(k)
		r.keys[key] = k
	} else {
		r.order.MoveToBack(k.elem)
	}
	k.at = now
}

// Has reports whether key was marked within For before now.
func (r *Recent) Has(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[key]
	return k != nil && now.Sub(k.at) < r.cfg.For
}

// Len returns the number of keys remembered.
func (r *Recent) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}
