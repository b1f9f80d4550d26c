// Package web carries netstack's datagrams over the two transports a
// browser has: WebTransport datagrams (HTTP/3) and WebSocket binary
// messages. Each web session is one peer of a transport.Transport (a Hub):
// it is named by an address, each v4 datagram travels as one WebTransport
// datagram or one WebSocket message, and its reads are marked Validated,
// since the QUIC or TCP handshake under the session already proved the
// peer's address. Everything above the seam — handshake, pinning, sealing —
// is unchanged (docs/protocol.md, "Transports").
//
// The server side is a Server: an HTTP listener on TCP (WebSocket at /ws,
// the connect facts at /web.json) and an HTTP/3 listener on UDP
// (WebTransport at /wt) on the same port number, with origin checks,
// per-address connection budgets, a cap on concurrent sessions and idle
// timeouts. The client side is DialWebTransport and DialWebSocket: a
// Transport with one peer, for netstack.ClientConfig.Transport.
package web

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// inboundQueue is how many received datagrams wait for the reader of a Hub,
// all sessions together, and inboundBytes how many bytes; past either a
// datagram is dropped, as a full socket buffer drops UDP datagrams (the
// protocol recovers). peerQueue bounds one session's share, so that one
// peer that sends as fast as its TCP connection allows cannot take the
// others' places.
const (
	inboundQueue = 4096
	inboundBytes = 8 << 20
	peerQueue    = 128
)

// outboundQueue is how many datagrams wait for one session's writer; past it
// a datagram is dropped (a session that cannot keep up loses datagrams
// rather than stalling the server's writers). The writer is a goroutine
// started when a datagram finds none running; it ends when the queue is
// empty.
const outboundQueue = 256

// inbound is one datagram a session received.
type inbound struct {
	b []byte
	p *peer
}

// link is one web session's way to the peer: send writes one datagram
// (blocking; called by the session's writer goroutine only), close ends
// the session.
type link interface {
	send(b []byte) error
	close(reason string)
}

// peer is one web session of a Hub.
type peer struct {
	key      netip.AddrPort
	kind     string // "webtransport" or "websocket"
	max      int    // the largest datagram the session carries
	lk       link
	done     chan struct{}
	once     sync.Once
	lastRead atomic.Int64 // unix nanoseconds of the last datagram received
	queued   atomic.Int32 // its datagrams waiting for the Hub's reader

	// The datagrams waiting to be sent. A writer goroutine runs only
	// while there are some (writing): an idle session holds none.
	outMu   sync.Mutex
	out     [][]byte
	spare   [][]byte // the writer's last batch, for reuse
	writing bool
	ended   bool
}

// Hub is the Transport of a set of web sessions: reads return what any
// session received, writes go to the session named by the address.
type Hub struct {
	local     netip.AddrPort
	validated bool // reads are marked Validated (a server's sessions)
	// single: a client's Hub, of one session; when it ends, the Hub closes
	// (reads return net.ErrClosed once what the session received is read).
	single bool
	max    int // MaxDatagram

	in       chan inbound
	done     chan struct{}
	doneOnce sync.Once

	mu    sync.RWMutex
	peers map[netip.AddrPort]*peer
	count atomic.Int32

	queuedBytes atomic.Int64 // bytes of the datagrams waiting in in
	deadline    atomic.Int64 // unix nanoseconds; 0: none
	deadlineCh  chan struct{}
	// notify, when set (by a Mux), is called after a datagram is queued.
	notify atomic.Pointer[func()]

	// Dropped counts datagrams dropped at a full inbound or outbound queue
	// or too large for their session.
	Dropped atomic.Uint64
	// Overflowed counts datagrams sent on a WebTransport overflow stream
	// (larger than the session's datagrams).
	Overflowed atomic.Uint64
}

var _ transport.Transport = (*Hub)(nil)
var _ transport.PeerSizer = (*Hub)(nil)
var _ transport.Sessions = (*Hub)(nil)

// NewHub returns an empty Hub whose LocalAddr is local and whose reads are
// marked Validated when validated is set.
func NewHub(local netip.AddrPort, validated bool) *Hub {
	return &Hub{local: local, validated: validated, max: transport.MaxUDPDatagram,
		in: make(chan inbound, inboundQueue), done: make(chan struct{}),
		peers: make(map[netip.AddrPort]*peer), deadlineCh: make(chan struct{}, 1)}
}

// Sessions is the number of live sessions.
func (h *Hub) Sessions() int { return int(h.count.Load()) }

