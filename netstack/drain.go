package netstack

import "sync/atomic"

// drainState is the transport's part of a drain (docs/protocol.md §3.14):
// while it holds a detail, hellos are refused ServerDraining and a
// ClientFinished is answered Disconnect(ServerDraining). The admitted
// sessions are untouched; the game decides when each of them ends.
type drainState struct {
	detail atomic.Pointer[string]
}

// SetDraining starts (detail non-empty: the sentence a refused client is
// shown) or ends (detail "") the refusal of new clients. Safe from any
// goroutine.
func (s *Server) SetDraining(detail string) {
	if detail == "" {
		s.drain.detail.Store(nil)
		return
	}
	s.drain.detail.Store(&detail)
}

// Draining reports whether new clients are refused, and the refusal's
// detail.
func (s *Server) Draining() (string, bool) {
	d := s.drain.detail.Load()
	if d == nil {
		return "", false
	}
	return *d, true
}
