// Package policy owns the endpoint policy of protocol-v3.md §11: which address
// the server binds to and which peer addresses may reach it at all.
//
// Parse turns the operator's bind text into an immutable Policy, or refuses it,
// before any socket exists, with an error that names the reason and says what to
// write instead. Policy.Allows is the per-datagram check that runs before any
// parsing (§2); it does no allocation and no locking.
//
// Two shapes are accepted, both IPv4 only:
//
//   - A loopback host, "127.0.0.1" by default or any other 127.x.y.z host,
//     written WITHOUT a prefix. Peers: every address of 127.0.0.0/8 except
//     127.0.0.0 and 127.255.255.255. A prefix is refused (ErrLoopbackPrefix,
//     even "127.0.0.1/8"): the loopback peer set is fixed by §11, so a prefix
//     would either repeat it or suggest a narrowing that does not happen, and
//     refusing it keeps exactly one canonical text per policy.
//   - One RFC1918 host with its prefix, "192.168.1.20/24": bind to the host,
//     admit the concrete hosts of that subnet (not its network or broadcast
//     address). The prefix must be 8..30 and the subnet must lie wholly inside
//     10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16.
//
// A third shape exists only when the operator opts into internet mode:
// ParseInternet accepts wildcard, public and IPv6 binds and admits every
// unicast peer (see ParseInternet). Parse never returns it.
//
// The package never resolves names and never widens a policy; only
// ParseInternet accepts IPv6.
package policy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// DefaultBind is the bind text used when none is configured.
const DefaultBind = "127.0.0.1"

type kind uint8

const (
	kindNone kind = iota // the zero Policy: admits nobody
	kindLoopback
	kindLAN
	kindInternet // ParseInternet only
)

// Policy is a checked endpoint policy. It is immutable and comparable with ==;
// the zero Policy binds nowhere and admits no peer (fail closed).
type Policy struct {
	kind      kind
	host      uint32     // bind address, first octet in the top byte
	mask      uint32     // peer subnet mask
	network   uint32     // peer subnet network address (never admitted)
	broadcast uint32     // peer subnet broadcast address (never admitted)
	bits      uint8      // peer subnet prefix length
	bind      netip.Addr // internet mode only: the bind address (IPv4 or IPv6)
}

// Default returns the policy of DefaultBind: bind 127.0.0.1, admit 127.0.0.0/8.
func Default() Policy { return loopback(127<<24 | 1) }

// Parse checks bind text against §11 and returns its Policy. The empty string
// means DefaultBind. Every refusal is a *ParseError wrapping one of the Err*
// sentinels. Checks run in this order: canonical text (ErrNotCanonical,
// ErrHostname, ErrIPv6), then the address range (wildcard, broadcast, multicast,
// reserved, loopback, link-local, CGNAT, documentation, RFC1918, public), then,
// for RFC1918 hosts only, the prefix (missing, range, RFC1918 containment,
// network/broadcast host).
func Parse(bind string) (Policy, error) {
	if bind == "" {
		return Default(), nil
	}
	p, err := parseText(bind)
	if err != nil {
		return Policy{}, err
	}
	return classify(bind, p)
}

// rfc1918 lists the private blocks; a LAN subnet must fit inside one of them.
var rfc1918 = [...]struct {
	network uint32
	bits    int
}{
	{10 << 24, 8},
	{172<<24 | 16<<16, 12},
	{192<<24 | 168<<16, 16},
}

func classify(input string, p parsed) (Policy, error) {
	a := p.addr
	switch {
	case a == 0:
		return Policy{}, reject(input, ErrWildcard, "", hintGeneric)
	case a>>24 == 0:
		return Policy{}, reject(input, ErrReserved, "0.0.0.0/8 means \"this network\"", hintGeneric)
	case a == 0xFFFFFFFF:
		return Policy{}, reject(input, ErrLimitedBroadcast, "", hintGeneric)
	case a>>28 == 0xE:
		return Policy{}, reject(input, ErrMulticast, "", hintGeneric)
	case a>>28 == 0xF:
		return Policy{}, reject(input, ErrReserved, "240.0.0.0/4 is reserved", hintGeneric)
	case a>>24 == 127:
		return classifyLoopback(input, p)
	case a>>16 == 169<<8|254:
		return Policy{}, reject(input, ErrLinkLocal, "", hintGeneric)
	case a>>22 == (100<<24|64<<16)>>22:
		return Policy{}, reject(input, ErrCGNAT, "", hintGeneric)
	case a>>8 == (192<<24)>>8:
		return Policy{}, reject(input, ErrReserved, "192.0.0.0/24 is for IETF protocol assignments", hintGeneric)
	}
	if detail := documentationNet(a); detail != "" {
		return Policy{}, reject(input, ErrDocumentation, detail, hintGeneric)
	}
	for _, b := range rfc1918 {
		if a&maskOf(b.bits) == b.network {
			return classifyLAN(input, p, b.network, b.bits)
		}
	}
	return Policy{}, reject(input, ErrPublic, "sparkhost serves loopback and LAN peers only", hintGeneric)
}

