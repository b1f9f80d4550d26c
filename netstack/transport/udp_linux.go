//go:build linux

package transport

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysReader is recvmmsg over a UDP socket: the message headers, their
// iovecs and the source address storage are built once; each read points
// the iovecs at the caller's buffers.
//
// A batch of one is a recvfrom or sendto, which the kernel serves with
// less work than a recvmmsg or sendmmsg of one.
//
// Reads, and writes of up to maxRawWrite datagrams, are raw system calls
// (unix.RawSyscall6): the socket is non-blocking (the poller waits for
// readiness, not the call), so they never block, and a raw call skips the
// scheduler's system-call bookkeeping. That bookkeeping was a sixth of a
// busy one-core echo server's CPU: a process whose P had just been idle
// woke the runtime's monitor thread at its next system call, which then
// slept and woke every 20 µs on the same core to watch calls that take
// microseconds.
type sysReader struct {
	rc    syscall.RawConn
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	k     int                     // slots of this read
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool // bound once: a method value allocates per use
}

func newSysReader(uc *net.UDPConn, n int) *sysReader {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &sysReader{rc: rc, hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrInet6, n)}
	r.fn = r.recv
	return r
}

func (r *sysReader) recv(fd uintptr) bool {
	for i := range r.k {
		h := &r.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control, h.Controllen, h.Flags = nil, 0, 0
		r.hdrs[i].Len = 0
	}
	var n uintptr
	var errno syscall.Errno
	if r.k == 1 { // recvfrom: the kernel's shorter path for one datagram
		h := &r.hdrs[0]
		n, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(r.iovs[0].Base)), uintptr(r.iovs[0].Len),
			0, uintptr(unsafe.Pointer(h.Hdr.Name)), uintptr(unsafe.Pointer(&h.Hdr.Namelen)))
		h.Len, n = uint32(n), 1
	} else {
		n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(r.k), 0, 0, 0)
	}
	if errno == unix.EAGAIN || errno == unix.EINTR {
		return false // wait for readability (the poller honours deadlines)
	}
	r.n, r.errno = int(n), errno
	return true
}

// read fills msgs[:n] (at most len(r.hdrs) of them).
func (r *sysReader) read(msgs []Message) (int, error) {
	r.k = min(len(msgs), len(r.hdrs))
	for i := range r.k {
		if b := msgs[i].Buf; len(b) > 0 {
			r.iovs[i].Base = &b[0]
			r.iovs[i].SetLen(len(b))
		} else {
			r.iovs[i].Base = nil
			r.iovs[i].SetLen(0)
		}
	}
	err := r.rc.Read(r.fn)
	clear(r.iovs[:r.k]) // hold no caller's buffer between reads
	if err != nil {
		return 0, err
	}
	if r.errno != 0 {
		if r.k == 1 {
			return 0, os.NewSyscallError("recvfrom", r.errno)
		}
		return 0, os.NewSyscallError("recvmmsg", r.errno)
	}
	for i := 0; i < r.n; i++ {
		m := &msgs[i]
		m.N = min(int(r.hdrs[i].Len), len(m.Buf))
		m.Addr = sockaddrAddrPort(&r.names[i])
		m.Validated = false
	}
	return r.n, nil
}

// sockaddrAddrPort decodes a sockaddr_in or sockaddr_in6 without allocating.
func sockaddrAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), ntohs(sa4.Port))
	case unix.AF_INET6:
		return unmap(netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), ntohs(sa.Port)))
	}
	return netip.AddrPort{}
}

