package tick

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"golang.org/x/sys/unix"
)

// The main goroutine keeps the main thread: a goroutine that ends locked
// on the main thread leaves it in place (the runtime wedges it rather than
// end the process), which would hide a loop that forgot to unlock.
func init() { runtime.LockOSThread() }

// textLogger is a slog text logger writing into b.
func textLogger(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// threadAttr is what the kernel says of the calling thread's scheduling.
type threadAttr struct {
	tid   int
	slice uint64 // sched_getattr's sched_runtime: the slice of a normal thread
	flags uint64
	err   error
}

func currentThread() threadAttr {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return threadAttr{tid: unix.Gettid(), err: err}
	}
	return threadAttr{tid: unix.Gettid(), slice: a.Runtime, flags: a.Flags}
}

// defaultSlice is the slice of the process's main thread, which runs no loop.
func defaultSlice(t *testing.T) uint64 {
	t.Helper()
	a, err := unix.SchedGetAttr(os.Getpid(), 0)
	if err != nil {
		t.Fatalf("sched_getattr of the main thread: %v", err)
	}
	return a.Runtime
}

// childSlice starts a process from the calling thread and returns the
// se.slice it reads for itself in /proc/self/sched.
func childSlice() (uint64, error) {
	out, err := exec.Command("cat", "/proc/self/sched").Output()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "se.slice" {
			return strconv.ParseUint(f[2], 10, 64)
		}
	}
	return 0, fmt.Errorf("no se.slice in /proc/self/sched:\n%s", out)
}

// runTicks runs l on a goroutine of its own, which ends when Run returns,
// for three ticks of virtual time; each tick records its thread.
func runTicks(t *testing.T, l *Loop, each func()) []threadAttr {
	t.Helper()
	var seen []threadAttr
	done := make(chan error)
	go func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done <- l.Run(ctx, func(tk Tick) {
			seen = append(seen, currentThread())
			if each != nil {
				each()
			}
			if tk.Number == 3 {
				cancel()
			}
		})
	}()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	return seen
}

func TestGameThreadHasTheSliceWhileRunning(t *testing.T) {
	const slice = 300 * time.Microsecond
	def := defaultSlice(t)
	if def == uint64(slice) {
		t.Skipf("the kernel's default slice is already %v", slice)
	}
	var log syncbuf.Buffer
	var children []uint64
	l := New(Config{Clock: newFakeClock(), Slice: slice, Log: textLogger(&log)})
	seen := runTicks(t, l, func() {
		s, err := childSlice()
		if err != nil {
			t.Errorf("starting a process from the game thread: %v", err)
		}
		children = append(children, s)
	})
	for i, a := range seen {
		if a.err != nil || a.slice != uint64(slice) || a.tid != seen[0].tid {
			t.Errorf("tick %d ran on thread %d with slice %d ns (%v); want every tick on thread %d with %d ns",
				i+1, a.tid, a.slice, a.err, seen[0].tid, slice)
		}
	}
	for i, s := range children {
		if s != def {
			t.Errorf("a process started in tick %d has slice %d ns, want the default %d ns", i+1, s, def)
		}
	}
	if got := log.String(); !strings.Contains(got, "game thread: short scheduling slice 0.3 ms") {
		t.Errorf("log does not say the slice was set:\n%s", got)
	}
	checkThreadReleased(t, seen[0].tid, def)
}

// checkThreadReleased checks that the game thread outlived its goroutine
// (which had ended: a goroutine that ends locked takes its thread with it)
// and is back to the default slice, without the reset-on-fork mark (the
// test runs as root, which may clear it).
func checkThreadReleased(t *testing.T, tid int, def uint64) {
	t.Helper()
	if tid == os.Getpid() {
		t.Fatalf("the loop ran on the main thread, which the test's main goroutine keeps")
	}
	// The thread of a goroutine that ends locked exits right after it; give
	// that ample time to show.
	for range 50 {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); err != nil {
			t.Fatalf("the game thread %d is gone after Run returned (left locked to its goroutine?): %v", tid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatalf("sched_getattr of thread %d: %v", tid, err)
	}
	if a.Runtime != def {
		t.Errorf("after Run, thread %d has slice %d ns, want the default %d ns", tid, a.Runtime, def)
	}
	if os.Geteuid() == 0 && a.Flags&unix.SCHED_FLAG_RESET_ON_FORK != 0 {
		t.Errorf("after Run, thread %d keeps the reset-on-fork mark", tid)
	}
}

func TestNoSliceSetsNothing(t *testing.T) {
	def := defaultSlice(t)
	var log syncbuf.Buffer
	seen := runTicks(t, New(Config{Clock: newFakeClock(), Log: textLogger(&log)}), nil)
	for i, a := range seen {
		if a.err != nil || a.slice != def || a.flags != 0 {
			t.Errorf("tick %d ran with slice %d ns, flags %#x (%v); want the default %d ns, no flags", i+1, a.slice, a.flags, a.err, def)
		}
	}
	if got := log.String(); !strings.Contains(got, "game thread: scheduling left to the kernel") {
		t.Errorf("log does not say the thread was left alone:\n%s", got)
	}
}

func TestRefusedSliceIsLoggedAndTheLoopRuns(t *testing.T) {
	def := defaultSlice(t)
	for _, slice := range []time.Duration{50 * time.Microsecond, 200 * time.Millisecond} {
		var log syncbuf.Buffer
		seen := runTicks(t, New(Config{Clock: newFakeClock(), Slice: slice, Log: textLogger(&log)}), nil)
		if len(seen) != 3 {
			t.Errorf("slice %v: %d ticks ran, want 3", slice, len(seen))
		}
		for i, a := range seen {
			if a.slice != def {
				t.Errorf("slice %v: tick %d ran with slice %d ns, want the default %d ns", slice, i+1, a.slice, def)
			}
		}
		got := log.String()
		if !strings.Contains(got, "level=WARN") || !strings.Contains(got, "short scheduling slice not set (slice "+sliceMS(slice)+" ms is outside 0.1..100 ms)") {
			t.Errorf("slice %v: log does not say why it was not set:\n%s", slice, got)
		}
	}
}