func documentationNet(a uint32) string {
	switch {
	case a>>8 == (192<<24|0<<16|2<<8)>>8:
		return "192.0.2.0/24 (TEST-NET-1) is for documentation"
	case a>>8 == (198<<24|51<<16|100<<8)>>8:
		return "198.51.100.0/24 (TEST-NET-2) is for documentation"
	case a>>8 == (203<<24|0<<16|113<<8)>>8:
		return "203.0.113.0/24 (TEST-NET-3) is for documentation"
	case a>>17 == (198<<24|18<<16)>>17:
		return "198.18.0.0/15 is for benchmarking"
	}
	return ""
}

func classifyLoopback(input string, p parsed) (Policy, error) {
	host := fmtAddr(p.addr)
	if p.hasPrefix {
		return Policy{}, reject(input, ErrLoopbackPrefix, "",
			"the loopback policy always admits 127.0.0.0/8; write "+host)
	}
	if p.addr == 127<<24 || p.addr == 127<<24|0x00FFFFFF {
		return Policy{}, reject(input, ErrNetworkOrBroadcast,
			host+" is not a host of 127.0.0.0/8", "use a loopback host such as 127.0.0.1")
	}
	return loopback(p.addr), nil
}

func classifyLAN(input string, p parsed, block uint32, blockBits int) (Policy, error) {
	host := fmtAddr(p.addr)
	if !p.hasPrefix {
		return Policy{}, reject(input, ErrMissingPrefix, "",
			"add the LAN's prefix length, e.g. "+host+"/24")
	}
	if p.bits < 8 || p.bits > 30 {
		return Policy{}, reject(input, ErrPrefixRange, "/"+p.prefixText,
			"use a prefix length from /8 to /30, e.g. "+host+"/24")
	}
	mask := maskOf(p.bits)
	network, broadcast := p.addr&mask, p.addr|^mask
	subnet := fmt.Sprintf("%s/%d", fmtAddr(network), p.bits)
	if p.bits < blockBits {
		return Policy{}, reject(input, ErrNotPrivate,
			fmt.Sprintf("%s reaches outside %s/%d", subnet, fmtAddr(block), blockBits),
			fmt.Sprintf("use a prefix of /%d or longer", blockBits))
	}
	switch p.addr {
	case network:
		return Policy{}, reject(input, ErrNetworkOrBroadcast,
			fmt.Sprintf("%s is the network address of %s", host, subnet),
			fmt.Sprintf("use a host of that subnet, e.g. %s/%d", fmtAddr(network+1), p.bits))
	case broadcast:
		return Policy{}, reject(input, ErrNetworkOrBroadcast,
			fmt.Sprintf("%s is the broadcast address of %s", host, subnet),
			fmt.Sprintf("use a host of that subnet, e.g. %s/%d", fmtAddr(broadcast-1), p.bits))
	}
	return Policy{kind: kindLAN, host: p.addr, mask: mask, network: network, broadcast: broadcast, bits: uint8(p.bits)}, nil
}

func loopback(host uint32) Policy {
	return Policy{kind: kindLoopback, host: host, mask: maskOf(8), network: 127 << 24, broadcast: 127<<24 | 0x00FFFFFF, bits: 8}
}

func maskOf(bits int) uint32 { return ^uint32(0) << (32 - bits) }

func fmtAddr(a uint32) string { return toAddr(a).String() }

func toAddr(a uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], a)
	return netip.AddrFrom4(b)
}

// BindAddr returns the address to bind the socket to. It is the invalid
// netip.Addr for the zero Policy.
func (p Policy) BindAddr() netip.Addr {
	switch p.kind {
	case kindNone:
		return netip.Addr{}
	case kindInternet:
		return p.bind
	}
	return toAddr(p.host)
}

// Peers returns the subnet whose hosts Allows admits (its network and broadcast
// addresses excepted): 127.0.0.0/8 for a loopback policy. It is the invalid
// netip.Prefix for the zero Policy. Meant for logs.
func (p Policy) Peers() netip.Prefix {
	switch p.kind {
	case kindNone:
		return netip.Prefix{}
	case kindInternet:
		if p.bind.Is4() {
			return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
		return netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	return netip.PrefixFrom(toAddr(p.network), int(p.bits))
}

// Allows reports whether a datagram from peer may be looked at. Only plain IPv4
// addresses pass: an IPv4-mapped IPv6 address is refused, because the socket is
// bound to an IPv4 address and receives 4-byte addresses; if a caller ever sees
// a mapped one, something other than this policy decided the binding. It is
// allocation-free and safe for concurrent use (Policy is immutable).
func (p Policy) Allows(peer netip.Addr) bool {
	if p.kind == kindInternet {
		return p.allowsInternet(peer)
	}
	if p.kind == kindNone || !peer.Is4() {
		return false
	}
	b := peer.As4()
	v := binary.BigEndian.Uint32(b[:])
	return v&p.mask == p.network && v != p.network && v != p.broadcast
}

// String returns the canonical text of the policy, which Parse maps back to the
// same Policy: "127.0.0.1" for loopback, "192.168.1.20/24" for a LAN (and
// ParseInternet, for an internet-mode policy, its bind address). The zero
// Policy prints as "<none>", which Parse refuses.
func (p Policy) String() string {
	switch p.kind {
	case kindLoopback:
		return fmtAddr(p.host)
	case kindLAN:
		return fmt.Sprintf("%s/%d", fmtAddr(p.host), p.bits)
	case kindInternet:
		return p.bind.String()
	}
	return "<none>"
}
