package main

import "math"

// histBuckets covers 1 µs to over a minute in steps of 1%.
const histBuckets = 1900

// logBase is the width of a bucket: 1%.
var logBase = math.Log(1.01)

// hist counts round trips (µs) in buckets 1% wide, so that the client
// processes' counts add up to the percentiles of all of them.
type hist []uint64

func newHist() hist { return make(hist, histBuckets) }

func (h hist) add(us int64) {
	b := 0
	if us > 1 {
		b = min(int(math.Log(float64(us))/logBase), histBuckets-1)
	}
	h[b]++
}

func (h hist) merge(o hist) {
	for i := range min(len(h), len(o)) {
		h[i] += o[i]
	}
}

// quantile returns the lower bound (µs) of the bucket holding quantile q.
func (h hist) quantile(q float64) float64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	want := uint64(q * float64(n))
	var seen uint64
	for i, c := range h {
		if seen += c; seen > want {
			return math.Exp(float64(i) * logBase)
		}
	}
	return 0
}
