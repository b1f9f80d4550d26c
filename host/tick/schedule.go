package tick

import "time"

// schedule maps slot numbers to instants. Slot k is due at
//
//	anchor + k·time.Second/rate
//
// computed in integer nanoseconds from the anchor, never by adding periods, so
// rounding never accumulates: rate slots span exactly one second at any rate,
// and 600 slots at 60 Hz exactly ten. Each slot is rounded down to the
// nanosecond on its own; the error of any one slot is below 1 ns.
//
// When next reaches rate the anchor moves forward by whole seconds, which keeps
// the products small (no overflow however long the server runs) without moving
// any slot: rate·time.Second/rate is exactly one second.
type schedule struct {
	anchor time.Time
	rate   int64 // slots per second, 1..MaxRate
	next   int64 // slot of the next tick, counted from anchor
}

// at returns when slot k is due.
func (s *schedule) at(k int64) time.Time {
	secs, rem := k/s.rate, k%s.rate
	return s.anchor.Add(time.Duration(secs)*time.Second + time.Duration(rem*int64(time.Second)/s.rate))
}

// dueThrough returns the last slot due at now: the largest k with at(k) ≤ now,
// or -1 if now is before the anchor.
func (s *schedule) dueThrough(now time.Time) int64 {
	e := int64(now.Sub(s.anchor))
	if e < 0 {
		return -1
	}
	secs, r := e/int64(time.Second), e%int64(time.Second)
	// Within a second, slot j is due when floor(j·1e9/rate) ≤ r, that is when
	// j·1e9 < (r+1)·rate.
	return secs*s.rate + ((r+1)*s.rate-1)/int64(time.Second)
}

// advance moves to the slot after next, re-anchoring on whole seconds.
func (s *schedule) advance() {
	s.next++
	if s.next >= s.rate {
		s.anchor = s.anchor.Add(time.Duration(s.next/s.rate) * time.Second)
		s.next %= s.rate
	}
}

// period is the fixed step, rounded down to the nanosecond.
func (s *schedule) period() time.Duration { return time.Second / time.Duration(s.rate) }
