package client

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"time"
)

// maxEvents is how many event lines the log keeps for wait; older lines are
// forgotten (a wait far behind the stream would only ever see the last ones).
const maxEvents = 4096

// eventLog records event lines for wait.
//
// Invariant: first ≤ cursor ≤ first+len(lines). Lines before cursor were
// consumed by a successful wait (or predate the latest connect) and are never
// matched again; a failed wait consumes nothing.
type eventLog struct {
	mu      sync.Mutex
	lines   []string
	first   int           // absolute index of lines[0]
	cursor  int           // absolute index of the first line wait may match
	changed chan struct{} // closed and replaced when a line is added
}

func (l *eventLog) init() { l.changed = make(chan struct{}) }

// add records a line and wakes every waiter.
func (l *eventLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if len(l.lines) >= 2*maxEvents {
		drop := len(l.lines) - maxEvents
		l.lines = append(l.lines[:0], l.lines[drop:]...)
		l.first += drop
		l.cursor = max(l.cursor, l.first)
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// skipAll makes wait look only at lines added from now on.
func (l *eventLog) skipAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cursor = l.first + len(l.lines)
}

// consume finds the first unconsumed line matching re and consumes up to and
// including it. Without a match it returns the channel closed by the next add.
func (l *eventLog) consume(re *regexp.Regexp) (string, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := l.cursor - l.first; i < len(l.lines); i++ {
		if re.MatchString(l.lines[i]) {
			l.cursor = l.first + i + 1
			return l.lines[i], true, nil
		}
	}
	return "", false, l.changed
}

// errWaitTimeout is wait's internal timeout result.
var errWaitTimeout = errors.New("timeout")

// wait blocks until a line matches re (returning it), the timeout passes
// (errWaitTimeout) or ctx ends (its error).
func (l *eventLog) wait(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		line, ok, changed := l.consume(re)
		if ok {
			return line, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			if line, ok, _ := l.consume(re); ok { // a line that raced the timer still counts
				return line, nil
			}
			return "", errWaitTimeout
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}
