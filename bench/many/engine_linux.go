//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// engine drives all of a process's clients on one goroutine, the shared
// socket's reader (-client-engine pump): the clients are Polled
// (netstack.ClientConfig.Polled), and one pass reads a recvmmsg batch,
// hands each datagram to its client's Ingest, answers the echoes it
// returns with new messages, flushes each client that answered once and
// writes the pass's datagrams with sendmmsg — no goroutine wakes up and no
// channel carries a message between a datagram and its answer. The
// clients' timers still run on their own goroutines; what they write
// leaves with the engine's next pass, at most wait later.
type engine struct {
	s       *sharedSocket
	clients map[[4]byte]*engineClient
	all     []*engineClient
	wait    time.Duration // the longest a pass waits for a datagram
	expire  bool          // unreliable: replace the lost at every pass
	stopped atomic.Bool   // stop asked: no new messages, the clients are closing
	halted  chan struct{} // closed by the engine once it saw stopped
	quiet   bool          // the engine's own: halted is closed
	touched []*engineClient
	msgs    []netstack.Message
	w       *mmsgs
}

// engineClient is one client, its loop and its view.
type engineClient struct {
	c       *netstack.Client
	l       *loop
	v       *view
	touched bool
}

func newEngine(s *sharedSocket, conns []*netstack.Client, loops []*loop, views []*view, o clientOpts) *engine {
	e := &engine{s: s, clients: make(map[[4]byte]*engineClient, len(conns)), wait: 10 * time.Millisecond,
		expire: o.channel == wire.Unreliable, w: newMmsgs(sharedBatch, 0), halted: make(chan struct{})}
	if e.expire {
		e.wait = min(e.wait, o.lossAfter/5)
	}
	for i, c := range conns {
		ec := &engineClient{c: c, l: loops[i], v: views[i]}
		e.clients[views[i].local.Addr().As4()] = ec
		e.all = append(e.all, ec)
	}
	return e
}

// start hands the engine the socket: its reader runs the engine from its
// next batch on. What the views queued before is ingested first.
func (s *sharedSocket) start(e *engine) { s.eng.Store(e) }

// stop ends the new messages and returns once the engine no longer
// touches the loops: what is in flight is still acknowledged, so that the
// clients' Close finds everything acknowledged.
func (e *engine) stop() {
	e.stopped.Store(true)
	<-e.halted
}

// run is the reader's loop once the engine has the socket; it returns
// when the socket closes.
func (e *engine) run(r *mmsgs) {
	now := time.Now()
	polled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ec := range e.all {
		for _, p := range ec.v.takeQueued() { // read before the engine had the socket
			e.ingest(ec, (*p.b)[:p.n], now)
			putPkt(p.b)
		}
		for _, err := ec.c.Receive(polled); err == nil; _, err = ec.c.Receive(polled) {
		}
		for i := range ec.l.sent {
			ec.l.send(i, now.UnixNano())
		}
		e.touch(ec)
	}
	e.flush()
	var n int
	var errno syscall.Errno
	recv := r.receiver(&n, &errno)
	for {
		if !e.quiet && e.stopped.Load() {
			e.quiet = true
			close(e.halted)
		}
		_ = e.s.conn.SetReadDeadline(time.Now().Add(e.wait))
		err := e.s.rc.Read(recv)
		now := time.Now()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			n = 0
		case err != nil:
			return // closed
		case errno != 0:
			n = 0
		default:
			e.s.RecvCalls.Add(1)
			e.s.RecvDatagrams.Add(uint64(n))
		}
		for i := range n {
			e.datagram(r, i, now)
		}
		if e.expire && !e.quiet {
			for _, ec := range e.all {
				ec.l.expire(now.UnixNano())
				e.touch(ec)
			}
		}
		e.flush()
	}
}

// datagram hands datagram i of r to the client it was sent to.
func (e *engine) datagram(r *mmsgs, i int, now time.Time) {
	dst, ok := e.s.from(r, i)
	ec := e.clients[dst]
	if !ok || ec == nil {
		e.s.Dropped.Add(1)
		return
	}
	e.ingest(ec, r.bufs[i][:r.hdrs[i].Len], now)
}

// ingest gives one datagram to its client and answers its echoes.
func (e *engine) ingest(ec *engineClient, b []byte, now time.Time) {
	e.msgs = ec.c.Ingest(e.msgs[:0], e.s.server, b, now)
	if len(e.msgs) == 0 {
		return
	}
	if !e.quiet {
		ns := now.UnixNano()
		ec.l.at = now // one clock read a pass, not one a message
		for _, m := range e.msgs {
			if m.Header.Type == echoType && len(m.Payload) >= 12 {
				ec.l.echo(m.Payload, ns) // a refused Send: the slot stays empty, as a goroutine loop would end
			}
		}
	}
	e.touch(ec)
}

func (e *engine) touch(ec *engineClient) {
	if !ec.touched {
		ec.touched = true
		e.touched = append(e.touched, ec)
	}
}

// flush flushes every client that answered in this pass, then writes all
// that the views queued (theirs and their timers') in sendmmsg batches.
func (e *engine) flush() {
	for i, ec := range e.touched {
		ec.c.FlushNow()
		ec.touched = false
		e.touched[i] = nil
	}
	e.touched = e.touched[:0]
	e.s.writeQueued(e.w)
}

// takeQueued empties the view's queue; the caller returns the buffers.
func (v *view) takeQueued() []pkt {
	v.mu.Lock()
	defer v.mu.Unlock()
	q := v.q
	v.q = nil
	return q
}
