package host

import (
	"testing"
	"time"
)

var garbage []byte

// TestAutoLimitHeadroomFollowsAllocation: the automatic limit's headroom
// is what the server allocates in two seconds at its recent rate — 64 MiB
// allocated in a second widen it by about 128 MiB at once — and falls
// back to the minimum once allocation stops, so that an idle server
// keeps few free pages.
func TestAutoLimitHeadroomFollowsAllocation(t *testing.T) {
	a := newAutoLimit()
	now := time.Now()
	quiet := a.next(now)
	for range 64 {
		garbage = make([]byte, 1<<20)
	}
	busy := a.next(now.Add(time.Second))
	if busy < quiet+96<<20 {
		t.Fatalf("after 64 MiB allocated in a second the limit is %d MiB, was %d MiB", busy>>20, quiet>>20)
	}
	after := busy
	for i := 2; i < 20; i++ {
		after = a.next(now.Add(time.Duration(i) * time.Second))
	}
	if after > quiet+16<<20 {
		t.Fatalf("18 quiet seconds later the limit is %d MiB, was %d MiB before the allocation", after>>20, quiet>>20)
	}
	t.Logf("limit %d MiB, %d MiB while allocating, %d MiB after", quiet>>20, busy>>20, after>>20)
}
