package plugin

import (
	"container/heap"
	"time"
)

// TimerID names a timer for Cancel.
type TimerID uint64

type timer struct {
	id     TimerID
	due    time.Time
	period time.Duration // 0: once
	fn     func()
	index  int
}

// timers is a min-heap of timers by due time, then by creation order, run
// on the tick clock.
type timers struct {
	h    timerHeap
	byID map[TimerID]*timer
	next TimerID
}

func (ts *timers) add(now time.Time, d, period time.Duration, fn func()) TimerID {
	if ts.byID == nil {
		ts.byID = make(map[TimerID]*timer)
	}
	ts.next++
	t := &timer{id: ts.next, due: now.Add(max(d, 0)), period: period, fn: fn}
	ts.byID[t.id] = t
	heap.Push(&ts.h, t)
	return t.id
}

func (ts *timers) cancel(id TimerID) bool {
	t, ok := ts.byID[id]
	if !ok {
		return false
	}
	delete(ts.byID, id)
	if t.index >= 0 { // not the timer running now
		heap.Remove(&ts.h, t.index)
	}
	return true
}

// run calls every timer due at now, each at most once per call; a periodic
// timer that fell behind fires once and is rescheduled from now.
func (ts *timers) run(now time.Time) {
	var again []*timer
	for len(ts.h) > 0 && !ts.h[0].due.After(now) {
		t := heap.Pop(&ts.h).(*timer)
		if t.period > 0 {
			t.due = t.due.Add(t.period)
			if !t.due.After(now) {
				t.due = now.Add(t.period)
			}
			again = append(again, t)
		} else {
			delete(ts.byID, t.id)
		}
		t.fn()
	}
	for _, t := range again {
		if _, live := ts.byID[t.id]; live { // not cancelled by its own fn
			heap.Push(&ts.h, t)
		}
	}
}

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
