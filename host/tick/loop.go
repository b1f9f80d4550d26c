// Package tick owns the fixed-step game loop of the DedicatedServer: the one
// game thread that calls the simulation's step function at a fixed rate, on a
// schedule computed from its start so that it never drifts, and that measures
// how long each step takes.
//
// It must never run two steps at once, sleep inside a step, or turn a long
// stall into an unbounded burst of catch-up ticks.
package tick

import (
	"context"
	"errors"
	"log/slog"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and bounds of Config.
const (
	DefaultRate       = 60   // Hz
	MaxRate           = 1000 // Hz; a higher rate is clamped to it
	DefaultMaxCatchUp = 5    // ticks
)

// RegionTick is the name of the runtime/trace region each tick's step runs
// in: an execution trace shows where every tick began and ended.
const RegionTick = "game tick"

// ErrRunning is returned by Run when the Loop is already running.
var ErrRunning = errors.New("tick: loop is already running")

// Config configures a Loop. Its zero value is a 60 Hz loop on the real clock.
type Config struct {
	Rate       int   // ticks per second (Hz); 0 or less means DefaultRate, above MaxRate means MaxRate
	Clock      Clock // time source; nil means RealClock{}
	MaxCatchUp int   // most due ticks run back-to-back when late (see Loop); 0 or less means DefaultMaxCatchUp
	// Slice is the scheduling slice Run asks the kernel for, for the game
	// thread (see claimThread); 0 leaves the thread to the kernel's default;
	// otherwise MinSlice..MaxSlice, or Run logs a refusal and runs without.
	Slice time.Duration
	Log   *slog.Logger // where Run says what it set for its thread; nil means nowhere
}

// Tick is what the step function learns about the tick it runs.
type Tick struct {
	Number    uint64        // 1 for the first tick of a Loop, then +1 per tick run (skipped slots get no number)
	DT        time.Duration // the fixed step, time.Second/Rate rounded down to the nanosecond
	Rate      int           // ticks per second (Hz) of this tick; 1/Rate is DT without rounding
	Now       time.Time     // when the tick started
	Scheduled time.Time     // the slot the tick was due at; Now minus Scheduled is its lateness
}

// Stats are a Loop's counters since New. Durations are in milliseconds.
type Stats struct {
	Ticks        uint64  // ticks run
	AvgTickMS    float64 // mean time spent inside step
	PeakTickMS   float64 // longest time spent inside step
	CurrentRate  float64 // ticks per second measured over the last full second of ticks
	RecentPeakMS float64 // longest time spent inside step during that last full second
	Rate         int     // configured ticks per second (Hz), including a pending SetRate
	LateTicks    uint64  // ticks that started after their slot because an earlier tick or a stall overran
	Skipped      uint64  // slots dropped, never run, because the loop was more than MaxCatchUp ticks behind
}

// Loop is a fixed-step tick loop. Run calls step on one goroutine; SetRate and
// Stats are safe from any goroutine.
//
// Schedule: tick n is due at start + n·time.Second/Rate (integer nanoseconds
// from the start; see schedule), so N ticks at 60 Hz end exactly N/60 s after
// the start however the steps' durations vary. Run sleeps until a tick's slot,
// then calls step.
//
// Late ticks: when a step (or the process) overruns, the ticks whose slots have
// passed run back-to-back, without sleeping, until the loop is back on the
// schedule; the simulation keeps its fixed step and catches up in wall time.
// At most MaxCatchUp due ticks are caught up: when more slots than that are
// due, the oldest are dropped (counted in Skipped) and only the newest
// MaxCatchUp run. The schedule keeps its phase: the loop moves forward by whole
// slots and is never re-anchored to the moment it woke up. Under a sustained
// overload the loop therefore runs continuously, never more than MaxCatchUp
// ticks behind, and Skipped grows.
//
// SetRate re-bases the schedule: the new rate's slots are counted from the slot
// of the last tick run.
type Loop struct {
	clock      Clock
	maxCatchUp int64
	slice      time.Duration
	log        *slog.Logger
	rate       atomic.Int64 // configured Hz, read at every tick
	running    atomic.Bool

	mu sync.Mutex
	st counters
}

// counters are the Stats behind mu, updated once per tick.
type counters struct {
	ticks, late, skipped uint64
	total, peak          time.Duration
	windowStart          time.Time
	windowTicks          uint64
	currentRate          float64
	windowPeak           time.Duration // the current window's longest step
	recentPeak           time.Duration // the last full window's longest step
}

// New returns a Loop configured by cfg; it does not start it.
func New(cfg Config) *Loop {
	l := &Loop{clock: cfg.Clock, maxCatchUp: int64(cfg.MaxCatchUp), slice: cfg.Slice, log: cfg.Log}
	if l.log == nil {
		l.log = discard
	}
	if l.clock == nil {
		l.clock = RealClock{}
	}
	if l.maxCatchUp <= 0 {
		l.maxCatchUp = DefaultMaxCatchUp
	}
	l.SetRate(cfg.Rate)
	return l
}

// SetRate sets the tick rate in Hz, effective from the next tick: 0 or less
// means DefaultRate, above MaxRate means MaxRate.
func (l *Loop) SetRate(hz int) {
	switch {
	case hz <= 0:
		hz = DefaultRate
	case hz > MaxRate:
		hz = MaxRate
	}
	l.rate.Store(int64(hz))
}

// Run calls step once per tick until ctx is done, then returns ctx.Err(). A
// panic in step is not recovered: the step function owns its faults. Run
// returns ErrRunning if the Loop is already running. With a Slice, step runs
// on one OS thread that has that scheduling slice until Run returns.
func (l *Loop) Run(ctx context.Context, step func(t Tick)) error {
	if !l.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer l.running.Store(false)
	defer l.claimThread()()
	sleep := sleeper(ctx, l.clock)
	start := l.clock.Now()
	s := schedule{anchor: start, rate: l.rate.Load(), next: 1}
	last := start // slot of the last tick run
	l.mu.Lock()
	number := l.st.ticks
	l.st.windowStart, l.st.windowTicks, l.st.windowPeak = time.Time{}, 0, 0 // CurrentRate spans no gap between runs
	l.mu.Unlock()
	slept := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r := l.rate.Load(); r != s.rate {
			s = schedule{anchor: last, rate: r, next: 1}
		}
		due := s.at(s.next)
		now := l.clock.Now()
		if now.Before(due) {
			if err := sleep(due.Sub(now)); err != nil {
				return err
			}
			slept = true
			continue // the rate or ctx may have changed while asleep
		}
		var skip int64
		if backlog := s.dueThrough(now) - s.next + 1; backlog > l.maxCatchUp {
			skip = backlog - l.maxCatchUp
			s.next += skip
			due = s.at(s.next)
		}
		// A timer wakes a little after the slot it was set for; that is not
		// lateness. Lateness is an overrun: no sleep, or one that lost a slot.
		late := now.After(due) && (!slept || now.Sub(due) >= s.period())
		slept = false
		number++
		region := trace.StartRegion(ctx, RegionTick) // an execution trace's tick boundaries
		step(Tick{Number: number, DT: s.period(), Rate: int(s.rate), Now: now, Scheduled: due})
		region.End()
		l.record(now, l.clock.Now(), late, skip)
		last = due
		s.advance()
	}
}

