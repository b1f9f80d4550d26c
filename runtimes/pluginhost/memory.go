package pluginhost

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The memory cap. A watchdog goroutine per plugin (off the game thread)
// measures the resident size of the plugin's process and of the processes
// it started (Linux: VmRSS of /proc/PID/status, children from
// /proc/PID/task/*/children) every memoryEvery. Past the cap it kills the
// process group at once and leaves the reason — "exceeded its memory cap
// 512.0 MiB (resident 530.2 MiB) and was killed" — for the game thread,
// which reports the crash at its next call, so the module restarts like
// after any crash. The plugin's GOMEMLIMIT (three quarters of the cap, see
// pluginEnv) makes a Go plugin's collector work harder before that.
// Where resident sizes cannot be read (not Linux) there is no watchdog.

// memoryEvery is how often the watchdog measures.
const memoryEvery = 500 * time.Millisecond

// maxWatched bounds the processes one measurement visits.
const maxWatched = 256

type memoryWatch struct {
	rss  atomic.Int64
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// watchMemory starts the watchdog of the plugin process pid. exited reports
// whether the process has been reaped (its pid may then be reused: the
// watchdog must not signal it); killed receives the reason when the
// watchdog kills.
func watchMemory(pid int, limit int64, exited func() bool, killed *atomic.Pointer[string]) *memoryWatch {
	w := &memoryWatch{quit: make(chan struct{}), done: make(chan struct{})}
	if _, ok := groupResident(pid); !ok {
		close(w.done)
		return w
	}
	go w.run(pid, limit, exited, killed)
	return w
}

func (w *memoryWatch) run(pid int, limit int64, exited func() bool, killed *atomic.Pointer[string]) {
	defer close(w.done)
	t := time.NewTicker(memoryEvery)
	defer t.Stop()
	for {
		if rss, ok := groupResident(pid); ok {
			w.rss.Store(rss)
			if rss > limit && !exited() {
				reason := fmt.Sprintf("exceeded its memory cap %s (resident %s) and was killed", mib(limit), mib(rss))
				killed.Store(&reason)
				killGroup(pid)
				return
			}
		}
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
	}
}

// stop ends the watchdog and waits for it: once stop returns it signals
// nothing any more.
func (w *memoryWatch) stop() {
	if w == nil {
		return
	}
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

// resident is the last measurement in bytes (0 before the first).
func (w *memoryWatch) resident() int64 {
	if w == nil {
		return 0
	}
	return w.rss.Load()
}

// mib renders bytes as MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
