package ops

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TickRecorder takes the duration of every tick from the game thread and
// keeps it where readers can get it without a lock: a Prometheus histogram
// (atomic buckets), counters, the time the last tick ended and the longest
// tick since the sampler last looked.
type TickRecorder struct {
	period   time.Duration
	hist     prometheus.Histogram
	count    atomic.Uint64
	sumNanos atomic.Uint64
	overruns atomic.Uint64
	lastEnd  atomic.Int64 // unix nanoseconds; 0 before the first tick
	peak     atomic.Int64 // nanoseconds; reset by the sampler every second
}

// tickBuckets are upper bounds in seconds, around a 60 Hz tick (16.7 ms).
var tickBuckets = []float64{0.0005, 0.001, 0.002, 0.004, 0.008, 0.0167, 0.033, 0.066, 0.133, 0.25, 0.5, 1}

// NewTickRecorder returns a recorder for a loop whose tick period is period
// (a tick longer than it is an overrun).
func NewTickRecorder(period time.Duration) *TickRecorder {
	return &TickRecorder{period: period, hist: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "sparkhost_tick_duration_seconds", Help: "Time the game thread spent in one tick.", Buckets: tickBuckets,
	})}
}

// Observe records one tick that took d and ended at end. Game thread; it
// allocates nothing and takes no lock.
func (r *TickRecorder) Observe(end time.Time, d time.Duration) {
	r.hist.Observe(d.Seconds())
	r.count.Add(1)
	r.sumNanos.Add(uint64(d))
	if d > r.period {
		r.overruns.Add(1)
	}
	r.lastEnd.Store(end.UnixNano())
	for {
		p := r.peak.Load()
		if int64(d) <= p || r.peak.CompareAndSwap(p, int64(d)) {
			break
		}
	}
}

// LastTick is when the last tick ended (zero before the first).
func (r *TickRecorder) LastTick() time.Time {
	n := r.lastEnd.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Overruns counts the ticks longer than the tick period.
func (r *TickRecorder) Overruns() uint64 { return r.overruns.Load() }

// totals returns the ticks observed and their summed duration.
func (r *TickRecorder) totals() (uint64, time.Duration) {
	return r.count.Load(), time.Duration(r.sumNanos.Load())
}

// takePeak returns the longest tick since the last call and resets it.
func (r *TickRecorder) takePeak() time.Duration { return time.Duration(r.peak.Swap(0)) }
