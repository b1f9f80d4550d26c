package reliable

import (
	"sync"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Payload buffers are shared by every Endpoint of the process through a few
// size classes, so that a steady stream of Sends and held ordered messages
// allocates nothing: a buffer returns to its pool when its packet is acked or
// delivered. Pointers to slices are pooled so Put does not allocate.
var bufClasses = [...]int{256, 1024, 2048, 4096, 16384, wire.MaxPayload}

var bufPools [len(bufClasses)]sync.Pool

func bufClass(n int) int {
	for i, c := range bufClasses {
		if n <= c {
			return i
		}
	}
	return -1
}

// copyBuf returns a pooled buffer holding a copy of p. p must not exceed
// MAX_PAYLOAD (checked by callers).
func copyBuf(p []byte) *[]byte {
	b := getBuf(len(p))
	*b = append(*b, p...)
	return b
}

// getBuf returns an empty pooled buffer of capacity at least n (≤ MAX_PAYLOAD).
func getBuf(n int) *[]byte {
	i := bufClass(n)
	b, _ := bufPools[i].Get().(*[]byte)
	if b == nil {
		s := make([]byte, 0, bufClasses[i])
		return &s
	}
	*b = (*b)[:0]
	return b
}

// releaseBuf returns b to its pool. A nil b is ignored.
func releaseBuf(b *[]byte) {
	if b == nil {
		return
	}
	if i := bufClass(cap(*b)); i >= 0 && cap(*b) == bufClasses[i] {
		bufPools[i].Put(b)
	}
}
