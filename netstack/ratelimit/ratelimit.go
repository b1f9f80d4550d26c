// Package ratelimit owns the handshake budgets of docs/protocol.md: token
// buckets per source (Limiter: one bucket per key, such as an IPv4 address, an
// IPv6 address or a /24 or /64 prefix; the port is ignored), starting full,
// burst 16 and refill 4/s by default, and single global buckets (Bucket) for
// budgets shared by every source. The receive path asks Allow once for every
// plain-class and legacy-class datagram, after the endpoint policy and before any
// framing; a false answer means "drop unanswered and count the refusal".
//
// It must never let spoofed sources grow memory without bound, and never let a
// flood of them buy a real source more than its budget. See Limiter for how the
// bounded table keeps both promises.
package ratelimit

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Defaults of §5.5 and of this implementation.
const (
	DefaultBurst           = 16
	DefaultRefillPerSecond = 4.0
	DefaultMaxSources      = 65536
)

// Limits that keep the integer arithmetic far from overflow (see interval).
const (
	maxBurst      = 1 << 20
	minRefill     = 1e-3 // one token per 1000 s
	maxRefill     = 1e9  // one token per nanosecond
	maxMaxSources = 1 << 24
)

// Config configures a Limiter. The zero value means the §5.5 defaults.
type Config struct {
	// Burst is the bucket size in datagrams; a source seen for the first time
	// (or again after its bucket refilled completely) may send this many at
	// once. 0 means 16.
	Burst int
	// RefillPerSecond is the refill rate in tokens per second. 0 means 4.
	RefillPerSecond float64
	// MaxSources bounds the number of sources (keys) tracked at once. New takes
	// all the table's memory up front, 32 to 40 bytes per source (2 MiB at the
	// default). 0 means 65536.
	MaxSources int
}

// ErrConfig is wrapped by Config.Validate's errors.
var ErrConfig = errors.New("ratelimit: invalid config")

// Validate reports a Config that New would refuse: a negative value, a
// non-finite rate, or values beyond the supported range (burst ≤ 2^20, refill in
// [0.001, 1e9] per second, MaxSources ≤ 2^24). Zero fields are valid (defaults).
func (c Config) Validate() error {
	switch {
	case c.Burst < 0 || c.Burst > maxBurst:
		return fmt.Errorf("%w: Burst %d outside 1..%d (0 means %d)", ErrConfig, c.Burst, maxBurst, DefaultBurst)
	case math.IsNaN(c.RefillPerSecond) || c.RefillPerSecond < 0 ||
		(c.RefillPerSecond != 0 && (c.RefillPerSecond < minRefill || c.RefillPerSecond > maxRefill)):
		return fmt.Errorf("%w: RefillPerSecond %v outside %v..%v (0 means %v)", ErrConfig,
			c.RefillPerSecond, minRefill, maxRefill, DefaultRefillPerSecond)
	case c.MaxSources < 0 || c.MaxSources > maxMaxSources:
		return fmt.Errorf("%w: MaxSources %d outside 1..%d (0 means %d)", ErrConfig, c.MaxSources, maxMaxSources, DefaultMaxSources)
	}
	return nil
}

// populate returns c with zero fields replaced by the defaults.
func (c Config) populate() Config {
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.RefillPerSecond == 0 {
		c.RefillPerSecond = DefaultRefillPerSecond
	}
	if c.MaxSources == 0 {
		c.MaxSources = DefaultMaxSources
	}
	return c
}

// evictScan is how many slots Allow inspects for a bucket to evict when the
// table is full. It bounds the per-datagram work under a flood.
const evictScan = 8

