// Package memlink is an in-memory, seeded, lossy datagram network for tests:
// endpoints implementing net.PacketConn (and *net.UDPConn's AddrPort methods)
// with fake 127.0.0.x UDP addresses, joined by links that lose, duplicate,
// delay and reorder datagrams with configured probabilities.
//
// It works inside a testing/synctest bubble: delays are time.AfterFunc timers
// and ReadFrom blocks on channels, so a test of seconds of traffic runs in
// virtual time. Create the Network and its Conns inside the bubble.
//
// It must never block a writer and never alias a writer's buffer: every
// datagram is copied on WriteTo, and a receiver whose queue is full loses the
// datagram (counted), as a real socket buffer would.
package memlink

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Link is the impairment of one direction between two addresses.
type Link struct {
	// Loss is the probability (0..1) that a datagram is lost.
	Loss float64
	// Duplicate is the probability (0..1) that a surviving datagram is
	// delivered twice, each copy with its own delay.
	Duplicate float64
	// Latency is the mean one-way delay.
	Latency time.Duration
	// Jitter spreads the delay uniformly over Latency±Jitter (floored at 0).
	// Any Jitter reorders datagrams sent closer together than the spread.
	Jitter time.Duration
}

// Config configures a Network.
type Config struct {
	// Seed seeds every link's PCG generator (each directed address pair gets
	// its own stream derived from Seed), so that a run reproduces as long as
	// each Conn's writes happen in the same order.
	Seed uint64
	// Default is the impairment of every direction without its own SetLink.
	Default Link
	// QueueLen is the datagrams a Conn holds unread before it drops new ones.
	// 0 means 1024.
	QueueLen int
}

// Stats counts a Network's datagrams, all directions together.
type Stats struct {
	Sent       uint64 // WriteTo calls accepted
	Lost       uint64 // lost by a link's Loss
	Duplicated uint64 // extra copies made by a link's Duplicate
	Delivered  uint64 // datagrams placed in a receiver's queue
	QueueDrops uint64 // datagrams dropped because the receiver's queue was full
	Unroutable uint64 // datagrams for an address with no open Conn at delivery
}

// ErrAddrInUse is returned by Attach for an address already attached.
var ErrAddrInUse = errors.New("memlink: address already in use")

// ErrBadAddr is returned for an address that is not a valid IPv4 UDP address.
var ErrBadAddr = errors.New("memlink: not an IPv4 UDP address")

// Network is a set of Conns that can reach each other by address.
type Network struct {
	cfg Config

	mu    sync.Mutex
	conns map[netip.AddrPort]*Conn
	paths map[route]*path

	sent, lost, duplicated, delivered, queueDrops, unroutable atomic.Uint64
}

type route struct{ from, to netip.AddrPort }

// path is one direction's impairment and its own random stream.
type path struct {
	link Link
	rng  *rand.Rand
	fifo []timedDatagram // jitter-free paths only; guarded by Network.mu
}

// NewNetwork returns an empty Network.
func NewNetwork(cfg Config) *Network {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 1024
	}
	return &Network{
		cfg:   cfg,
		conns: make(map[netip.AddrPort]*Conn),
		paths: make(map[route]*path),
	}
}

// Addr returns the fake address 127.0.0.host:port.
func Addr(host byte, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, host}), port)
}

// Pair returns two Conns on a new Network: a at 127.0.0.1:27015 (a server's
// default port) and b at 127.0.0.2:50000, with aToB and bToA impairing each
// direction.
func Pair(seed uint64, aToB, bToA Link) (a, b *Conn) {
	n := NewNetwork(Config{Seed: seed})
	a, _ = n.Attach(Addr(1, 27015))
	b, _ = n.Attach(Addr(2, 50000))
	n.SetLink(a.addr, b.addr, aToB)
	n.SetLink(b.addr, a.addr, bToA)
	return a, b
}

