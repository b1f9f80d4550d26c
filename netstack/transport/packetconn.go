package transport

import (
	"net"
	"net/netip"
	"time"
)

// addrPortConn is implemented by *net.UDPConn and by the in-memory links of
// tests (netstack/memlink): the AddrPort forms of ReadFrom and WriteTo do
// not allocate a net.Addr per datagram.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

var _ Transport = (*packetConn)(nil)

// packetConn adapts a net.PacketConn: one datagram per read and per write,
// through the AddrPort methods when the connection has them.
type packetConn struct {
	pc   net.PacketConn
	fast addrPortConn // nil when pc lacks the AddrPort methods
}

// FromPacketConn returns the Transport of pc: UDP's (batched system calls)
// for a *net.UDPConn, else an adapter that moves one datagram per call —
// without allocating when pc has *net.UDPConn's ReadFromUDPAddrPort and
// WriteToUDPAddrPort, as the in-memory links of tests do. Its MaxDatagram is
// pc's MaxDatagram() when pc has one, else UDP's 65,507. Closing the
// Transport closes pc.
func FromPacketConn(pc net.PacketConn) Transport {
	if uc, ok := pc.(*net.UDPConn); ok {
		return NewUDP(uc)
	}
	c := &packetConn{pc: pc}
	c.fast, _ = pc.(addrPortConn)
	return c
}

func (c *packetConn) ReadBatch(msgs []Message) (int, error) {
	m := &msgs[0]
	if c.fast != nil {
		n, ap, err := c.fast.ReadFromUDPAddrPort(m.Buf)
		if err != nil {
			return 0, err
		}
		m.N, m.Addr, m.Validated = n, unmap(ap), false
		return 1, nil
	}
	n, addr, err := c.pc.ReadFrom(m.Buf)
	if err != nil {
		return 0, err
	}
	m.N, m.Addr, m.Validated = n, netip.AddrPort{}, false
	if ua, ok := addr.(*net.UDPAddr); ok {
		m.Addr = unmap(ua.AddrPort())
	}
	return 1, nil
}

func (c *packetConn) WriteBatch(msgs []Message) (sent int, err error) {
	for i := range msgs {
		m := &msgs[i]
		var e error
		if c.fast != nil {
			_, e = c.fast.WriteToUDPAddrPort(m.Buf[:m.N], m.Addr)
		} else {
			_, e = c.pc.WriteTo(m.Buf[:m.N], net.UDPAddrFromAddrPort(m.Addr))
		}
		if e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		sent++
	}
	return sent, err
}

// LocalAddr is pc's address when it is a *net.UDPAddr (asked at each call:
// test connections may not know theirs until used).
func (c *packetConn) LocalAddr() netip.AddrPort {
	if ua, ok := c.pc.LocalAddr().(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}

func (c *packetConn) MaxDatagram() int { return MaxUDPDatagram }

func (c *packetConn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

func (c *packetConn) Close() error { return c.pc.Close() }
