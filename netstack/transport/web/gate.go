package web

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// gate caps concurrent connections: per IP address and in all. Its table
// holds only addresses with a connection open, so it is bounded by the
// total cap.
type gate struct {
	perAddr, total int

	mu    sync.Mutex
	open  map[netip.Addr]int
	count int
}

func (g *gate) init(perAddr, total int) {
	g.perAddr, g.total, g.open = perAddr, total, make(map[netip.Addr]int)
}

// enter takes a place for a connection from a, or reports false.
func (g *gate) enter(a netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.count >= g.total || g.open[a] >= g.perAddr {
		return false
	}
	g.open[a]++
	g.count++
	return true
}

// busy reports whether half the total cap is in use.
func (g *gate) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count >= g.total/2
}

// leave gives a's place back.
func (g *gate) leave(a netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[a] <= 1 {
		delete(g.open, a)
	} else {
		g.open[a]--
	}
	g.count--
}

// gatedListener closes, at once, a TCP connection the gate has no place
// for; an accepted one gives its place back when closed.
type gatedListener struct {
	net.Listener
	gate    *gate
	refused *atomic.Uint64
}

func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a := addrOf(c.RemoteAddr()).Addr()
		if !l.gate.enter(a) {
			l.refused.Add(1)
			c.Close()
			continue
		}
		return &gatedConn{Conn: c, gate: l.gate, addr: a}, nil
	}
}

type gatedConn struct {
	net.Conn
	gate *gate
	addr netip.Addr
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { c.gate.leave(c.addr) })
	return c.Conn.Close()
}
