package tick

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"
)

// Bounds of Config.Slice: what the kernel takes for a normal thread's
// requested slice (it would clamp anything outside silently; we refuse it).
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

// claimThread runs for the life of Run on its goroutine. With a Slice it
// locks the goroutine to its OS thread and asks the kernel for that short
// scheduling slice for the thread, so that when the game thread wakes on a
// CPU shared with the server's other threads (receive, send, the runtime's),
// its plugin or other processes, it runs first instead of waiting behind
// them. It logs one line saying what was set or why not, and returns what
// undoes it: the thread's slice reset, then the goroutine unlocked (a locked
// goroutine must never end locked: its thread would die with it, and the
// children that thread started with it).
func (l *Loop) claimThread() (release func()) {
	switch {
	case l.slice == 0:
		l.log.Info("game thread: scheduling left to the kernel (no short slice requested)")
		return func() {}
	case !sliceSupported:
		l.log.Info("game thread: scheduling left to the system (a requested slice is Linux-only)")
		return func() {}
	}
	runtime.LockOSThread()
	reset, err := setSlice(l.slice)
	if err != nil {
		runtime.UnlockOSThread()
		l.log.Warn(fmt.Sprintf("game thread: short scheduling slice not set (%v): the tick may wait for the CPU behind other threads under load", err),
			"slice_ms", sliceMS(l.slice))
		return func() {}
	}
	l.log.Info("game thread: short scheduling slice "+sliceMS(l.slice)+" ms: on a busy CPU the tick runs ahead of the server's other threads",
		"slice_ms", sliceMS(l.slice))
	return func() {
		if err := reset(); err != nil {
			l.log.Warn(fmt.Sprintf("game thread: scheduling slice not reset (%v)", err))
		}
		runtime.UnlockOSThread()
	}
}

func sliceMS(d time.Duration) string { return strconv.FormatFloat(ms(d), 'f', -1, 64) }

// checkSlice refuses a slice the kernel would not take as asked.
func checkSlice(d time.Duration) error {
	if d < MinSlice || d > MaxSlice {
		return fmt.Errorf("slice %s ms is outside %s..%s ms", sliceMS(d), sliceMS(MinSlice), sliceMS(MaxSlice))
	}
	return nil
}

// discard is the logger of a Loop configured without one.
var discard = slog.New(slog.DiscardHandler)
