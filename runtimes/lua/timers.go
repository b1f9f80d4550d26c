package lua

import (
	"container/heap"
	"math"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// maxTimers bounds a module's pending timers: each is Go memory the Lua
// heap estimate does not see.
const maxTimers = 4096

// maxTimerSeconds bounds a timer's delay or period (about 115 days).
const maxTimerSeconds = 1e7

// timer is one spark.after or spark.every. Timers run on module time (the
// sum of the DT of the module's Steps), so they are deterministic and
// stop while the module is not stepped.
type timer struct {
	id    int64
	due   time.Duration
	every time.Duration // 0 for spark.after
	fn    *lua.LFunction
	dead  bool // cancelled, or an after that has fired
	index int  // in the heap
}

// timerQueue is a min-heap by (due, id) with lazy deletion: a cancelled
// timer stays in the heap, marked dead, until it comes due or the heap is
// compacted.
type timerQueue struct {
	byID map[int64]*timer
	heap timerHeap
	next int64
	due  []*timer // reused by Step
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

func (q *timerQueue) add(now, delay, every time.Duration, fn *lua.LFunction) (int64, bool) {
	if q.byID == nil {
		q.byID = make(map[int64]*timer)
	}
	if len(q.byID) >= maxTimers {
		return 0, false
	}
	if len(q.heap) >= 2*maxTimers {
		q.compact()
	}
	q.next++
	t := &timer{id: q.next, due: now + delay, every: every, fn: fn}
	q.byID[t.id] = t
	heap.Push(&q.heap, t)
	return t.id, true
}

func (q *timerQueue) cancel(id int64) bool {
	t, ok := q.byID[id]
	if !ok {
		return false
	}
	t.dead = true
	delete(q.byID, id)
	return true
}

func (q *timerQueue) compact() {
	live := q.heap[:0]
	for _, t := range q.heap {
		if !t.dead {
			live = append(live, t)
		}
	}
	clear(q.heap[len(live):])
	q.heap = live
	for i, t := range q.heap {
		t.index = i
	}
	heap.Init(&q.heap)
}

// popDue removes and returns the live timers due at now, in (due, id)
// order. The slice is reused by the next call.
func (q *timerQueue) popDue(now time.Duration) []*timer {
	q.due = q.due[:0]
	for len(q.heap) > 0 && q.heap[0].due <= now {
		t := heap.Pop(&q.heap).(*timer)
		if !t.dead {
			q.due = append(q.due, t)
		}
	}
	return q.due
}

// reschedule puts a fired (or not yet run) timer back.
func (q *timerQueue) reschedule(t *timer) { heap.Push(&q.heap, t) }

// runTimers runs the timers due at the module's clock. An every-timer is
// rescheduled one period after its due time (or one period from now, when
// it has fallen more than a period behind), so it fires at most once per
// Step. It returns true when the budget ran out; the timers not yet run
// stay due for the next Step.
func (m *Module) runTimers() (stop bool) {
	due := m.timers.popDue(m.clock)
	for i, t := range due {
		if t.dead {
			continue
		}
		if t.every == 0 {
			t.dead = true
			delete(m.timers.byID, t.id)
		}
		stop = m.run(site{what: "timer", id: t.id}, t.fn, lua.LNumber(t.id))
		if t.every > 0 && !t.dead {
			t.due += t.every
			if t.due <= m.clock {
				t.due = m.clock + t.every
			}
			m.timers.reschedule(t)
		}
		if stop {
			for _, rest := range due[i+1:] {
				if !rest.dead {
					m.timers.reschedule(rest)
				}
			}
			clear(due)
			return true
		}
	}
	clear(due)
	return false
}

// timerDuration converts a Lua number of seconds, checking it.
func timerDuration(x lua.LNumber, positive bool) (time.Duration, bool) {
	f := float64(x)
	if math.IsNaN(f) || f < 0 || f > maxTimerSeconds || (positive && f == 0) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func (m *Module) luaAfter(L *lua.LState) int { return m.addTimer(L, "spark.after", false) }
func (m *Module) luaEvery(L *lua.LState) int { return m.addTimer(L, "spark.every", true) }

func (m *Module) addTimer(L *lua.LState, fn string, repeat bool) int {
	a := args{L: L, fn: fn}
	secs, ok := L.Get(1).(lua.LNumber)
	d, okd := timerDuration(secs, repeat)
	if !ok || !okd {
		want := "a number of seconds in 0..1e7"
		if repeat {
			want = "a number of seconds greater than 0 and at most 1e7"
		}
		a.fail(1, "seconds", want)
	}
	f := a.function(2, "fn")
	every := time.Duration(0)
	if repeat {
		every = d
	}
	id, ok := m.timers.add(m.clock, d, every, f)
	if !ok {
		L.RaiseError("%s: too many timers (%d pending); cancel the ones you no longer need", fn, maxTimers)
	}
	L.Push(lua.LNumber(id))
	return 1
}

func (m *Module) luaCancel(L *lua.LState) int {
	a := args{L: L, fn: "spark.cancel"}
	id := a.integer(1, "id", 0, math.MaxInt64>>10)
	L.Push(lua.LBool(m.timers.cancel(id)))
	return 1
}
