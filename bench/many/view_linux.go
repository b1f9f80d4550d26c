//go:build linux

package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// view is one client's transport on a shared socket: it sends from the
// client's address and reads what was sent to it.
type view struct {
	s     *sharedSocket
	local netip.AddrPort
	cmsg  []byte // IP_PKTINFO with the client's address as the source

	mu       sync.Mutex
	q        []pkt
	deadline time.Time
	closed   bool
	wake     chan struct{} // a datagram, a deadline or Close: look again
}

// pkt is a received datagram waiting in a view.
type pkt struct {
	b *[]byte
	n int
}

var _ transport.Transport = (*view)(nil)

// push queues a copy of b; false when the queue is full or the view closed.
func (v *view) push(b []byte) bool {
	p := getPkt(len(b))
	n := copy(*p, b)
	v.mu.Lock()
	ok := !v.closed && len(v.q) < viewQueue
	if ok {
		v.q = append(v.q, pkt{p, n})
	}
	v.mu.Unlock()
	if !ok {
		putPkt(p)
		return false
	}
	v.poke()
	return true
}

func (v *view) poke() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// ReadBatch returns the datagrams queued for the view, waiting for one
// until the deadline or Close.
func (v *view) ReadBatch(msgs []transport.Message) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		v.mu.Lock()
		if len(v.q) > 0 {
			n := min(len(msgs), len(v.q))
			for i := range n {
				p := v.q[i]
				m := &msgs[i]
				m.N = copy(m.Buf, (*p.b)[:p.n])
				m.Addr, m.Validated = v.s.server, false
				putPkt(p.b)
			}
			rest := copy(v.q, v.q[n:])
			clear(v.q[rest:])
			v.q = v.q[:rest]
			v.mu.Unlock()
			return n, nil
		}
		closed, dl := v.closed, v.deadline
		v.mu.Unlock()
		switch {
		case closed:
			return 0, net.ErrClosed
		case dl.IsZero():
			<-v.wake
		case !time.Now().Before(dl):
			return 0, os.ErrDeadlineExceeded
		default:
			if timer == nil {
				timer = time.NewTimer(time.Until(dl))
			} else {
				timer.Reset(time.Until(dl))
			}
			select {
			case <-v.wake:
			case <-timer.C:
			}
		}
	}
}

// WriteBatch queues a copy of every message for the socket's writer; a
// message to any other address than the server's is refused.
func (v *view) WriteBatch(msgs []transport.Message) (int, error) {
	var err error
	sent := 0
	v.s.wmu.Lock()
	for i := range msgs {
		m := &msgs[i]
		if m.Addr != v.s.server || m.N > transport.MaxUDPDatagram {
			if err == nil {
				err = fmt.Errorf("shared socket: refused a datagram to %v: only the server %v", m.Addr, v.s.server)
			}
			continue
		}
		p := getPkt(m.N)
		copy(*p, m.Buf[:m.N])
		v.s.wq = append(v.s.wq, outPkt{v, p, m.N})
		sent++
	}
	v.s.wmu.Unlock()
	if sent > 0 && v.s.eng.Load() == nil { // else the engine writes at the end of its pass
		select {
		case v.s.wkick <- struct{}{}:
		default:
		}
	}
	return sent, err
}

// LocalAddr is the client's own address and the socket's port.
func (v *view) LocalAddr() netip.AddrPort { return v.local }

// MaxDatagram is UDP's.
func (v *view) MaxDatagram() int { return transport.MaxUDPDatagram }

// SetReadDeadline sets the deadline and wakes a blocked read to look at it.
func (v *view) SetReadDeadline(t time.Time) error {
	v.mu.Lock()
	v.deadline = t
	v.mu.Unlock()
	v.poke()
	return nil
}

// Close ends the view's reads; the socket stays open for the others.
func (v *view) Close() error {
	v.mu.Lock()
	v.closed = true
	for _, p := range v.q {
		putPkt(p.b)
	}
	v.q = nil
	v.mu.Unlock()
	v.poke()
	return nil
}
