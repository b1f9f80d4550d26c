package policy

import (
	"errors"
	"net/netip"
	"strings"
	"unicode"
)

// ErrInternetPrefix: internet-mode bind text with a prefix. Internet mode
// admits every unicast peer, so a prefix would suggest a narrowing that does
// not happen.
var ErrInternetPrefix = errors.New("internet-mode bind address takes no prefix")

const hintInternet = `in internet mode bind to "::" (IPv4 and IPv6, every interface), "0.0.0.0" (IPv4, every interface) or one address of this host`

// ParseInternet checks bind text for internet mode (network.exposure =
// "internet"), which the operator opts into explicitly: any canonical IPv4 or
// IPv6 unicast address of the host, the IPv4 wildcard "0.0.0.0", or the IPv6
// wildcard "::" (dual stack: IPv4 peers arrive as IPv4-mapped addresses and
// are seen as IPv4). The empty string means DefaultBind.
//
// Refused, each with its own sentinel: text that is not the canonical form of
// an address (ErrNotCanonical, as netip prints it: "::", not "0::0"), a prefix
// (ErrInternetPrefix), a zone or an IPv6 link-local address (ErrLinkLocal,
// also for 169.254.0.0/16), an IPv4-mapped IPv6 address (ErrIPv6: write the
// IPv4 form), multicast, the limited broadcast and 0.0.0.0/8 hosts other than
// the wildcard.
//
// Peers (Allows): every unicast address of the bind's family (both families
// for "::"), except unspecified, multicast and broadcast sources and
// 0.0.0.0/8. Loopback peers are admitted: only the host itself can send from
// them.
func ParseInternet(bind string) (Policy, error) {
	if bind == "" {
		bind = DefaultBind
	}
	if strings.IndexFunc(bind, unicode.IsSpace) >= 0 {
		return Policy{}, reject(bind, ErrNotCanonical, "contains white space", hintInternet)
	}
	if strings.Contains(bind, "/") {
		return Policy{}, reject(bind, ErrInternetPrefix, "", "write the address alone; "+hintInternet)
	}
	a, err := netip.ParseAddr(bind)
	if err != nil {
		if strings.ContainsAny(bind, "[]") {
			return Policy{}, reject(bind, ErrNotCanonical, "brackets", `write the address without brackets, e.g. "::"`)
		}
		return Policy{}, reject(bind, ErrNotCanonical, "not an IP address", hintInternet)
	}
	switch {
	case a.Zone() != "" || a.IsLinkLocalUnicast():
		return Policy{}, reject(bind, ErrLinkLocal, "", hintInternet)
	case a.Is4In6():
		return Policy{}, reject(bind, ErrIPv6, "IPv4-mapped address", "write the IPv4 form "+a.Unmap().String())
	case a.String() != bind:
		return Policy{}, reject(bind, ErrNotCanonical, "canonical form is "+a.String(), "write "+a.String())
	case a.IsMulticast():
		return Policy{}, reject(bind, ErrMulticast, "", hintInternet)
	case a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Policy{}, reject(bind, ErrLimitedBroadcast, "", hintInternet)
	case a.Is4() && !a.IsUnspecified() && a.As4()[0] == 0:
		return Policy{}, reject(bind, ErrReserved, "0.0.0.0/8 means \"this network\"", hintInternet)
	}
	return Policy{kind: kindInternet, bind: a}, nil
}

// allowsInternet is Allows for an internet-mode policy.
func (p Policy) allowsInternet(peer netip.Addr) bool {
	switch {
	case !peer.IsValid() || peer.IsUnspecified() || peer.IsMulticast() || peer.Is4In6():
		return false
	case peer.Is4():
		if p.bind.Is6() && !p.bind.IsUnspecified() {
			return false // a socket bound to one IPv6 address receives IPv6 only
		}
		b := peer.As4()
		return b[0] != 0 && peer != netip.AddrFrom4([4]byte{255, 255, 255, 255})
	default:
		return p.bind.Is6()
	}
}

// Internet reports whether p is an internet-mode policy (ParseInternet).
func (p Policy) Internet() bool { return p.kind == kindInternet }

// Network returns the network to open the socket with: "udp4" for IPv4
// binds, "udp6" for one IPv6 address, "udp" for the dual-stack wildcard "::".
func (p Policy) Network() string {
	switch {
	case p.kind != kindInternet || p.bind.Is4():
		return "udp4"
	case p.bind.IsUnspecified():
		return "udp"
	}
	return "udp6"
}

// Exposure describes, for the start-up banner, which peers can reach a
// server with this policy.
func (p Policy) Exposure() string {
	switch p.kind {
	case kindLoopback:
		return "loopback peers only (127.0.0.0/8)"
	case kindLAN:
		return "LAN peers of " + p.Peers().String() + " only"
	case kindInternet:
		switch {
		case p.bind.IsLoopback():
			return "internet mode, but bound to loopback: only this host can reach it"
		case p.bind == netip.IPv6Unspecified():
			return "every IPv4 and IPv6 address, on every interface"
		case p.bind.IsUnspecified():
			return "every IPv4 address, on every interface"
		case p.bind.Is6():
			return "every IPv6 address that can reach " + p.bind.String()
		}
		return "every IPv4 address that can reach " + p.bind.String()
	}
	return "nobody"
}
