// Package timerq is the timer queue behind module.Host's After, Every and
// Cancel, shared by the server's module host and the plugin SDK so that a
// module's timers behave the same in every runtime: a min-heap by due time,
// then by creation order, run on the tick clock by whoever owns it (one
// goroutine; the queue is not safe for concurrent use).
package timerq

import (
	"container/heap"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

type timer struct {
	id     module.TimerID
	due    time.Time
	period time.Duration // 0: once
	fn     func()
	index  int // in the heap; -1 while it runs or once it left
}

// Queue holds pending timers. The zero value is empty and ready.
type Queue struct {
	h    timerHeap
	byID map[module.TimerID]*timer
	next module.TimerID
}

// Add schedules fn at now+d (a negative d is 0); a period > 0 repeats it.
func (q *Queue) Add(now time.Time, d, period time.Duration, fn func()) module.TimerID {
	if q.byID == nil {
		q.byID = make(map[module.TimerID]*timer)
	}
	q.next++
	t := &timer{id: q.next, due: now.Add(max(d, 0)), period: period, fn: fn}
	q.byID[t.id] = t
	heap.Push(&q.h, t)
	return t.id
}

// Cancel stops a timer; it reports whether the timer was pending. A timer
// may cancel itself from its own fn.
func (q *Queue) Cancel(id module.TimerID) bool {
	t, ok := q.byID[id]
	if !ok {
		return false
	}
	delete(q.byID, id)
	if t.index >= 0 { // not the timer running now
		heap.Remove(&q.h, t.index)
	}
	return true
}

// Len is the number of pending timers.
func (q *Queue) Len() int { return len(q.byID) }

// Run calls every timer due at now, each at most once per call; a periodic
// timer that fell behind fires once and is rescheduled from now. run, if
// not nil, wraps each call (a runtime's panic guard or budget).
func (q *Queue) Run(now time.Time, run func(fn func())) {
	var again []*timer
	for len(q.h) > 0 && !q.h[0].due.After(now) {
		t := heap.Pop(&q.h).(*timer)
		if t.period > 0 {
			t.due = t.due.Add(t.period)
			if !t.due.After(now) {
				t.due = now.Add(t.period)
			}
			again = append(again, t)
		} else {
			delete(q.byID, t.id)
		}
		if run != nil {
			run(t.fn)
		} else {
			t.fn()
		}
	}
	for _, t := range again {
		if _, live := q.byID[t.id]; live { // not cancelled by its own fn
			heap.Push(&q.h, t)
		}
	}
}

// Clear drops every timer.
func (q *Queue) Clear() { *q = Queue{next: q.next} }

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *timerHeap) Push(x any)   { t := x.(*timer); t.index = len(*h); *h = append(*h, t) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