// Limiter is the Connect budget. It is safe for concurrent use; one mutex guards
// the table, which is cheap next to a datagram read.
//
// Each bucket is kept as a GCRA "theoretical arrival time" tat: a source whose
// tat is at or before now has a full bucket; a datagram is admitted iff, after
// charging one interval (1/refill), tat stays within burst intervals of now. This
// is exactly a token bucket of size Burst refilled at RefillPerSecond, held in
// one int64, with no floating point on the hot path.
//
// Invariant that makes eviction safe: an entry is removed only when its bucket
// is full (tat ≤ now). A full bucket answers every future Allow exactly as a
// missing entry does (a new source also starts full), so eviction never changes
// any answer. A flood of spoofed sources therefore cannot reset a real source's
// partially spent bucket: within any window of d seconds a source is admitted at
// most Burst + d·RefillPerSecond times, evicted or not.
//
// Memory is bounded by MaxSources. When the table is full, Allow inspects the
// next evictScan entries in clock order and reuses the first full one; if none
// is full, it reuses the least spent of them (the one whose bucket is closest
// to full). A full table never turns a new source away: a spoofed flood from
// more sources than the table holds would otherwise lock every new player out.
// The price, only while the table overflows, is that an evicted source's
// partly spent bucket starts full again when it comes back; the sources a
// flood evicts first are its own single-datagram ones (their buckets are the
// least spent), a source that keeps sending stays spent and tracked, and the
// per-prefix and global budgets behind this one still bound the total.
// SpentEvictions counts those resets.
type Limiter struct {
	interval  int64 // ns per token
	tolerance int64 // (burst-1)·interval: how far tat may run ahead of now
	max       int
	seed      maphash.Seed

	mu      sync.Mutex
	epoch   time.Time // first now seen; times are kept as offsets from it
	started bool
	entries []entry // slab of tracked sources, len ≤ max, never shrinks
	index   []int32 // open addressing, linear probing: 0 empty, else slab position+1
	mask    uint32  // len(index)-1
	hand    int     // clock hand over entries for eviction

	spentEvictions uint64 // partly spent buckets evicted from a full table
}

type entry struct {
	tat  int64  // ns since epoch
	key  uint64 // the source: see AllowKey
	home uint32 // preferred index slot, cached so deletion need not rehash
}

// New returns a Limiter for cfg (zero fields mean defaults). It panics if
// cfg.Validate fails; validate operator input first to report it properly.
func New(cfg Config) *Limiter {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.populate()
	interval := int64(float64(time.Second) / cfg.RefillPerSecond)
	if interval < 1 {
		interval = 1
	}
	// A load factor of at most 1/2 keeps linear probe chains short.
	size := 1
	for size < 2*cfg.MaxSources {
		size <<= 1
	}
	return &Limiter{
		interval:  interval,
		tolerance: int64(cfg.Burst-1) * interval,
		max:       cfg.MaxSources,
		seed:      maphash.MakeSeed(),               // secret per Limiter, so spoofers cannot aim at one probe chain
		entries:   make([]entry, 0, cfg.MaxSources), // all memory up front: Allow never allocates
		index:     make([]int32, size),
		mask:      uint32(size - 1),
	}
}

// Allow charges one token to the bucket of ip at time now and reports whether
// the datagram may be processed. Times should come from one clock (time.Now);
// they are compared through time.Time.Sub, so wall-clock jumps do not matter
// when they carry monotonic readings, and a time earlier than one already seen
// refills nothing. Times more than about 146 years (2^62 ns) from the first one
// seen are clamped: past that, buckets stop refilling (fail closed), they never
// wrap around. Allow never allocates: the table's memory is taken by New.
func (l *Limiter) Allow(ip [4]byte, now time.Time) bool {
	return l.AllowKey(uint64(ip[0])<<24|uint64(ip[1])<<16|uint64(ip[2])<<8|uint64(ip[3]), now)
}

// AllowKey is Allow for any 64-bit source key: the caller decides what a
// source is (an IPv4 address as Allow does, an IPv6 address, a /24 or /64
// prefix) and keeps keys of different kinds apart, in separate Limiters or by
// construction. Allow(ip) is AllowKey of the address as a big-endian number.
func (l *Limiter) AllowKey(key uint64, now time.Time) bool {
	home := uint32(maphash.Comparable(l.seed, key)) & l.mask

	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.offset(now)
	pos, slot := l.find(key, home)
	if slot < 0 {
		slot = l.newSlot(t)
		pos, _ = l.find(key, home) // eviction may have shifted the probe chain
		l.entries[slot] = entry{tat: t, key: key, home: home}
		l.index[pos] = int32(slot + 1)
	}
	e := &l.entries[slot]
	tat := max(e.tat, t)
	if tat-t > l.tolerance {
		return false
	}
	e.tat = tat + l.interval
	return true
}

// SpentEvictions returns how many partly spent buckets a full table evicted
// for new sources (see Limiter): nonzero only under a flood from more
// sources than MaxSources.
func (l *Limiter) SpentEvictions() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spentEvictions
}

// Len returns the number of tracked sources, idle ones not yet evicted included.
// It never exceeds MaxSources.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// offset converts now to ns since the first time seen, clamped to ±2^62 so that
// adding a bounded number of intervals can never overflow.
func (l *Limiter) offset(now time.Time) int64 {
	if !l.started {
		l.epoch, l.started = now, true
	}
	const limit = 1 << 62
	return min(max(int64(now.Sub(l.epoch)), -limit), limit)
}
