//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// sharedBatch is the most datagrams one recvmmsg or sendmmsg carries.
const sharedBatch = 64

// viewQueue is the most received datagrams a view holds for its client
// (more are dropped, as a full socket buffer would).
const viewQueue = 256

// pktBufSize is the size of the buffers that carry a datagram between the
// shared socket and a view; a longer datagram gets a buffer of its own.
const pktBufSize = 2048

// pktinfoSpace is the room of one IP_PKTINFO control message.
var pktinfoSpace = unix.CmsgSpace(unix.SizeofInet4Pktinfo)

// sharedSocket is one UDP socket, bound to 0.0.0.0 and an ephemeral port,
// that many clients of a process share: each client sends from its own
// loopback address (127.2.x.y) through an IP_PKTINFO control message that
// sets the source address, and the socket's one reader hands each received
// datagram to the client whose address it was sent to (IP_PKTINFO on
// receive gives that). Datagrams go out and come in by sendmmsg and
// recvmmsg batches, so that the clients of a process share their system
// calls. It talks to one server address and to nothing else.
type sharedSocket struct {
	conn   *net.UDPConn
	rc     syscall.RawConn
	port   uint16
	server netip.AddrPort
	vmu    sync.RWMutex
	views  map[[4]byte]*view

	eng atomic.Pointer[engine] // -client-engine pump: the reader runs it

	wmu   sync.Mutex
	wq    []outPkt // written and not yet sent
	wkick chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup

	// Dropped counts received datagrams nobody took: from another
	// address than the server's, to no view's address, truncated, or to a
	// view whose queue was full.
	Dropped atomic.Uint64
	// Datagrams and Calls count the datagrams sent and the sendmmsg calls
	// that sent them; RecvDatagrams and RecvCalls the same for recvmmsg.
	Datagrams, Calls, RecvDatagrams, RecvCalls atomic.Uint64
}

// outPkt is a datagram written by a view, waiting for the writer.
type outPkt struct {
	v *view
	b *[]byte
	n int
}

var pktPool = sync.Pool{New: func() any { b := make([]byte, pktBufSize); return &b }}

func getPkt(n int) *[]byte {
	if n > pktBufSize {
		b := make([]byte, n)
		return &b
	}
	return pktPool.Get().(*[]byte)
}

func putPkt(b *[]byte) {
	if cap(*b) == pktBufSize {
		pktPool.Put(b)
	}
}

// newSharedSocket opens the socket for clients of server (an IPv4 address)
// and starts its reader and writer.
func newSharedSocket(server netip.AddrPort) (*sharedSocket, error) {
	if !server.Addr().Is4() {
		return nil, fmt.Errorf("shared socket: server %v is not IPv4", server)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	rc, err := conn.SyscallConn()
	if err == nil {
		ctlErr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
			// Don't Fragment, so the kernel picks no IP id per datagram
			// (the clients' datagrams are far below loopback's MTU).
			err = errors.Join(err, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE))
		})
		err = errors.Join(err, ctlErr)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("shared socket: IP_PKTINFO, IP_MTU_DISCOVER: %w", err)
	}
	s := &sharedSocket{conn: conn, rc: rc, port: uint16(conn.LocalAddr().(*net.UDPAddr).Port), server: server,
		views: map[[4]byte]*view{}, wkick: make(chan struct{}, 1), done: make(chan struct{})}
	s.wg.Add(2)
	go s.reader()
	go s.writer()
	return s, nil
}

// view returns the transport of the client at addr (a loopback IPv4
// address, 127.0.0.0/8, that no other view of s has).
func (s *sharedSocket) view(addr netip.Addr) (*view, error) {
	if !addr.Is4() || !addr.IsLoopback() {
		return nil, fmt.Errorf("shared socket: %v is not an IPv4 loopback address", addr)
	}
	v := &view{s: s, local: netip.AddrPortFrom(addr, s.port), wake: make(chan struct{}, 1), cmsg: make([]byte, pktinfoSpace)}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&v.cmsg[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
	info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&v.cmsg[unix.CmsgLen(0)]))
	info.Spec_dst = addr.As4() // the source address of what the view sends
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if s.views[addr.As4()] != nil {
		return nil, fmt.Errorf("shared socket: %v has a view already", addr)
	}
	s.views[addr.As4()] = v
	return v, nil
}

