package memlink

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest IPv4 UDP payload; larger writes fail as with UDP.
const maxDatagram = 65507

var errTooLong = errors.New("memlink: datagram larger than 65507 bytes")

var _ net.PacketConn = (*Conn)(nil)

// datagram is one copy in flight; b is owned by the network, never a writer's.
type datagram struct {
	b    []byte
	from netip.AddrPort
}

type enqueueResult int

const (
	enqueued enqueueResult = iota
	queueFull
	connClosed
)

// Conn is one endpoint of a Network. It implements net.PacketConn, plus
// ReadFromUDPAddrPort and WriteToUDPAddrPort with *net.UDPConn's signatures.
// Writes never block; reads block until a datagram, the read deadline, or
// Close. It is safe for concurrent use.
type Conn struct {
	net   *Network
	addr  netip.AddrPort
	inbox chan datagram

	closeOnce sync.Once
	closed    chan struct{}

	mu sync.Mutex
	// deadline is the read deadline (zero: none); deadlineSet is closed and
	// replaced whenever it changes, waking blocked readers to re-arm.
	deadline    time.Time
	deadlineSet chan struct{}

	queueDrops atomic.Uint64
}

func newConn(n *Network, addr netip.AddrPort) *Conn {
	return &Conn{
		net:         n,
		addr:        addr,
		inbox:       make(chan datagram, n.cfg.QueueLen),
		closed:      make(chan struct{}),
		deadlineSet: make(chan struct{}),
	}
}

// enqueue offers d to the reader without ever blocking the network.
func (c *Conn) enqueue(d datagram) enqueueResult {
	select {
	case <-c.closed:
		return connClosed
	default:
	}
	select {
	case c.inbox <- d:
		return enqueued
	default:
		c.queueDrops.Add(1)
		return queueFull
	}
}

// QueueDrops returns how many datagrams this Conn lost to a full queue.
func (c *Conn) QueueDrops() uint64 { return c.queueDrops.Load() }

// Network returns the Network c is attached to.
func (c *Conn) Network() *Network { return c.net }

// AddrPort returns c's address.
func (c *Conn) AddrPort() netip.AddrPort { return c.addr }

// LocalAddr returns c's address as a *net.UDPAddr.
func (c *Conn) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(c.addr) }

// ReadFromUDPAddrPort reads one datagram into p; a datagram longer than p is
// truncated, as with UDP.
func (c *Conn) ReadFromUDPAddrPort(p []byte) (int, netip.AddrPort, error) {
	for {
		select {
		case <-c.closed:
			return 0, netip.AddrPort{}, c.opErr("read", net.ErrClosed)
		default:
		}
		c.mu.Lock()
		deadline, changed := c.deadline, c.deadlineSet
		c.mu.Unlock()
		var expired <-chan time.Time
		var timer *time.Timer
		if !deadline.IsZero() {
			wait := time.Until(deadline)
			if wait <= 0 {
				return 0, netip.AddrPort{}, c.opErr("read", os.ErrDeadlineExceeded)
			}
			timer = time.NewTimer(wait)
			expired = timer.C
		}
		select {
		case d := <-c.inbox:
			stop(timer)
			return copy(p, d.b), d.from, nil
		case <-c.closed:
			stop(timer)
			return 0, netip.AddrPort{}, c.opErr("read", net.ErrClosed)
		case <-expired:
			return 0, netip.AddrPort{}, c.opErr("read", os.ErrDeadlineExceeded)
		case <-changed:
			stop(timer) // re-arm with the new deadline
		}
	}
}

func stop(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// ReadFrom implements net.PacketConn; the address is a *net.UDPAddr.
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := c.ReadFromUDPAddrPort(p)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

// WriteToUDPAddrPort sends a copy of p to addr through the link's impairment.
// A datagram to an address nobody listens on is lost silently, as with UDP.
func (c *Conn) WriteToUDPAddrPort(p []byte, addr netip.AddrPort) (int, error) {
	select {
	case <-c.closed:
		return 0, c.opErr("write", net.ErrClosed)
	default:
	}
	if len(p) > maxDatagram {
		return 0, c.opErr("write", errTooLong)
	}
	if !addr.Addr().Unmap().Is4() {
		return 0, c.opErr("write", ErrBadAddr)
	}
	c.net.transmit(c.addr, netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()), p)
	return len(p), nil
}

// WriteTo implements net.PacketConn; addr must be a *net.UDPAddr.
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || ua == nil {
		return 0, c.opErr("write", ErrBadAddr)
	}
	return c.WriteToUDPAddrPort(p, ua.AddrPort())
}

// Close detaches c from the Network and unblocks readers with net.ErrClosed.
// Datagrams still in flight to it are lost.
func (c *Conn) Close() error {
	err := c.opErr("close", net.ErrClosed)
	c.closeOnce.Do(func() {
		close(c.closed)
		c.net.detach(c)
		err = nil
	})
	return err
}

// SetDeadline sets the read deadline; writes never block.
func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline makes blocked and future reads fail with an error matching
// os.ErrDeadlineExceeded once t passes; the zero Time clears it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.deadlineSet)
	c.deadlineSet = make(chan struct{})
	return nil
}

// SetWriteDeadline is accepted and ignored: writes never block.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Addr: c.LocalAddr(), Err: err}
}
