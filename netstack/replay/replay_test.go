package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// accept is what the sealed channel does with an authenticated frame.
func accept(w *Window, s uint64) bool {
	if !w.Check(s) {
		return false
	}
	w.Mark(s)
	return true
}

func TestWindow(t *testing.T) {
	t.Run("zero value accepts s=0 once", func(t *testing.T) {
		var w Window
		if !accept(&w, 0) || accept(&w, 0) {
			t.Fatal("s=0 must be accepted exactly once")
		}
	})
	t.Run("in order and repeats", func(t *testing.T) {
		var w Window
		for s := uint64(0); s < 5000; s++ {
			if !accept(&w, s) {
				t.Fatalf("fresh %d refused", s)
			}
			if accept(&w, s) {
				t.Fatalf("repeat %d accepted", s)
			}
		}
	})
	t.Run("window edge", func(t *testing.T) {
		var w Window
		accept(&w, 5000)
		if !w.Check(5000 - Size + 1) {
			t.Fatal("oldest sequence inside the window refused")
		}
		if w.Check(5000-Size) || w.Check(0) {
			t.Fatal("sequence older than the window accepted")
		}
		if !accept(&w, 5000-Size+1) || accept(&w, 5000-Size+1) {
			t.Fatal("edge sequence must be accepted once")
		}
	})
	t.Run("check does not mark", func(t *testing.T) {
		var w Window
		for range 3 {
			if !w.Check(77) {
				t.Fatal("unmarked refused")
			}
		}
		if w.Highest() != 0 {
			t.Fatal("Check moved the window")
		}
	})
	t.Run("huge jump clears stale bits", func(t *testing.T) {
		var w Window
		for s := uint64(0); s < 2048; s++ {
			accept(&w, s)
		}
		// A jump of exactly ring size * k lands on slots that held old bits.
		base := uint64(2048 + ringBlocks*blockBits*1000)
		if !accept(&w, base) {
			t.Fatal("jump refused")
		}
		for s := base - Size + 1; s < base; s++ {
			if !w.Check(s) {
				t.Fatalf("sequence %d inside the new window inherited a stale bit", s)
			}
		}
		if w.Check(2047) {
			t.Fatal("pre-jump sequence accepted")
		}
	})
	t.Run("max u64", func(t *testing.T) {
		var w Window
		if !accept(&w, math.MaxUint64) || accept(&w, math.MaxUint64) {
			t.Fatal("max u64 must be accepted once")
		}
		if !accept(&w, math.MaxUint64-Size+1) {
			t.Fatal("oldest in window below max refused")
		}
		if w.Check(math.MaxUint64-Size) || w.Check(0) {
			t.Fatal("too old below max accepted")
		}
	})
	t.Run("mark of too old is a no-op", func(t *testing.T) {
		var w Window
		accept(&w, 10*Size)
		before := w
		w.Mark(0)
		if w != before {
			t.Fatal("Mark of a too-old sequence changed the window")
		}
	})
}

// TestWindowModel compares the window against an exact set over random traffic
// with reordering, duplicates and jumps.
func TestWindowModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var w Window
	seen := map[uint64]bool{}
	var highest uint64
	next := uint64(0)
	for i := 0; i < 200000; i++ {
		var s uint64
		switch k := r.IntN(100); {
		case k < 60:
			s = next
			next++
		case k < 95:
			back := r.Uint64N(2*Size + 10)
			if back > next {
				back = next
			}
			s = next - back
		case k < 99:
			s = next + r.Uint64N(5000)
			next = s + 1
		default:
			s = next + r.Uint64N(1<<40)
			next = s + 1
		}
		want := !seen[s] && (s > highest || highest-s < Size)
		if got := w.Check(s); got != want {
			t.Fatalf("step %d: Check(%d) = %v, want %v (highest %d)", i, s, got, want, highest)
		}
		if want {
			w.Mark(s)
			seen[s] = true
			if s > highest {
				highest = s
			}
		}
	}
}

func TestWindowAllocs(t *testing.T) {
	var w Window
	s := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		if w.Check(s) {
			w.Mark(s)
		}
		s += 3
	}); n != 0 {
		t.Fatalf("%v allocs per frame", n)
	}
}

func BenchmarkCheckMark(b *testing.B) {
	var w Window
	s := uint64(0)
	for b.Loop() {
		if w.Check(s) {
			w.Mark(s)
		}
		s++
	}
}