// Close ends the reader and the writer, closes the socket and the views.
func (s *sharedSocket) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	err := s.conn.Close()
	s.wg.Wait()
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	for _, v := range s.views {
		v.Close()
	}
	return err
}

// reader receives batches and hands every datagram to its view.
func (s *sharedSocket) reader() {
	defer s.wg.Done()
	r := newMmsgs(sharedBatch, transport.MaxUDPDatagram+1)
	var n int
	var errno syscall.Errno
	recv := r.receiver(&n, &errno)
	for {
		if e := s.eng.Load(); e != nil {
			e.run(r)
			return
		}
		if err := s.rc.Read(recv); err != nil {
			return // closed
		}
		if errno != 0 {
			continue // an ICMP error reported on the socket, say: keep reading
		}
		s.RecvCalls.Add(1)
		s.RecvDatagrams.Add(uint64(n))
		for i := range n {
			s.deliver(r, i)
		}
	}
}

// receiver returns the function that reads a recvmmsg batch into r for
// a syscall.RawConn's Read (false: nothing yet), setting *n and *errno.
func (r *mmsgs) receiver(n *int, errno *syscall.Errno) func(fd uintptr) bool {
	return func(fd uintptr) bool {
		r.prepare(sharedBatch)
		m, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), sharedBatch, 0, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false
		}
		*n, *errno = int(m), e
		return true
	}
}

// from returns the address datagram i of r was sent to, if it came whole
// from the server (ok false: drop it).
func (s *sharedSocket) from(r *mmsgs, i int) (dst [4]byte, ok bool) {
	h := &r.hdrs[i]
	dst, ok = pktinfoDst(r.ctrl[i][:h.Hdr.Controllen])
	src := (*unix.RawSockaddrInet4)(unsafe.Pointer(&r.names[i]))
	from := netip.AddrPortFrom(netip.AddrFrom4(src.Addr), ntohs(src.Port))
	return dst, ok && from == s.server && h.Hdr.Flags&unix.MSG_TRUNC == 0
}

// deliver hands datagram i of r to the view it was sent to.
func (s *sharedSocket) deliver(r *mmsgs, i int) {
	dst, ok := s.from(r, i)
	if !ok {
		s.Dropped.Add(1)
		return
	}
	s.vmu.RLock()
	v := s.views[dst]
	s.vmu.RUnlock()
	if v == nil || !v.push(r.bufs[i][:r.hdrs[i].Len]) {
		s.Dropped.Add(1)
	}
}

// pktinfoDst returns the destination address of an IP_PKTINFO control
// message, the one control message the socket asks for.
func pktinfoDst(c []byte) ([4]byte, bool) {
	for len(c) >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(h.Len)
		if l < unix.CmsgLen(0) || l > len(c) {
			return [4]byte{}, false
		}
		if h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && l >= unix.CmsgLen(unix.SizeofInet4Pktinfo) {
			return (*unix.Inet4Pktinfo)(unsafe.Pointer(&c[unix.CmsgLen(0)])).Addr, true
		}
		c = c[min(len(c), unix.CmsgSpace(l-unix.CmsgLen(0))):]
	}
	return [4]byte{}, false
}

// writer sends what the views wrote, in sendmmsg batches.
func (s *sharedSocket) writer() {
	defer s.wg.Done()
	w := newMmsgs(sharedBatch, 0)
	for {
		select {
		case <-s.done:
			return
		case <-s.wkick:
		}
		// The flush that woke the writer is one client's; let the other
		// runnable clients flush first, so that a sendmmsg carries many.
		runtime.Gosched()
		s.writeQueued(w)
	}
}

