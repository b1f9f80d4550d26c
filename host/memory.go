package host

import (
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
)

// applyMemoryLimit sets the process's Go memory limit while the server
// runs: server.memory_limit_mib when it is a size; with
// config.MemoryLimitAuto, what is live plus a headroom, followed as the
// heap changes (autoLimit). The collector then runs sooner as the process
// nears the limit and the runtime returns free pages, so that the resident
// size of a server holding tens of thousands of sessions stays near what
// they use rather than twice it (GOGC's headroom). The limit is the
// process's (as GOMEMLIMIT); it returns what restores the one before.
func applyMemoryLimit(cfg *config.Config, log *slog.Logger) (restore func()) {
	if cfg.Server.MemoryLimitMiB == config.MemoryLimitAuto {
		return followLiveHeap(log)
	}
	limit := cfg.MemoryLimit()
	if limit <= 0 {
		return func() {}
	}
	before := debug.SetMemoryLimit(limit)
	log.Info("memory limit set", "mib", cfg.Server.MemoryLimitMiB)
	return func() { debug.SetMemoryLimit(before) }
}

// The automatic limit: what the last collection found live, the heap's
// partly used spans and the runtime's own memory, plus a headroom for
// what the server allocates between two collections: what it allocated
// in the last autoCollectEvery at its recent rate (the largest of the
// last seconds', each second's weighing autoRateDecay less), and at
// least 1/autoHeadroomShare of what is live and autoHeadroomMin. Players
// arriving allocate fast (their handshakes) and the headroom grows
// within a second; idle players allocate little, and the headroom — the
// free pages the process keeps — falls back to the minimum. Recomputed
// every autoLimitEvery. (Measured at 20,000 idle players: no collection
// at idle, but 3–10 a second while 1,000 a second arrived — the free
// pages of their garbage count against the limit until the runtime
// returns them; docs/performance.md, "Capacity" § 1.)
const (
	autoHeadroomMin   = 8 << 20
	autoHeadroomShare = 16
	autoCollectEvery  = 2 * time.Second
	autoRateDecay     = 0.75
	autoLimitEvery    = time.Second
)

// followLiveHeap keeps the memory limit at the automatic one until the
// returned function stops it and restores the limit before.
func followLiveHeap(log *slog.Logger) (restore func()) {
	before := debug.SetMemoryLimit(-1)
	a := newAutoLimit()
	limit := a.next(time.Now())
	debug.SetMemoryLimit(limit)
	log.Info("memory limit automatic", "mib", limit>>20)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(autoLimitEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				debug.SetMemoryLimit(a.next(now))
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		debug.SetMemoryLimit(before)
	}
}

// The runtime/metrics an autoLimit reads, in this order.
var autoLimitMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/allocs:bytes",
}

// autoLimit computes the automatic limit from the runtime's figures; it
// remembers the allocation rate between calls.
type autoLimit struct {
	samples []metrics.Sample
	allocs  int64     // cumulative bytes allocated at the last call
	at      time.Time // the last call
	rate    float64   // bytes/s, the decaying maximum
}

func newAutoLimit() *autoLimit {
	a := &autoLimit{samples: make([]metrics.Sample, len(autoLimitMetrics))}
	for i, name := range autoLimitMetrics {
		a.samples[i].Name = name
	}
	return a
}

// next is the limit for the memory in use at now: everything the runtime
// holds but free and released pages and heap objects (its own memory,
// stacks and the free room inside spans in use), what the last
// collection found live, and the headroom.
func (a *autoLimit) next(now time.Time) int64 {
	metrics.Read(a.samples)
	var v [6]int64
	for i := range a.samples {
		if a.samples[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(a.samples[i].Value.Uint64())
		}
	}
	total, released, objects, free, live, allocs := v[0], v[1], v[2], v[3], v[4], v[5]
	if dt := now.Sub(a.at).Seconds(); !a.at.IsZero() && dt > 0 {
		a.rate = max(float64(allocs-a.allocs)/dt, a.rate*autoRateDecay)
	}
	a.allocs, a.at = allocs, now
	held := max(total-released-objects-free, 0)
	headroom := max(int64(a.rate*autoCollectEvery.Seconds()), live/autoHeadroomShare, autoHeadroomMin)
	return held + live + headroom
}
