package netstack

import "net/netip"

// PeerAt reports whether addr is the address of a session or a half-open
// handshake: a transport that names its own sessions by address (web
// sessions beside UDP) avoids the addresses in use.
func (s *Server) PeerAt(addr netip.AddrPort) bool {
	s.mu.RLock()
	p := s.byAddr[addr]
	s.mu.RUnlock()
	return p != nil || s.halfOpen.lookup(addr) != nil
}
