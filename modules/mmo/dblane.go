package mmo

import (
	"context"
	"sync"
	"time"
)

// dbLane runs the module's database work off the game thread: one worker
// goroutine takes jobs in submission order, so the module's writes reach
// the database in the order the game thread decided them (a character's
// last position is saved before the same server claims it again, a
// registration commits before the same session's login reads it). A job
// returns a completion, which the game thread runs at its next tick; the
// game thread never waits for the database.
//
// Requests from clients are admitted only while fewer than laneDepth jobs
// wait (tryRoom); saves and releases, which the module must not drop, are
// always queued (their number is bounded by the sessions).
type dbLane struct {
	mu      sync.Mutex
	wake    *sync.Cond
	jobs    []laneJob
	results []func()
	closed  bool
	done    chan struct{}
	timeout time.Duration
}

// laneJob is the database part of a job; it returns the completion to run
// on the game thread (nil for none).
type laneJob func(ctx context.Context) func()

// laneDepth bounds the client requests waiting for the database.
const laneDepth = 256

func newLane(ctx context.Context, timeout time.Duration) *dbLane {
	l := &dbLane{done: make(chan struct{}), timeout: timeout}
	l.wake = sync.NewCond(&l.mu)
	go l.run(ctx)
	return l
}

func (l *dbLane) run(ctx context.Context) {
	defer close(l.done)
	for {
		l.mu.Lock()
		for len(l.jobs) == 0 && !l.closed {
			l.wake.Wait()
		}
		if len(l.jobs) == 0 {
			l.mu.Unlock()
			return
		}
		j := l.jobs[0]
		l.jobs[0] = nil
		l.jobs = l.jobs[1:]
		l.mu.Unlock()
		jctx, cancel := context.WithTimeout(ctx, l.timeout)
		apply := j(jctx)
		cancel()
		if apply != nil {
			l.mu.Lock()
			l.results = append(l.results, apply)
			l.mu.Unlock()
		}
	}
}

// room reports whether a client request may be queued.
func (l *dbLane) room() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.jobs) < laneDepth
}

// push queues j whatever the queue's length.
func (l *dbLane) push(j laneJob) {
	l.mu.Lock()
	if !l.closed {
		l.jobs = append(l.jobs, j)
		l.wake.Signal()
	}
	l.mu.Unlock()
}

// pending returns the number of jobs not yet started.
func (l *dbLane) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.jobs)
}

// completions takes the completions ready to run (game thread).
func (l *dbLane) completions(buf []func()) []func() {
	l.mu.Lock()
	buf = append(buf[:0], l.results...)
	clear(l.results)
	l.results = l.results[:0]
	l.mu.Unlock()
	return buf
}

// close lets the queued jobs finish, waiting up to wait, and takes no more.
// It reports whether the queue drained in time.
func (l *dbLane) close(wait time.Duration) bool {
	l.mu.Lock()
	l.closed = true
	l.wake.Signal()
	l.mu.Unlock()
	select {
	case <-l.done:
		return true
	case <-time.After(wait):
		return false
	}
}