// writeQueued sends what the views queued, in sendmmsg batches (the
// writer's, or the engine's at the end of its pass).
func (s *sharedSocket) writeQueued(w *mmsgs) {
	s.wmu.Lock()
	q := s.wq
	s.wq = w.spare[:0]
	s.wmu.Unlock()
	// Walk q by index: reslicing it forward would shrink its capacity
	// and, once swapped back as s.wq, cost an allocation per round.
	for off := 0; off < len(q); off += sharedBatch {
		batch := q[off:min(len(q), off+sharedBatch)]
		s.send(w, batch)
		for i := range batch {
			putPkt(batch[i].b)
			batch[i] = outPkt{}
		}
	}
	w.spare = q[:0]
}

// send writes q (at most sharedBatch datagrams) to the server, each from
// its view's address. A datagram the system refuses is skipped: the
// protocol recovers as from a loss.
func (s *sharedSocket) send(w *mmsgs, q []outPkt) {
	to := unix.RawSockaddrInet4{Family: unix.AF_INET, Port: htons(s.server.Port()), Addr: s.server.Addr().As4()}
	for i, p := range q {
		w.names[i] = unix.RawSockaddrInet6{}
		*(*unix.RawSockaddrInet4)(unsafe.Pointer(&w.names[i])) = to
		hd := &w.hdrs[i]
		hd.Len = 0
		hd.Hdr.Name, hd.Hdr.Namelen = (*byte)(unsafe.Pointer(&w.names[i])), unix.SizeofSockaddrInet4
		w.iovs[i].Base = &(*p.b)[0]
		w.iovs[i].SetLen(p.n)
		hd.Hdr.Iov = &w.iovs[i]
		hd.Hdr.SetIovlen(1)
		hd.Hdr.Control = &p.v.cmsg[0]
		hd.Hdr.SetControllen(len(p.v.cmsg))
		hd.Hdr.Flags = 0
	}
	var sent int
	var errno syscall.Errno
	fn := func(fd uintptr) bool {
		m, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[sent])), uintptr(len(q)-sent), 0, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false
		}
		errno = e
		if e == 0 {
			sent += int(m)
		}
		return true
	}
	for sent < len(q) {
		if s.rc.Write(fn) != nil {
			return // closed
		}
		s.Calls.Add(1)
		if errno != 0 {
			sent++ // the first of the rest was refused: skip it
		}
	}
	s.Datagrams.Add(uint64(len(q)))
	clear(w.iovs[:len(q)])
}

// mmsgs is the message headers of recvmmsg or sendmmsg, built once.
type mmsgs struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	bufs  [][]byte // a reader's own buffers
	spare []outPkt // a writer's queue, swapped with the socket's
	ctrl  [][]byte // a reader's control buffers
}

func newMmsgs(n, bufSize int) *mmsgs {
	m := &mmsgs{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrInet6, n)}
	if bufSize > 0 {
		m.bufs, m.ctrl = make([][]byte, n), make([][]byte, n)
		for i := range n {
			m.bufs[i], m.ctrl[i] = make([]byte, bufSize), make([]byte, 64)
			m.iovs[i].Base = &m.bufs[i][0]
			m.iovs[i].SetLen(bufSize)
		}
	}
	return m
}

// prepare resets the first k headers of a reader for a recvmmsg.
func (m *mmsgs) prepare(k int) {
	for i := range k {
		h := &m.hdrs[i].Hdr
		h.Name, h.Namelen = (*byte)(unsafe.Pointer(&m.names[i])), unix.SizeofSockaddrInet6
		h.Iov = &m.iovs[i]
		h.SetIovlen(1)
		h.Control = &m.ctrl[i][0]
		h.SetControllen(len(m.ctrl[i]))
		h.Flags = 0
		m.hdrs[i].Len = 0
	}
}

// ntohs reads a port stored in network byte order.
func ntohs(p uint16) uint16 {
	return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&p))[:])
}

// htons stores a port in network byte order.
func htons(p uint16) (v uint16) {
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&v))[:], p)
	return v
}