// Has reports whether addr names a live session.
func (h *Hub) Has(addr netip.AddrPort) bool {
	if h.count.Load() == 0 {
		return false
	}
	h.mu.RLock()
	_, ok := h.peers[addr]
	h.mu.RUnlock()
	return ok
}

// add registers a session under a key free among the live sessions: want
// itself, else the next port numbers above it (0 skipped). taken, when not
// nil, also rules a key out; it is asked without the Hub's lock held (it
// takes the netstack server's, which may be held around a write to the
// Hub).
func (h *Hub) add(want netip.AddrPort, kind string, max int, lk link, taken func(netip.AddrPort) bool) (*peer, error) {
	key := want
	for range 1 << 16 {
		if key.Port() != 0 && (taken == nil || !taken(key)) {
			p, err := h.addAt(key, kind, max, lk)
			if p != nil || err != nil {
				return p, err
			}
		}
		key = netip.AddrPortFrom(key.Addr(), key.Port()+1)
	}
	return nil, errors.New("web: no free peer key for " + want.Addr().String())
}

// addAt registers the session under key unless a live session has it
// (nil, nil).
func (h *Hub) addAt(key netip.AddrPort, kind string, max int, lk link) (*peer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return nil, net.ErrClosed
	default:
	}
	if _, live := h.peers[key]; live {
		return nil, nil
	}
	p := &peer{key: key, kind: kind, max: max, lk: lk, done: make(chan struct{})}
	p.lastRead.Store(time.Now().UnixNano())
	h.peers[key] = p
	h.count.Add(1)
	return p, nil
}

// remove ends a session: it leaves the table, its writer stops and its
// link is closed.
func (h *Hub) remove(p *peer, reason string) {
	p.once.Do(func() {
		h.mu.Lock()
		if h.peers[p.key] == p {
			delete(h.peers, p.key)
			h.count.Add(-1)
		}
		h.mu.Unlock()
		close(p.done)
		p.end()
		p.lk.close(reason)
		if h.single {
			h.closeDone()
		}
	})
}

// deliver queues a datagram a session received; it is dropped when the
// queue is full or the Hub closed.
func (h *Hub) deliver(p *peer, b []byte) {
	p.lastRead.Store(time.Now().UnixNano())
	queued, bytes := p.queued.Add(1), h.queuedBytes.Add(int64(len(b)))
	if queued > peerQueue || bytes > inboundBytes {
		h.unqueue(p, len(b))
		h.Dropped.Add(1)
		return
	}
	select {
	case h.in <- inbound{b: b, p: p}:
		if f := h.notify.Load(); f != nil {
			(*f)()
		}
	default:
		h.unqueue(p, len(b))
		h.Dropped.Add(1)
	}
}

// unqueue takes back what deliver counted for a datagram.
func (h *Hub) unqueue(p *peer, n int) {
	p.queued.Add(-1)
	h.queuedBytes.Add(-int64(n))
}

// push queues a datagram for p's writer, starting one when none runs;
// false: the session ended or its queue is full.
func (h *Hub) push(p *peer, b []byte) bool {
	p.outMu.Lock()
	if p.ended || len(p.out) >= outboundQueue {
		p.outMu.Unlock()
		return false
	}
	p.out = append(p.out, b)
	start := !p.writing
	p.writing = true
	p.outMu.Unlock()
	if start {
		go h.drain(p)
	}
	return true
}

// drain is p's writer: it sends what is queued until nothing is, then
// ends.
func (h *Hub) drain(p *peer) {
	for {
		p.outMu.Lock()
		batch := p.out
		if len(batch) == 0 || p.ended {
			p.writing = false
			p.outMu.Unlock()
			return
		}
		p.out, p.spare = p.spare[:0], nil
		p.outMu.Unlock()
		for i, b := range batch {
			err := p.lk.send(b)
			putBuf(b)
			batch[i] = nil
			if err != nil {
				for _, rest := range batch[i+1:] {
					putBuf(rest)
				}
				clear(batch)
				h.remove(p, "send failed")
				return
			}
		}
		p.outMu.Lock()
		p.spare = batch[:0]
		p.outMu.Unlock()
	}
}

// end stops p's sending: what is queued is dropped.
func (p *peer) end() {
	p.outMu.Lock()
	p.ended = true
	for _, b := range p.out {
		putBuf(b)
	}
	p.out, p.spare = nil, nil
	p.outMu.Unlock()
}

