package netstack

import "time"

// QueueFlush is Flush done off the caller's goroutine: it hands a free
// tick flusher to the tick writer goroutine and returns, and the writer
// packs what every admitted client has queued (as Flush would), seals it
// and writes it. The host calls it at the end of every tick: the packing
// is then not the game thread's time, and with one P it runs when the
// game thread sleeps, before the sealing and system calls it ran before
// anyway, so the datagrams leave when they would have. A message sent
// after QueueFlush returns may leave with this flush or with the next.
// Four flushes at most wait for the writer; a fifth waits for one of them
// (back pressure); after Close it does nothing. It is safe to call from
// any goroutine; calls are serialized with Flush's.
func (s *Server) QueueFlush() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.flushClosed {
		return
	}
	f := <-s.tickFree
	f.pack = true
	s.tickWrites <- f
}

// packTick packs into f, under each session's lock, what every session
// with something queued, urgent or due has to send (the tick's flush).
func (s *Server) packTick(f *flusher) {
	now := time.Now()
	// Only the sessions with something queued, urgent or due since the
	// service loop looked (wakeService).
	f.peers = s.due.dueList(f.peers, int64(now.Sub(s.origin)))
	for _, p := range f.peers {
		p.mu.Lock()
		if p.state == slotConnected && (!p.out.queuedAt.IsZero() || p.out.urgent || p.rel.engine.Due(now)) {
			p.flushLocked(now, &f.b)
		}
		closed := p.life.closed && p.state == slotConnected
		p.mu.Unlock()
		if closed {
			s.remove(p)
		}
	}
	clear(f.peers)
}
