package throttle_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/throttle"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestWindowIsExact: at most Max events in any span of Per, with the wait
// until the oldest leaves it.
func TestWindowIsExact(t *testing.T) {
	w := throttle.NewWindow(throttle.WindowConfig{Max: 3, Per: time.Minute})
	for i := range 3 {
		if _, ok := w.Take("a", t0.Add(time.Duration(i)*10*time.Second)); !ok {
			t.Fatalf("event %d refused", i)
		}
	}
	if retry, ok := w.Take("a", t0.Add(30*time.Second)); ok || retry != 30*time.Second {
		t.Fatalf("fourth within the minute: ok=%v retry=%v", ok, retry)
	}
	if _, ok := w.Take("b", t0); !ok {
		t.Fatal("another key is limited")
	}
	if _, ok := w.Take("a", t0.Add(time.Minute)); !ok {
		t.Fatal("the first event left the window, but no event is allowed")
	}
	if retry, ok := w.Take("a", t0.Add(time.Minute)); ok || retry != 10*time.Second {
		t.Fatalf("two events for one that left: ok=%v retry=%v", ok, retry)
	}
	// Any span of Per holds at most Max, whatever the pattern.
	w = throttle.NewWindow(throttle.WindowConfig{Max: 10, Per: time.Minute})
	var taken []time.Time
	for now := t0; now.Before(t0.Add(10 * time.Minute)); now = now.Add(250 * time.Millisecond) {
		if _, ok := w.Take("k", now); ok {
			taken = append(taken, now)
		}
	}
	for i := range taken {
		n := 0
		for j := i; j < len(taken) && taken[j].Sub(taken[i]) < time.Minute; j++ {
			n++
		}
		if n > 10 {
			t.Fatalf("%d events within a minute from %v", n, taken[i])
		}
	}
	if len(taken) != 100 {
		t.Fatalf("%d events in ten minutes, want 100", len(taken))
	}
}

// TestWindowFullKeepsLiveKeys: a full table forgets a key whose events
// all left the window, and refuses a new key rather than forget a live
// one (which would give it a fresh allowance).
func TestWindowFullKeepsLiveKeys(t *testing.T) {
	w := throttle.NewWindow(throttle.WindowConfig{Max: 1, Per: time.Minute, MaxKeys: 3})
	for i := range 3 {
		w.Take(strconv.Itoa(i), t0.Add(time.Duration(i)*time.Second))
	}
	if retry, ok := w.Take("new", t0.Add(30*time.Second)); ok || retry != 30*time.Second || w.Full() != 1 {
		t.Fatalf("a new key in a table of live ones: ok=%v retry=%v full=%d", ok, retry, w.Full())
	}
	if _, ok := w.Take("0", t0.Add(30*time.Second)); ok {
		t.Fatal("a live key was forgotten: it has a fresh allowance")
	}
	if _, ok := w.Take("new", t0.Add(time.Minute)); !ok || w.Len() != 3 {
		t.Fatalf("the oldest key left the window but the new one is refused (len %d)", w.Len())
	}
}

func TestRecent(t *testing.T) {
	r := throttle.NewRecent(throttle.RecentConfig{For: time.Hour, MaxKeys: 2})
	r.Mark("a", t0)
	if !r.Has("a", t0.Add(59*time.Minute)) || r.Has("a", t0.Add(time.Hour)) || r.Has("b", t0) {
		t.Fatal("Has")
	}
	r.Mark("a", t0.Add(time.Hour))
	if !r.Has("a", t0.Add(90*time.Minute)) {
		t.Fatal("a new mark did not extend")
	}
	r.Mark("b", t0)
	r.Mark("c", t0)
	if r.Len() != 2 || r.Has("a", t0.Add(90*time.Minute)) || !r.Has("c", t0) {
		t.Fatalf("bounded: len %d", r.Len())
	}
}