// ReadBatch implements transport.Transport.
func (h *Hub) ReadBatch(msgs []transport.Message) (int, error) {
	for {
		if n := h.TryRead(msgs); n > 0 {
			return n, nil
		}
		var timer *time.Timer
		var expired <-chan time.Time
		if dl := h.deadline.Load(); dl != 0 {
			d := time.Until(time.Unix(0, dl))
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			timer = time.NewTimer(d)
			expired = timer.C
		}
		select {
		case in := <-h.in:
			if timer != nil {
				timer.Stop()
			}
			h.fill(&msgs[0], in)
			return 1 + h.TryRead(msgs[1:]), nil
		case <-expired:
		case <-h.deadlineCh:
		case <-h.done:
			if timer != nil {
				timer.Stop()
			}
			if n := h.TryRead(msgs); n > 0 { // what arrived before the end
				return n, nil
			}
			return 0, net.ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// TryRead fills msgs with the datagrams queued now, without blocking.
func (h *Hub) TryRead(msgs []transport.Message) int {
	n := 0
	for n < len(msgs) {
		select {
		case in := <-h.in:
			h.fill(&msgs[n], in)
			n++
		default:
			return n
		}
	}
	return n
}

func (h *Hub) fill(m *transport.Message, in inbound) {
	h.unqueue(in.p, len(in.b))
	m.N = copy(m.Buf, in.b)
	m.Addr, m.Validated = in.p.key, h.validated
}

// WriteBatch implements transport.Transport: each datagram is queued for
// its session's writer. A datagram to no live session, larger than its
// session carries or past a full queue is skipped with an error.
func (h *Hub) WriteBatch(msgs []transport.Message) (sent int, err error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i := range msgs {
		if e := h.queueLocked(&msgs[i]); e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		sent++
	}
	return sent, err
}

var (
	errNoSession = errors.New("web: no session at that address")
	errTooLarge  = errors.New("web: datagram larger than the session carries")
	errQueueFull = errors.New("web: the session's send queue is full")
)

func (h *Hub) queueLocked(m *transport.Message) error {
	p := h.peers[m.Addr]
	if p == nil {
		return errNoSession
	}
	if m.N > transport.MaxUDPDatagram {
		h.Dropped.Add(1)
		return errTooLarge
	}
	b := getBuf(m.N)
	copy(b, m.Buf[:m.N])
	if !h.push(p, b) {
		putBuf(b)
		h.Dropped.Add(1)
		return errQueueFull
	}
	return nil
}

// LocalAddr implements transport.Transport.
func (h *Hub) LocalAddr() netip.AddrPort { return h.local }

// MaxDatagram implements transport.Transport: 65,507; a session's own
// size is MaxDatagramTo.
func (h *Hub) MaxDatagram() int { return h.max }

// MaxDatagramTo implements transport.PeerSizer: the largest datagram the
// session at addr carries as one message of its transport (0: no session).
func (h *Hub) MaxDatagramTo(addr netip.AddrPort) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if p := h.peers[addr]; p != nil {
		return p.max
	}
	return 0
}

// SetReadDeadline implements transport.Transport.
func (h *Hub) SetReadDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	h.deadline.Store(ns)
	select {
	case h.deadlineCh <- struct{}{}:
	default:
	}
	return nil
}

// Close implements transport.Transport: it ends every session.
func (h *Hub) Close() error {
	h.closeDone()
	h.mu.Lock()
	all := make([]*peer, 0, len(h.peers))
	for _, p := range h.peers {
		all = append(all, p)
	}
	h.mu.Unlock()
	for _, p := range all {
		h.remove(p, "closing")
	}
	return nil
}

// closeDone marks the Hub closed: no session is added, and reads end once
// what was received is read.
func (h *Hub) closeDone() {
	h.doneOnce.Do(func() {
		h.mu.Lock()
		close(h.done)
		h.mu.Unlock()
	})
}

// closeIdle ends the sessions that received nothing since before cutoff.
func (h *Hub) closeIdle(cutoff time.Time) int {
	var idle []*peer
	h.mu.RLock()
	for _, p := range h.peers {
		if p.lastRead.Load() < cutoff.UnixNano() {
			idle = append(idle, p)
		}
	}
	h.mu.RUnlock()
	for _, p := range idle {
		h.remove(p, "idle")
	}
	return len(idle)
}

// bufPool holds send buffers of a common datagram's size.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1500); return &b }}

func getBuf(n int) []byte {
	if n > 1500 {
		return make([]byte, n)
	}
	bp := bufPool.Get().(*[]byte)
	return (*bp)[:n]
}

func putBuf(b []byte) {
	if cap(b) != 1500 {
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}

// SetNotify sets the function called after a datagram is queued for reading
// (a Mux's wake-up); nil: none.
func (h *Hub) SetNotify(f func()) {
	if f == nil {
		h.notify.Store(nil)
		return
	}
	h.notify.Store(&f)
}
