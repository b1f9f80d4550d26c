package netrig

import "time"

// heldPacket is a packet the forwarder holds until due.
type heldPacket struct {
	due time.Time
	seq uint64 // ties keep arrival order
	pkt []byte
}

// heldHeap is a min-heap of held packets by due time, then arrival. It is
// typed (not container/heap) so that holding a packet allocates nothing.
type heldHeap []heldPacket

func (h heldHeap) less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}

func (h *heldHeap) push(x heldPacket) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// pop removes the first packet (the caller has read it at h[0]).
func (h *heldHeap) pop() {
	s := *h
	last := len(s) - 1
	s[0] = s[last]
	s[last] = heldPacket{}
	s = s[:last]
	*h = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

// bufferPool recycles packet buffers, so that a steady stream allocates
// nothing; it keeps at most maxFree of them. Not safe for concurrent use.
type bufferPool struct{ free [][]byte }

const (
	bufSize = 2048 // a full 1500-byte packet and then some
	maxFree = 4096
)

// get returns an empty buffer with room for n bytes.
func (b *bufferPool) get(n int) []byte {
	if n <= bufSize && len(b.free) > 0 {
		buf := b.free[len(b.free)-1]
		b.free = b.free[:len(b.free)-1]
		return buf[:0]
	}
	return make([]byte, 0, max(n, bufSize))
}

func (b *bufferPool) put(buf []byte) {
	if cap(buf) == bufSize && len(b.free) < maxFree {
		b.free = append(b.free, buf[:0])
	}
}
