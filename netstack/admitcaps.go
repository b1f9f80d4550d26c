package netstack

import "net/netip"

// Defaults of the admission caps in internet mode (docs/protocol.md §3.5
// step 13, §3.6): room for a household behind one NAT, and for a small
// network sharing a /24.
const (
	DefaultAdmittedPerAddress = 8
	DefaultAdmittedPerPrefix  = 16
)

// AdmissionCaps bounds the admitted clients of one source, so that a few
// addresses cannot hold every slot. Half-open handshakes never count; the
// caps are judged at the hello (ConnectRejected AddressLimit) and again at
// admission (Disconnect AddressLimit).
type AdmissionCaps struct {
	// PerAddress bounds the admitted clients of one IP address. 0 means the
	// default: 8 in internet mode, no cap on a private bind (every peer there
	// is local: loopback is one address). Negative means no cap.
	PerAddress int
	// PerPrefix bounds those of one IPv4 /24 or IPv6 /64. 0 means the
	// default: 16 in internet mode, no cap on a private bind (a LAN party
	// is one /24). Negative means no cap.
	PerPrefix int
}

func (c *AdmissionCaps) populate(internet bool) {
	def := func(v *int, d int) {
		switch {
		case *v == 0 && internet:
			*v = d
		case *v == 0:
			*v = -1
		}
	}
	def(&c.PerAddress, DefaultAdmittedPerAddress)
	def(&c.PerPrefix, DefaultAdmittedPerPrefix)
}

// capKind says which admission cap refused a client.
type capKind uint8

const (
	capNone capKind = iota
	capAddress
	capPrefix
)

// detail is the refusal's sentence for the player.
func (k capKind) detail() string {
	if k == capAddress {
		return "too many players from your address are connected; try again when one leaves"
	}
	return "too many players from your network are connected; try again when one leaves"
}

// admittedCount counts the admitted clients (the entries of Server.byAddr)
// per address and per prefix. It is guarded by Server.mu and changes only
// with byAddr: claimSlot adds, Server.remove releases.
type admittedCount struct {
	byAddr   map[netip.Addr]int
	byPrefix map[netip.Prefix]int
}

// reached reports which cap, if any, a new client from a would exceed.
func (a *admittedCount) reached(addr netip.Addr, caps AdmissionCaps) capKind {
	switch {
	case caps.PerAddress > 0 && a.byAddr[addr] >= caps.PerAddress:
		return capAddress
	case caps.PerPrefix > 0 && a.byPrefix[prefixOf(addr)] >= caps.PerPrefix:
		return capPrefix
	}
	return capNone
}

func (a *admittedCount) add(addr netip.Addr) {
	if a.byAddr == nil {
		a.byAddr = make(map[netip.Addr]int)
		a.byPrefix = make(map[netip.Prefix]int)
	}
	a.byAddr[addr]++
	a.byPrefix[prefixOf(addr)]++
}

func (a *admittedCount) release(addr netip.Addr) {
	decrement(a.byAddr, addr)
	decrement(a.byPrefix, prefixOf(addr))
}

// decrement lowers m[k] by one, deleting the key at zero so that the maps
// hold only sources with admitted clients.
func decrement[K comparable](m map[K]int, k K) {
	if n := m[k] - 1; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// capReached is reached for the hello of a source, under the read lock.
func (s *Server) capReached(addr netip.Addr) capKind {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.admittedBy.reached(addr, s.cfg.Admission)
}

// countCapRefusal counts one client refused by cap k.
func (c *Counters) countCapRefusal(k capKind) {
	if k == capAddress {
		c.AddressCapRefused.Add(1)
	} else {
		c.PrefixCapRefused.Add(1)
	}
}

// Admission returns the admission caps in force (negative: no cap).
func (s *Server) Admission() AdmissionCaps { return s.cfg.Admission }