// Attach opens a Conn at addr (an IPv4 address and port).
func (n *Network) Attach(addr netip.AddrPort) (*Conn, error) {
	if !addr.Addr().Is4() || addr.Port() == 0 {
		return nil, ErrBadAddr
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[addr] != nil {
		return nil, ErrAddrInUse
	}
	c := newConn(n, addr)
	n.conns[addr] = c
	return c, nil
}

// SetLink sets the impairment of the direction from → to, replacing the
// default for it. Its random stream restarts from the seed.
func (n *Network) SetLink(from, to netip.AddrPort, l Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.paths[route{from, to}] = n.newPath(from, to, l)
}

// newPath derives a direction's stream from the seed and the two addresses, so
// that traffic on one direction does not perturb another's randomness.
func (n *Network) newPath(from, to netip.AddrPort, l Link) *path {
	f, t := from.Addr().As4(), to.Addr().As4()
	k := uint64(f[0])<<56 | uint64(f[1])<<48 | uint64(f[2])<<40 | uint64(f[3])<<32 |
		uint64(t[0])<<24 | uint64(t[1])<<16 | uint64(t[2])<<8 | uint64(t[3])
	ports := uint64(from.Port())<<16 | uint64(to.Port())
	return &path{link: l, rng: rand.New(rand.NewPCG(n.cfg.Seed^k, ports*0x9E3779B97F4A7C15+1))}
}

// Stats returns the Network's counters.
func (n *Network) Stats() Stats {
	return Stats{
		Sent: n.sent.Load(), Lost: n.lost.Load(), Duplicated: n.duplicated.Load(),
		Delivered: n.delivered.Load(), QueueDrops: n.queueDrops.Load(),
		Unroutable: n.unroutable.Load(),
	}
}

// transmit applies the link from → to to a copy of p and schedules its
// delivery. It never blocks.
func (n *Network) transmit(from, to netip.AddrPort, p []byte) {
	n.sent.Add(1)
	n.mu.Lock()
	pa := n.paths[route{from, to}]
	if pa == nil {
		pa = n.newPath(from, to, n.cfg.Default)
		n.paths[route{from, to}] = pa
	}
	l := pa.link
	lost := l.Loss > 0 && pa.rng.Float64() < l.Loss
	copies := 1
	if !lost && l.Duplicate > 0 && pa.rng.Float64() < l.Duplicate {
		copies = 2
	}
	var delays [2]time.Duration
	for i := range copies {
		delays[i] = l.Latency
		if l.Jitter > 0 {
			delays[i] += time.Duration(pa.rng.Int64N(2*int64(l.Jitter)+1)) - l.Jitter
		}
	}
	n.mu.Unlock()

	if lost {
		n.lost.Add(1)
		return
	}
	if copies == 2 {
		n.duplicated.Add(1)
	}
	d := datagram{b: append([]byte(nil), p...), from: from}
	for _, delay := range delays[:copies] {
		switch {
		case delay <= 0:
			n.deliver(to, d)
		case l.Jitter == 0:
			n.enqueueFIFO(pa, to, d, delay)
		default:
			time.AfterFunc(delay, func() { n.deliver(to, d) })
		}
	}
}

// enqueueFIFO delivers d after delay, in send order with the path's other
// datagrams. Without jitter a link must not reorder, but timers that expire at
// the same (virtual) instant fire in no fixed order, so a jitter-free path
// keeps its own queue drained by one timer at a time.
func (n *Network) enqueueFIFO(pa *path, to netip.AddrPort, d datagram, delay time.Duration) {
	n.mu.Lock()
	pa.fifo = append(pa.fifo, timedDatagram{d: d, due: time.Now().Add(delay)})
	first := len(pa.fifo) == 1
	n.mu.Unlock()
	if first {
		time.AfterFunc(delay, func() { n.drainFIFO(pa, to) })
	}
}

func (n *Network) drainFIFO(pa *path, to netip.AddrPort) {
	for {
		n.mu.Lock()
		if len(pa.fifo) == 0 {
			n.mu.Unlock()
			return
		}
		head := pa.fifo[0]
		if wait := time.Until(head.due); wait > 0 {
			n.mu.Unlock()
			time.AfterFunc(wait, func() { n.drainFIFO(pa, to) })
			return
		}
		pa.fifo[0] = timedDatagram{}
		pa.fifo = pa.fifo[1:]
		n.mu.Unlock()
		n.deliver(to, head.d)
	}
}

type timedDatagram struct {
	d   datagram
	due time.Time
}

// deliver places d in the queue of the Conn at to, looked up at delivery time
// as a real network would.
func (n *Network) deliver(to netip.AddrPort, d datagram) {
	n.mu.Lock()
	c := n.conns[to]
	n.mu.Unlock()
	if c == nil {
		n.unroutable.Add(1)
		return
	}
	switch c.enqueue(d) {
	case enqueued:
		n.delivered.Add(1)
	case queueFull:
		n.queueDrops.Add(1)
	case connClosed:
		n.unroutable.Add(1)
	}
}

func (n *Network) detach(c *Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[c.addr] == c {
		delete(n.conns, c.addr)
	}
}
