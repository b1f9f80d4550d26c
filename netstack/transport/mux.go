package transport

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Sessions is a transport of sessions (web sessions) that a Mux serves
// beside a datagram transport (UDP): it names each session by an address,
// and can be read without blocking.
type Sessions interface {
	Transport
	// Has reports whether addr names a live session.
	Has(addr netip.AddrPort) bool
	// Sessions is the number of live sessions.
	Sessions() int
	// TryRead fills msgs with what is queued now, without blocking.
	TryRead(msgs []Message) int
	// SetNotify sets the function called after a datagram is queued for
	// reading (nil: none).
	SetNotify(f func())
}

// Mux is one Transport over a datagram transport (the game's UDP socket)
// and a transport of sessions (WebTransport and WebSocket): one server
// serves both. A write goes to the session its address names, else to the
// datagram transport; a read returns what either received. A datagram that
// arrives on the datagram transport from an address a live session is
// named by is dropped (counted in Collisions): the address is the
// session's.
type Mux struct {
	primary Transport
	web     Sessions

	// userDeadline is the deadline set by SetReadDeadline (unix ns; 0:
	// none); the primary's own deadline is also moved to wake a blocked
	// read when a session's datagram is queued.
	userDeadline atomic.Int64
	blocked      atomic.Bool
	readMu       sync.Mutex

	// Collisions counts datagrams dropped because their source address
	// names a live session of the other transport.
	Collisions atomic.Uint64
}

var _ Transport = (*Mux)(nil)
var _ PeerSizer = (*Mux)(nil)

// NewMux returns the Transport of primary and web together.
func NewMux(primary Transport, web Sessions) *Mux {
	m := &Mux{primary: primary, web: web}
	web.SetNotify(m.wake)
	return m
}

// wake interrupts a read blocked on the primary transport, so that a
// session's datagram is read at once.
func (m *Mux) wake() {
	if m.blocked.CompareAndSwap(true, false) {
		_ = m.primary.SetReadDeadline(time.Unix(0, 1))
	}
}

// ReadBatch implements Transport.
func (m *Mux) ReadBatch(msgs []Message) (int, error) {
	m.readMu.Lock()
	defer m.readMu.Unlock()
	for {
		if n := m.web.TryRead(msgs); n > 0 {
			return n, nil
		}
		dl := m.userDeadline.Load()
		if dl != 0 && time.Now().UnixNano() >= dl {
			return 0, os.ErrDeadlineExceeded
		}
		m.blocked.Store(true)
		if n := m.web.TryRead(msgs); n > 0 { // queued before blocked was seen
			m.blocked.Store(false)
			return n, nil
		}
		n, err := m.primary.ReadBatch(msgs)
		if !m.blocked.Swap(false) || err != nil {
			// A wake moved the primary's deadline (or may be about to): put
			// the caller's back before the next read.
			_ = m.primary.SetReadDeadline(deadlineTime(m.userDeadline.Load()))
		}
		if err != nil {
			if isTimeout(err) {
				continue // a wake, or the caller's deadline: checked above
			}
			return 0, err
		}
		if n = m.dropCollisions(msgs[:n]); n > 0 {
			return n + m.web.TryRead(msgs[n:]), nil
		}
	}
}

// dropCollisions removes the datagrams whose source names a live session
// and returns how many remain (moved to the front).
func (m *Mux) dropCollisions(msgs []Message) int {
	if m.web.Sessions() == 0 {
		return len(msgs)
	}
	k := 0
	for i := range msgs {
		if m.web.Has(msgs[i].Addr) {
			m.Collisions.Add(1)
			continue
		}
		if k != i {
			msgs[k].Buf, msgs[i].Buf = msgs[i].Buf, msgs[k].Buf
			msgs[k].N, msgs[k].Addr, msgs[k].Validated = msgs[i].N, msgs[i].Addr, msgs[i].Validated
		}
		k++
	}
	return k
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

func deadlineTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// WriteBatch implements Transport: runs of datagrams to the datagram
// transport go in one batch; a session's go to the sessions.
func (m *Mux) WriteBatch(msgs []Message) (sent int, err error) {
	if m.web.Sessions() == 0 {
		return m.primary.WriteBatch(msgs)
	}
	keep := func(n int, e error) {
		sent += n
		if err == nil && e != nil {
			err = e
		}
	}
	start := 0
	for i := range msgs {
		if !m.web.Has(msgs[i].Addr) {
			continue
		}
		if start < i {
			keep(m.primary.WriteBatch(msgs[start:i]))
		}
		keep(m.web.WriteBatch(msgs[i : i+1]))
		start = i + 1
	}
	if start < len(msgs) {
		keep(m.primary.WriteBatch(msgs[start:]))
	}
	return sent, err
}

// LocalAddr implements Transport: the datagram transport's.
func (m *Mux) LocalAddr() netip.AddrPort { return m.primary.LocalAddr() }

// MaxDatagram implements Transport: the datagram transport's.
func (m *Mux) MaxDatagram() int { return m.primary.MaxDatagram() }

// MaxDatagramTo implements PeerSizer.
func (m *Mux) MaxDatagramTo(addr netip.AddrPort) int {
	if m.web.Has(addr) {
		return MaxDatagramTo(m.web, addr)
	}
	return MaxDatagramTo(m.primary, addr)
}

// SetReadDeadline implements Transport.
func (m *Mux) SetReadDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	m.userDeadline.Store(ns)
	// The sessions' reads are polled; the primary's read is what blocks.
	return m.primary.SetReadDeadline(t)
}

// Close implements Transport: it closes the datagram transport; the
// sessions are closed by their owner (their listeners).
func (m *Mux) Close() error {
	m.web.SetNotify(nil)
	return m.primary.Close()
}
