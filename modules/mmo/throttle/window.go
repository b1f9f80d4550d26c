package throttle

import (
	"container/list"
	"sync"
	"time"
)

// WindowConfig configures a Window: at most Max events per key in any
// span of Per.
type WindowConfig struct {
	// Max is the most events a key may have within Per; 0 means 10.
	Max int
	// Per is the span; 0 means 60 s.
	Per time.Duration
	// MaxKeys bounds the keys tracked; 0 means 100,000.
	MaxKeys int
}

// Defaults of WindowConfig's zero fields.
const (
	DefaultWindowMax     = 10
	DefaultWindowPer     = time.Minute
	DefaultWindowMaxKeys = 100_000
)

func (c *WindowConfig) populate() {
	if c.Max <= 0 {
		c.Max = DefaultWindowMax
	}
	if c.Per <= 0 {
		c.Per = DefaultWindowPer
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultWindowMaxKeys
	}
}

// windowKey is one tracked key: its events within Per, oldest first, in
// Window.keys and Window.order (sorted by latest event, oldest first).
type windowKey struct {
	key  string
	at   []time.Time
	elem *list.Element
}

// Window allows each key at most Max events in any span of Per (a sliding
// log: exact, no burst beyond Max). An event is taken before the work it
// stands for, so attempts in flight at once are counted as they start.
//
// Memory is bounded: at most MaxKeys keys of at most Max times each. A key
// whose events all lie more than Per back is forgotten when room is
// needed; when every tracked key has an event within Per, a new key is
// refused until the oldest ages out, rather than forgetting a live key
// (forgetting would hand that key a fresh allowance). It is safe for
// concurrent use.
type Window struct {
	cfg   WindowConfig
	mu    sync.Mutex
	keys  map[string]*windowKey
	order list.List // of *windowKey
	full  uint64
}

// NewWindow returns a Window with cfg's zero fields set to the defaults.
func NewWindow(cfg WindowConfig) *Window {
	cfg.populate()
	return &Window{cfg: cfg, keys: make(map[string]*windowKey)}
}

// Config returns the configuration with defaults filled in.
func (w *Window) Config() WindowConfig { return w.cfg }

// prune drops k's events more than Per before now.
func (w *Window) prune(k *windowKey, now time.Time) {
	i := 0
	for i < len(k.at) && now.Sub(k.at[i]) >= w.cfg.Per {
		i++
	}
	if i > 0 {
		k.at = append(k.at[:0], k.at[i:]...)
	}
}

// Take takes one event of key at now, or reports how long until one is
// allowed.
func (w *Window) Take(key string, now time.Time) (retryAfter time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if k == nil {
		if wait, ok := w.makeRoom(now); !ok {
			w.full++
			return wait, false
		}
		k = &windowKey{key: key}
		k.elem = w.order.PushBack(k)
		w.keys[key] = k
	}
	w.prune(k, now)
	if len(k.at) >= w.cfg.Max {
		return max(k.at[0].Add(w.cfg.Per).Sub(now), time.Millisecond), false
	}
	k.at = append(k.at, now)
	w.order.MoveToBack(k.elem)
	return 0, true
}

// makeRoom forgets the key whose latest event is oldest if the table is
// full and that key has nothing left within Per; else it reports how long
// until it will have.
func (w *Window) makeRoom(now time.Time) (retryAfter time.Duration, ok bool) {
	if len(w.keys) < w.cfg.MaxKeys {
		return 0, true
	}
	front := w.order.Front()
	if front == nil {
		return 0, true
	}
	old := front.Value.(*windowKey)
	if n := len(old.at); n > 0 && now.Sub(old.at[n-1]) < w.cfg.Per {
		return max(old.at[n-1].Add(w.cfg.Per).Sub(now), time.Millisecond), false
	}
	w.order.Remove(front)
	delete(w.keys, old.key)
	return 0, true
}

// Len returns the number of keys tracked.
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.keys)
}

// Full returns how many new keys were refused because every tracked key
// had an event within Per.
func (w *Window) Full() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.full
}