// record adds one tick to the counters.
func (l *Loop) record(start, end time.Time, late bool, skipped int64) {
	d := end.Sub(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.st
	c.ticks++
	c.total += d
	c.peak = max(c.peak, d)
	if late {
		c.late++
	}
	c.skipped += uint64(skipped)
	if c.windowStart.IsZero() {
		c.windowStart = start
	} else if el := start.Sub(c.windowStart); el >= time.Second {
		c.currentRate = float64(c.windowTicks) / el.Seconds()
		c.recentPeak = c.windowPeak
		c.windowStart, c.windowTicks, c.windowPeak = start, 0, 0
	}
	c.windowTicks++
	c.windowPeak = max(c.windowPeak, d)
}

// Stats returns the Loop's counters. It is safe to call from any goroutine.
func (l *Loop) Stats() Stats {
	l.mu.Lock()
	c := l.st
	l.mu.Unlock()
	s := Stats{
		Ticks:        c.ticks,
		PeakTickMS:   ms(c.peak),
		CurrentRate:  c.currentRate,
		RecentPeakMS: ms(c.recentPeak),
		Rate:         int(l.rate.Load()),
		LateTicks:    c.late,
		Skipped:      c.skipped,
	}
	if c.ticks > 0 {
		s.AvgTickMS = ms(c.total) / float64(c.ticks)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
