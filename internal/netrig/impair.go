package netrig

import (
	"math/rand/v2"
	"time"
)

// direction is one way of a profile: what a forwarder applies.
type direction struct {
	delay, jitter time.Duration // delay ± jitter, uniform
	loss          float64
	duplicate     float64
	reorder       float64
	reorderDelay  time.Duration
}

// verdict is what the shaper decided for one packet.
type verdict uint8

const (
	pass verdict = iota
	lostByProfile
	lostByOutage
)

// shaper decides each packet's fate from a seeded generator: dropped, or
// delivered at one due time (two when duplicated). It is the whole
// impairment model and knows nothing of packets or devices, so that it is
// tested without namespaces. Not safe for concurrent use.
//
// Invariant: without reordering, due times never decrease (floor holds the
// last one handed out), so jitter alone keeps a direction in order; a
// reordered packet is pushed past the floor without raising it, which lets
// the packets after it overtake it.
type shaper struct {
	d           direction
	rng         *rand.Rand
	floor       time.Time // latest in-order due time handed out
	outageUntil time.Time
}

func newShaper(d direction, seed uint64) *shaper {
	return &shaper{d: d, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// admit decides for a packet entering at now. It draws the same four numbers
// for every packet, so that the decisions for the n-th packet depend on the
// seed and n only, whatever the profile was before.
func (s *shaper) admit(now time.Time) (v verdict, due time.Time, dup, reordered bool) {
	lossDraw, jitterDraw := s.rng.Float64(), s.rng.Float64()
	dupDraw, reorderDraw := s.rng.Float64(), s.rng.Float64()
	if now.Before(s.outageUntil) {
		return lostByOutage, time.Time{}, false, false
	}
	if lossDraw < s.d.loss {
		return lostByProfile, time.Time{}, false, false
	}
	wait := s.d.delay
	if s.d.jitter > 0 {
		wait += time.Duration((2*jitterDraw - 1) * float64(s.d.jitter))
	}
	due = now.Add(wait)
	if due.Before(s.floor) {
		due = s.floor
	}
	if reorderDraw < s.d.reorder {
		return pass, due.Add(s.d.reorderDelay), dupDraw < s.d.duplicate, true
	}
	s.floor = due
	return pass, due, dupDraw < s.d.duplicate, false
}

// down reports whether an outage holds at now.
func (s *shaper) down(now time.Time) bool { return now.Before(s.outageUntil) }
