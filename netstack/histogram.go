package netstack

import (
	"math"
	"sync/atomic"
)

// histogram is a fixed-bucket histogram updated atomically: the server's
// distributions of its sessions (RTT, loss, bandwidth, send-queue delay),
// with bounded buckets and no label per peer.
type histogram struct {
	bounds []float64       // upper bounds, ascending; +Inf is implied
	counts []atomic.Uint64 // per bucket (not cumulative), len(bounds)+1
	sum    atomic.Uint64   // float64 bits
	n      atomic.Uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// observe adds one value.
func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.n.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// sessionHistograms are a server's distributions of its sessions: each
// session's estimates once a second (session-seconds), and every flush's
// send-queue delay.
type sessionHistograms struct {
	rtt, rttVar, loss, bandwidth, queueDelay *histogram
}

func newSessionHistograms() *sessionHistograms {
	return &sessionHistograms{
		rtt:        newHistogram(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2),
		rttVar:     newHistogram(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
		loss:       newHistogram(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5),
		bandwidth:  newHistogram(4e3, 8e3, 16e3, 32e3, 64e3, 128e3, 256e3, 512e3, 1e6, 4e6, 16e6),
		queueDelay: newHistogram(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1),
	}
}

// HistogramSample is one of the server's session histograms as an exporter
// sees it: a Prometheus-style family name (without the exporter's prefix),
// its buckets' upper bounds and cumulative counts (the last bound is
// +Inf, implied), the sum and the count.
type HistogramSample struct {
	Family string
	Help   string
	Bounds []float64
	Counts []uint64 // cumulative, one per bound
	Sum    float64
	Count  uint64
}

// histogramTable lists the session histograms exporters see.
var histogramTable = []struct {
	family, help string
	get          func(*sessionHistograms) *histogram
}{
	{"session_rtt_seconds", "Sessions' smoothed round-trip time, one observation per session per second.", func(h *sessionHistograms) *histogram { return h.rtt }},
	{"session_rtt_variance_seconds", "Sessions' round-trip time variation (RFC 6298 RTTVAR), one observation per session per second.", func(h *sessionHistograms) *histogram { return h.rttVar }},
	{"session_loss_ratio", "Sessions' round-trip probe loss (0..1, smoothed), one observation per session per second.", func(h *sessionHistograms) *histogram { return h.loss }},
	{"session_bandwidth_bytes_per_second", "Sessions' estimated bandwidth toward the client (delivery-rate samples), one observation per session per second.", func(h *sessionHistograms) *histogram { return h.bandwidth }},
	{"session_send_queue_delay_seconds", "How long the oldest message a flush sent had waited in the server's send queue, per flush.", func(h *sessionHistograms) *histogram { return h.queueDelay }},
}

// AppendHistograms appends the server's session histograms to dst.
func (s *Server) AppendHistograms(dst []HistogramSample) []HistogramSample {
	for _, t := range histogramTable {
		h := t.get(s.hist)
		hs := HistogramSample{Family: t.family, Help: t.help, Bounds: h.bounds, Counts: make([]uint64, len(h.bounds)),
			Sum: math.Float64frombits(h.sum.Load())}
		var cum uint64
		for i := range h.bounds {
			cum += h.counts[i].Load()
			hs.Counts[i] = cum
		}
		hs.Count = cum + h.counts[len(h.bounds)].Load()
		dst = append(dst, hs)
	}
	return dst
}
