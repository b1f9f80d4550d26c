package ops

import (
	"sync"
	"time"
)

// Sample is one second of the server as the status page plots it.
type Sample struct {
	Time       time.Time
	TickAvgMS  float64 // mean tick duration over the second
	TickPeakMS float64 // longest tick of the second
	Players    int
	BytesIn    float64 // bytes/s received
	BytesOut   float64 // bytes/s sent
	Drops      float64 // datagrams and inbox events dropped per second
}

// History is a fixed-size ring of the newest Samples; safe from any
// goroutine (its lock is never held by the game thread).
type History struct {
	mu   sync.Mutex
	ring []Sample
	next int
	full bool
}

// NewHistory keeps the newest n samples.
func NewHistory(n int) *History { return &History{ring: make([]Sample, max(n, 1))} }

// Add appends a sample, overwriting the oldest when full.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	if h.next == 0 {
		h.full = true
	}
}

// Samples returns the samples, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Sample(nil), h.ring[:h.next]...)
	}
	out := make([]Sample, 0, len(h.ring))
	out = append(out, h.ring[h.next:]...)
	return append(out, h.ring[:h.next]...)
}

// sampler turns successive snapshots into per-second Samples.
type sampler struct {
	src  Source
	tick *TickRecorder
	hist *History

	primed                  bool
	at                      time.Time
	ticks                   uint64
	tickSum                 time.Duration
	bytesIn, bytesOut, drop uint64
}

// sample takes one Sample at now (from the second sample on: the first
// only sets the baseline).
func (p *sampler) sample(now time.Time) {
	s := p.src.Snapshot()
	var in, out, drop uint64
	for _, n := range s.Net {
		switch n.Family {
		case "bytes_received_total":
			in += n.Value
		case "bytes_sent_total":
			out += n.Value
		case "datagrams_dropped_total", "inbox_drops_total":
			drop += n.Value
		}
	}
	ticks, sum := p.tick.totals()
	peak := p.tick.takePeak()
	if p.primed {
		el := now.Sub(p.at).Seconds()
		if el <= 0 {
			el = 1
		}
		smp := Sample{Time: now, Players: s.Players, TickPeakMS: ms(peak),
			BytesIn: float64(in-p.bytesIn) / el, BytesOut: float64(out-p.bytesOut) / el, Drops: float64(drop-p.drop) / el}
		if n := ticks - p.ticks; n > 0 {
			smp.TickAvgMS = ms(sum-p.tickSum) / float64(n)
		}
		p.hist.Add(smp)
	}
	p.primed, p.at, p.ticks, p.tickSum = true, now, ticks, sum
	p.bytesIn, p.bytesOut, p.drop = in, out, drop
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
