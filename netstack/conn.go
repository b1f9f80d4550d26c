package netstack

import (
	"net"
	"net/netip"
)

// udpAddrPortConn is implemented by *net.UDPConn and by memlink endpoints: the
// AddrPort forms of ReadFrom/WriteTo do not allocate a net.Addr per datagram.
type udpAddrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// packetConn wraps the socket so that the rest of the package reads and writes
// with netip.AddrPort whatever the underlying net.PacketConn is.
type packetConn struct {
	pc   net.PacketConn
	fast udpAddrPortConn // nil when pc lacks the AddrPort methods
}

func newPacketConn(pc net.PacketConn) *packetConn {
	c := &packetConn{pc: pc}
	c.fast, _ = pc.(udpAddrPortConn)
	return c
}

func (c *packetConn) read(b []byte) (int, netip.AddrPort, error) {
	if c.fast != nil {
		n, ap, err := c.fast.ReadFromUDPAddrPort(b)
		return n, unmapAddrPort(ap), err
	}
	n, addr, err := c.pc.ReadFrom(b)
	if err != nil {
		return n, netip.AddrPort{}, err
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return n, netip.AddrPort{}, nil
	}
	return n, unmapAddrPort(ua.AddrPort()), nil
}

func (c *packetConn) write(b []byte, to netip.AddrPort) error {
	if c.fast != nil {
		_, err := c.fast.WriteToUDPAddrPort(b, to)
		return err
	}
	_, err := c.pc.WriteTo(b, net.UDPAddrFromAddrPort(to))
	return err
}

// unmapAddrPort turns an IPv4-mapped IPv6 source into plain IPv4 so that the
// endpoint policy and the per-IPv4 budget see one form. The policy itself
// refuses IPv6 peers.
func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	if a := ap.Addr(); a.Is4In6() {
		return netip.AddrPortFrom(a.Unmap(), ap.Port())
	}
	return ap
}
