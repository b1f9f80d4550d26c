package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Bucket is one token bucket shared by every source: a global budget such as
// "signatures per second across all sources". It starts full. Like Limiter it
// keeps a GCRA theoretical arrival time, so Allow is a few integer operations
// under one mutex and never allocates. The zero Bucket is not usable; build it
// with NewBucket.
type Bucket struct {
	interval  int64 // ns per token
	tolerance int64 // (burst-1)·interval

	mu      sync.Mutex
	epoch   time.Time
	started bool
	tat     int64
}

// BucketConfig configures a Bucket. Unlike Config it has no defaults: every
// global budget names its own (see the netstack server's configuration).
type BucketConfig struct {
	// Burst is the bucket size in tokens: how many may be spent at once.
	Burst int
	// RefillPerSecond is the refill rate in tokens per second.
	RefillPerSecond float64
}

// ErrBucketConfig is wrapped by BucketConfig.Validate's errors.
var ErrBucketConfig = errors.New("ratelimit: invalid bucket config")

// Validate reports a BucketConfig that NewBucket would refuse: burst outside
// 1..2^20 or a refill rate outside [0.001, 1e9] per second.
func (c BucketConfig) Validate() error {
	switch {
	case c.Burst < 1 || c.Burst > maxBurst:
		return fmt.Errorf("%w: Burst %d outside 1..%d", ErrBucketConfig, c.Burst, maxBurst)
	case math.IsNaN(c.RefillPerSecond) || c.RefillPerSecond < minRefill || c.RefillPerSecond > maxRefill:
		return fmt.Errorf("%w: RefillPerSecond %v outside %v..%v", ErrBucketConfig, c.RefillPerSecond, minRefill, maxRefill)
	}
	return nil
}

// NewBucket returns a full Bucket. It panics if cfg.Validate fails.
func NewBucket(cfg BucketConfig) *Bucket {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	interval := max(int64(float64(time.Second)/cfg.RefillPerSecond), 1)
	return &Bucket{interval: interval, tolerance: int64(cfg.Burst-1) * interval}
}

// Allow spends one token at time now and reports whether there was one. Times
// are handled as in Limiter.Allow: an earlier time than one already seen
// refills nothing, and offsets are clamped far from overflow.
func (b *Bucket) Allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		b.epoch, b.started = now, true
	}
	const limit = 1 << 62
	t := min(max(int64(now.Sub(b.epoch)), -limit), limit)
	tat := max(b.tat, t)
	if tat-t > b.tolerance {
		return false
	}
	b.tat = tat + b.interval
	return true
}
