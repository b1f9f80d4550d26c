package transport

import "net/netip"

// PeerSizer is implemented by a transport whose peers carry datagrams of
// different sizes (a server's WebTransport sessions beside its UDP socket):
// a session with the peer at addr packs into datagrams of at most
// min(its datagram size, MaxDatagramTo(addr)) bytes, fixed when the session
// is created. 0 means MaxDatagram.
type PeerSizer interface {
	MaxDatagramTo(addr netip.AddrPort) int
}

// MaxDatagramTo is the largest datagram tr carries to addr: tr's
// MaxDatagramTo when it is a PeerSizer and says, else tr's MaxDatagram.
func MaxDatagramTo(tr Transport, addr netip.AddrPort) int {
	if ps, ok := tr.(PeerSizer); ok {
		if n := ps.MaxDatagramTo(addr); n > 0 {
			return min(n, tr.MaxDatagram())
		}
	}
	return tr.MaxDatagram()
}