// ntohs reads a port stored in network byte order.
func ntohs(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

func htons(p uint16) uint16 {
	var v uint16
	b := (*[2]byte)(unsafe.Pointer(&v))
	b[0], b[1] = byte(p>>8), byte(p)
	return v
}

// maxRawWrite is the most datagrams a raw sendmmsg carries. A raw call
// keeps its goroutine's P for its whole length, and on loopback a datagram
// written costs its receiver's work too (microseconds each): a larger
// batch (a tick's flush of hundreds) is an ordinary system call, whose P
// the scheduler may hand to another goroutine meanwhile. A receive pass's
// answers (up to a read batch of 32 datagrams, ~0.1 ms of writing) stay
// raw: a saturated server writes such batches back to back, and as
// ordinary calls they kept waking the runtime's monitor thread on the
// server's core (7–8% of its CPU).
const maxRawWrite = 32

// sysWriter is sendmmsg over a UDP socket.
type sysWriter struct {
	rc    syscall.RawConn
	v6    bool // an AF_INET6 socket: IPv4 destinations are written IPv4-mapped
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	cur   []unix.Mmsghdr // the part of hdrs the callback sends
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func newSysWriter(uc *net.UDPConn, n int) *sysWriter {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &sysWriter{rc: rc, hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrInet6, n)}
	var family int
	ctlErr := rc.Control(func(fd uintptr) {
		if sa, err := unix.Getsockname(int(fd)); err == nil {
			if _, ok := sa.(*unix.SockaddrInet6); ok {
				family = unix.AF_INET6
			} else {
				family = unix.AF_INET
			}
		}
	})
	if ctlErr != nil || family == 0 {
		return nil
	}
	w.v6 = family == unix.AF_INET6
	w.fn = w.send
	return w
}

func (w *sysWriter) send(fd uintptr) bool {
	var n uintptr
	var errno syscall.Errno
	if len(w.cur) == 1 { // sendto: the kernel's shorter path for one datagram
		h := &w.cur[0].Hdr
		_, _, errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(h.Iov.Base)), uintptr(h.Iov.Len),
			0, uintptr(unsafe.Pointer(h.Name)), uintptr(h.Namelen))
		n = 1
	} else if len(w.cur) <= maxRawWrite {
		n, _, errno = unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.cur[0])), uintptr(len(w.cur)), 0, 0, 0)
	} else {
		n, _, errno = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.cur[0])), uintptr(len(w.cur)), 0, 0, 0)
	}
	if errno == unix.EAGAIN || errno == unix.EINTR {
		return false // wait for room in the socket buffer
	}
	w.n, w.errno = int(n), errno
	return true
}

func (w *sysWriter) write(msgs []Message) (sent int, err error) {
	for len(msgs) > 0 {
		k := min(len(msgs), len(w.hdrs))
		for i := range k {
			m := &msgs[i]
			namelen := w.putAddr(&w.names[i], m.Addr)
			if m.N > 0 {
				w.iovs[i].Base = &m.Buf[0]
			} else {
				w.iovs[i].Base = nil
			}
			w.iovs[i].SetLen(m.N)
			h := &w.hdrs[i].Hdr
			h.Name, h.Namelen = (*byte)(unsafe.Pointer(&w.names[i])), namelen
			h.Iov = &w.iovs[i]
			h.SetIovlen(1)
			h.Control, h.Controllen, h.Flags = nil, 0, 0
			w.hdrs[i].Len = 0
		}
		done := 0
		for done < k {
			w.cur = w.hdrs[done:k]
			if e := w.rc.Write(w.fn); e != nil {
				return sent, e // the socket is closed
			}
			if w.errno != 0 {
				// The first datagram of w.cur was refused: skip it.
				if err == nil && len(w.cur) == 1 {
					err = os.NewSyscallError("sendto", w.errno)
				} else if err == nil {
					err = os.NewSyscallError("sendmmsg", w.errno)
				}
				done++
				continue
			}
			done += w.n
			sent += w.n
		}
		msgs = msgs[k:]
	}
	w.cur = nil
	return sent, err
}

// putAddr writes ap as the socket's family of sockaddr and returns its length.
func (w *sysWriter) putAddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort) uint32 {
	if !w.v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: htons(ap.Port()), Addr: ap.Addr().Unmap().As4()}
		return unix.SizeofSockaddrInet4
	}
	a := ap.Addr()
	if a.Is4() {
		a = netip.AddrFrom16(a.As16()) // IPv4-mapped on a dual-stack socket
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: htons(ap.Port()), Addr: a.As16()}
	return unix.SizeofSockaddrInet6
}
