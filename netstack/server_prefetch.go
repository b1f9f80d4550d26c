package netstack

import (
	"unsafe"

	"github.com/sparkhost/sparkhost/netstack/internal/prefetch"
)

// A saturated server's receive pass handles a session per datagram, and the
// thousand sessions' state (kilobytes each) is far larger than the caches:
// every session's first touches (its lock, its counters, its timers, its
// reliability engine) were cache misses, paid one after another. The pass
// prefetches the next datagram's session while it handles the current one,
// and the reliability engine's hot parts as a datagram's opening begins.

// lookAhead finds, under one read lock, the session of each sealed
// datagram of the batch's first n (nil when none), for prefetching only:
// each datagram is still routed by its own lookup.
func (s *Server) lookAhead(n int) {
	s.rxAhead = s.rxAhead[:0]
	s.mu.RLock()
	for i := range n {
		var p *peer
		if m := &s.rxMsgs[i]; m.N > 0 && m.Buf[0] == classSealed {
			p = s.byAddr[m.Addr]
		}
		s.rxAhead = append(s.rxAhead, p)
	}
	s.mu.RUnlock()
}

// prefetchPeer prefetches p and its session (nil: nothing). It reads only
// p.session, which never changes once the peer is published.
func prefetchPeer(p *peer) {
	if p == nil {
		return
	}
	prefetch.Range(unsafe.Pointer(p), unsafe.Sizeof(*p))
	prefetch.Range(unsafe.Pointer(p.session), unsafe.Sizeof(*p.session))
}
