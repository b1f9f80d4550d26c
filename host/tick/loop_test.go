package tick

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a virtual clock: Sleep and Advance move it, nothing else does.
// Run is called on the test goroutine, so it needs no lock.
type fakeClock struct{ now time.Time }

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock               { return &fakeClock{now: epoch} }
func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Sleep(d time.Duration)   { c.now = c.now.Add(d) }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }
func (c *fakeClock) Elapsed() time.Duration  { return c.now.Sub(epoch) }

// slotAt is the spec of the schedule: slot n at start + n·1s/rate.
func slotAt(n, rate int64) time.Time { return epoch.Add(time.Duration(n * int64(time.Second) / rate)) }

// runUntil runs l on the test goroutine, calling step then cancelling when stop
// reports true.
func runUntil(t *testing.T, l *Loop, stop func(Tick) bool, step func(Tick)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Run(ctx, func(tk Tick) {
		if step != nil {
			step(tk)
		}
		if stop(tk) {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

func TestScheduleHasNoDrift(t *testing.T) {
	for _, tc := range []struct {
		rate, ticks int64
		want        time.Duration
	}{
		{60, 600, 10 * time.Second},
		{60, 60 * 3600, time.Hour},
		{7, 700, 100 * time.Second},
		{128, 128, time.Second},
		{1000, 2500, 2500 * time.Millisecond},
	} {
		t.Run("", func(t *testing.T) {
			c := newFakeClock()
			l := New(Config{Rate: int(tc.rate), Clock: c})
			runUntil(t, l, func(tk Tick) bool { return tk.Number == uint64(tc.ticks) }, func(tk Tick) {
				n := int64(tk.Number)
				if want := slotAt(n, tc.rate); !tk.Scheduled.Equal(want) || !tk.Now.Equal(want) {
					t.Fatalf("tick %d: scheduled %v now %v, want both %v", n, tk.Scheduled, tk.Now, want)
				}
				if tk.DT != time.Second/time.Duration(tc.rate) || tk.Rate != int(tc.rate) {
					t.Fatalf("tick %d: DT %v rate %d", n, tk.DT, tk.Rate)
				}
			})
			if got := c.Elapsed(); got != tc.want {
				t.Fatalf("%d ticks at %d Hz took %v of fake time, want exactly %v", tc.ticks, tc.rate, got, tc.want)
			}
			st := l.Stats()
			if st.Ticks != uint64(tc.ticks) || st.LateTicks != 0 || st.Skipped != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestDefaultsAndClamping(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, 60}, {-5, 60}, {30, 30}, {MaxRate + 1, MaxRate}} {
		if got := New(Config{Rate: tc.in, Clock: newFakeClock()}).Stats().Rate; got != tc.want {
			t.Errorf("Rate %d: got %d, want %d", tc.in, got, tc.want)
		}
	}
	if l := New(Config{}); l.maxCatchUp != DefaultMaxCatchUp || l.clock != (RealClock{}) {
		t.Errorf("zero Config: maxCatchUp %d clock %T", l.maxCatchUp, l.clock)
	}
}

func TestSlowTickRecovers(t *testing.T) {
	c := newFakeClock()
	l := New(Config{Rate: 60, Clock: c})
	var backToBack, maxBackToBack int
	var prev time.Time
	runUntil(t, l, func(tk Tick) bool { return !tk.Now.Before(epoch.Add(time.Second)) }, func(tk Tick) {
		if tk.Now.Equal(prev) {
			backToBack++
		} else {
			backToBack = 1
		}
		maxBackToBack, prev = max(maxBackToBack, backToBack), tk.Now
		if tk.Number == 5 {
			c.Advance(50 * time.Millisecond) // three periods of work
		}
	})
	st := l.Stats()
	if st.PeakTickMS < 50 {
		t.Errorf("PeakTickMS %v, want ≥ 50", st.PeakTickMS)
	}
	if st.Ticks != 60 || c.Elapsed() != time.Second {
		t.Errorf("%d ticks by %v of fake time, want 60 by exactly 1s", st.Ticks, c.Elapsed())
	}
	// Tick 5 ends at 133.33 ms, exactly slot 8: ticks 6 and 7 start after their
	// slots, tick 8 on its slot, all three back-to-back with tick 5's end.
	if st.LateTicks != 2 || st.Skipped != 0 || maxBackToBack != 3 {
		t.Errorf("late %d skipped %d back-to-back %d, want 2, 0, 3", st.LateTicks, st.Skipped, maxBackToBack)
	}
	if want := 50.0 / 60; st.AvgTickMS < want-1e-9 || st.AvgTickMS > want+1e-9 {
		t.Errorf("AvgTickMS %v, want %v", st.AvgTickMS, want)
	}
}

func TestStallIsBoundedByMaxCatchUp(t *testing.T) {
	for _, maxCatchUp := range []int{1, 5, 20} {
		t.Run("", func(t *testing.T) {
			c := newFakeClock()
			l := New(Config{Rate: 60, Clock: c, MaxCatchUp: maxCatchUp})
			var ticks []Tick
			runUntil(t, l, func(tk Tick) bool { return tk.Number == 40 }, func(tk Tick) {
				ticks = append(ticks, tk)
				if tk.Number == 10 {
					c.Advance(2*time.Second + time.Millisecond) // slot 10 + 2 s is slot 130
				}
			})
			st := l.Stats()
			const due = 120 // slots 11..130 are due when tick 10 returns
			if want := uint64(due - maxCatchUp); st.Skipped != want {
				t.Errorf("Skipped %d, want %d", st.Skipped, want)
			}
			if st.LateTicks != uint64(maxCatchUp) {
				t.Errorf("LateTicks %d, want %d", st.LateTicks, maxCatchUp)
			}
			stallEnd := ticks[10].Now
			for i, tk := range ticks[10 : 10+maxCatchUp] {
				if !tk.Now.Equal(stallEnd) {
					t.Fatalf("catch-up tick %d ran at %v, want back-to-back at %v", tk.Number, tk.Now, stallEnd)
				}
				// The newest slots run; the phase of the schedule is kept.
				if want := slotAt(int64(131-maxCatchUp+i), 60); !tk.Scheduled.Equal(want) {
					t.Errorf("tick %d scheduled %v, want %v", tk.Number, tk.Scheduled, want)
				}
			}
			next := ticks[10+maxCatchUp]
			if want := slotAt(131, 60); !next.Now.Equal(want) || !next.Scheduled.Equal(want) {
				t.Errorf("first tick after catch-up at %v (slot %v), want on slot 131 %v", next.Now, next.Scheduled, want)
			}
		})
	}
}

func TestSetRateSwitchesPeriod(t *testing.T) {
	c := newFakeClock()
	l := New(Config{Rate: 60, Clock: c})
	var at61 Tick
	runUntil(t, l, func(tk Tick) bool { return tk.Number == 90 }, func(tk Tick) {
		switch tk.Number {
		case 60:
			l.SetRate(30)
			if tk.DT != time.Second/60 {
				t.Errorf("tick 60 DT %v, the new rate applies from the next tick", tk.DT)
			}
		case 61:
			at61 = tk
		}
	})
	if want := epoch.Add(time.Second + time.Second/30); !at61.Scheduled.Equal(want) || at61.DT != time.Second/30 || at61.Rate != 30 {
		t.Errorf("tick 61 %+v, want scheduled %v at 30 Hz", at61, want)
	}
	if c.Elapsed() != 2*time.Second {
		t.Errorf("60 ticks at 60 Hz + 30 at 30 Hz took %v, want exactly 2s", c.Elapsed())
	}
	if st := l.Stats(); st.Rate != 30 || st.LateTicks != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestCurrentRate(t *testing.T) {
	c := newFakeClock()
	l := New(Config{Rate: 50, Clock: c})
	runUntil(t, l, func(tk Tick) bool { return tk.Number == 150 }, nil)
	if got := l.Stats().CurrentRate; got != 50 {
		t.Errorf("CurrentRate %v, want 50", got)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	t.Run("from step", func(t *testing.T) {
		l := New(Config{Clock: newFakeClock()})
		runUntil(t, l, func(tk Tick) bool { return tk.Number == 3 }, func(tk Tick) {
			if tk.Number > 3 {
				t.Fatalf("tick %d ran after cancel", tk.Number)
			}
		})
		if l.Stats().Ticks != 3 {
			t.Errorf("ticks %d, want 3", l.Stats().Ticks)
		}
	})
	t.Run("before Run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l := New(Config{Clock: newFakeClock()})
		if err := l.Run(ctx, func(Tick) { t.Fatal("step ran") }); !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	})
	t.Run("real clock interrupts the sleep", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(Config{Rate: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := l.Run(ctx, func(Tick) { t.Error("a 1 Hz tick ran within 100 ms") })
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 100*time.Millisecond {
				t.Errorf("Run = %v after %v, want DeadlineExceeded after exactly 100ms", err, time.Since(start))
			}
		})
	})
}

func TestRunTwice(t *testing.T) {
	c := newFakeClock()
	l := New(Config{Clock: c})
	runUntil(t, l, func(tk Tick) bool {
		if err := l.Run(context.Background(), func(Tick) {}); !errors.Is(err, ErrRunning) {
			t.Errorf("nested Run = %v, want ErrRunning", err)
		}
		return true
	}, nil)
	runUntil(t, l, func(tk Tick) bool { return true }, func(tk Tick) {
		if tk.Number != 2 {
			t.Errorf("second run's first tick is %d, want 2 (numbers continue)", tk.Number)
		}
	})
}

// TestRealClockVirtualTime runs the real-clock path (timer, no injected clock)
// in a synctest bubble, where time is virtual and the schedule exact.
func TestRealClockVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rate: 60})
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_ = l.Run(ctx, func(tk Tick) {
			if tk.Number == 600 {
				cancel()
			}
		})
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("600 ticks at 60 Hz took %v of bubble time, want exactly 10s", got)
		}
		if st := l.Stats(); st.Ticks != 600 || st.LateTicks != 0 || st.CurrentRate != 60 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestRealClock runs briefly in real time. Its bounds are generous on purpose:
// it checks that the loop ticks and stops, not how precisely.
func TestRealClock(t *testing.T) {
	l := New(Config{Rate: 100})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var n uint64
	start := time.Now()
	err := l.Run(ctx, func(tk Tick) { n = tk.Number })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run returned %v after its 300ms deadline", el)
	}
	st := l.Stats()
	if n == 0 || st.Ticks != n || n > 31 {
		t.Errorf("%d ticks (stats %d) in 300ms at 100 Hz, want 1..31", n, st.Ticks)
	}
}

func TestStatsFromOtherGoroutine(t *testing.T) {
	l := New(Config{Rate: MaxRate})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = l.Stats()
			l.SetRate(MaxRate)
		}
	}()
	_ = l.Run(ctx, func(Tick) {})
	<-done
}

func TestRunAllocatesNothingPerTick(t *testing.T) {
	run := func(ticks uint64) func() {
		return func() {
			l := New(Config{Clock: newFakeClock()})
			ctx, cancel := context.WithCancel(context.Background())
			_ = l.Run(ctx, func(tk Tick) {
				if tk.Number == ticks {
					cancel()
				}
			})
		}
	}
	short, long := testing.AllocsPerRun(5, run(10)), testing.AllocsPerRun(5, run(10010))
	if long > short {
		t.Errorf("10 ticks allocate %v, 10010 ticks %v: the loop allocates per tick", short, long)
	}
}
