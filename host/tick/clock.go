package tick

import (
	"context"
	"time"
)

// Clock is the time source of a Loop. Tests inject a fake one so that the
// loop runs in virtual time: Sleep must advance Now by at least d, the way
// time.Sleep does, or the loop spins.
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// RealClock is the Clock of package time. With it, a Loop waits on one reused
// timer that a cancelled context interrupts; an injected Clock's Sleep cannot be
// interrupted, so cancellation then takes effect when the current Sleep returns.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep calls time.Sleep(d).
func (RealClock) Sleep(d time.Duration) { time.Sleep(d) }

// sleeper returns how Run waits for the next slot: one timer for the whole run
// with the real clock (no allocation per tick, interrupted by ctx), or the
// injected clock's Sleep.
func sleeper(ctx context.Context, c Clock) func(time.Duration) error {
	if _, ok := c.(RealClock); !ok {
		return func(d time.Duration) error { c.Sleep(d); return nil }
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return func(d time.Duration) error {
		t.Reset(d)
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
