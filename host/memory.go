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
// partly used spans and the runtime's own memory, plus autoHeadroomMin or
// 1/autoHeadroomShare of what is live, whichever is more — recomputed
// every autoLimitEvery, so that arrivals (a few MiB a second) never meet
// a limit below what they make live: the collector would then run
// without pause.
const (
	autoHeadroomMin   = 32 << 20
	autoHeadroomShare = 8
	autoLimitEvery    = time.Second
)

// followLiveHeap keeps the memory limit at autoLimit until the returned
// function stops it and restores the limit before.
func followLiveHeap(log *slog.Logger) (restore func()) {
	before := debug.SetMemoryLimit(-1)
	samples := autoLimitSamples()
	limit := autoLimit(samples)
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
			case <-t.C:
				debug.SetMemoryLimit(autoLimit(samples))
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		debug.SetMemoryLimit(before)
	}
}

// The runtime/metrics autoLimit reads, in this order.
var autoLimitMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
}

func autoLimitSamples() []metrics.Sample {
	s := make([]metrics.Sample, len(autoLimitMetrics))
	for i, name := range autoLimitMetrics {
		s[i].Name = name
	}
	return s
}

// autoLimit is the limit for the memory in use now: everything the
// runtime holds but free and released pages and heap objects (that is
// its own memory, stacks and the free room inside spans in use), what
// the last collection found live, and the headroom.
func autoLimit(s []metrics.Sample) int64 {
	metrics.Read(s)
	var v [5]int64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	total, released, objects, free, live := v[0], v[1], v[2], v[3], v[4]
	held := max(total-released-objects-free, 0)
	return held + live + max(live/autoHeadroomShare, autoHeadroomMin)
}
