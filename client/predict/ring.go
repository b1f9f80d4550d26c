package predict

import "github.com/sparkhost/sparkhost/sim/gamemsg"

// ring is a fixed-capacity FIFO of inputs; it never allocates after newRing.
type ring struct {
	buf        []gamemsg.ClientInput
	head, size int
}

func newRing(capacity int) ring { return ring{buf: make([]gamemsg.ClientInput, capacity)} }

func (r *ring) len() int   { return r.size }
func (r *ring) full() bool { return r.size == len(r.buf) }

// at returns the i-th input, oldest first; 0 ≤ i < len.
func (r *ring) at(i int) gamemsg.ClientInput { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring) front() gamemsg.ClientInput { return r.buf[r.head] }

// push appends in; the caller makes room first.
func (r *ring) push(in gamemsg.ClientInput) {
	r.buf[(r.head+r.size)%len(r.buf)] = in
	r.size++
}

func (r *ring) popFront() {
	r.head = (r.head + 1) % len(r.buf)
	r.size--
}
