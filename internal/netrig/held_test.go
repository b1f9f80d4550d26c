package netrig

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestHeldHeapPopsInDueThenArrivalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h heldHeap
	for seq := range uint64(5000) {
		// Few distinct due times, so that ties are common.
		h.push(heldPacket{due: t0.Add(time.Duration(rng.IntN(50)) * time.Millisecond), seq: seq})
	}
	prev := heldPacket{due: t0.Add(-time.Hour)}
	for n := 0; len(h) > 0; n++ {
		first := h[0]
		h.pop()
		if first.due.Before(prev.due) || (first.due.Equal(prev.due) && first.seq < prev.seq) {
			t.Fatalf("pop %d: %v #%d after %v #%d", n, first.due.Sub(t0), first.seq, prev.due.Sub(t0), prev.seq)
		}
		prev = first
	}
}

// TestHoldingAPacketAllocatesNothing: the forwarder's per-packet path
// (admit, hold, pop, recycle) allocates nothing once warm, so that a long
// run does not make the garbage collector stop the forwarder.
func TestHoldingAPacketAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	kick, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(kick)
	// Every packet held once: AllocsPerRun divides whole allocations by runs.
	p := &pipe{kick: kick, sh: newShaper(direction{}, 1)}
	pkt := make([]byte, 1200)
	cycle := func() {
		p.writing = true // a write in progress: the packet is held, not written
		p.admit(pkt)
		p.writing = false
		for {
			got, _, _ := p.next()
			if got == nil {
				break
			}
			p.writing = false
			p.bufs.put(got)
		}
		var drain [8]byte
		unix.Read(kick, drain[:])
	}
	for range 100 {
		cycle()
	}
	if allocs := testing.AllocsPerRun(1000, cycle); allocs != 0 {
		t.Errorf("holding a packet allocates %v times", allocs)
	}
}
