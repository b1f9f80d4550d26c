//go:build linux

package web

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgBatch is how many packets one sendmmsg carries.
const mmsgBatch = 64

// mmsgWriter is sendmmsg over the socket, control messages included.
type mmsgWriter struct {
	rc    syscall.RawConn
	v6    bool // an AF_INET6 socket: IPv4 destinations are written IPv4-mapped
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	cur   []unix.Mmsghdr
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func newMMsgWriter(uc *net.UDPConn) *mmsgWriter {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	family := 0
	if ctlErr := rc.Control(func(fd uintptr) {
		if sa, err := unix.Getsockname(int(fd)); err == nil {
			family = unix.AF_INET
			if _, ok := sa.(*unix.SockaddrInet6); ok {
				family = unix.AF_INET6
			}
		}
	}); ctlErr != nil || family == 0 {
		return nil
	}
	w := &mmsgWriter{rc: rc, v6: family == unix.AF_INET6, hdrs: make([]unix.Mmsghdr, mmsgBatch),
		iovs: make([]unix.Iovec, mmsgBatch), names: make([]unix.RawSockaddrInet6, mmsgBatch)}
	w.fn = w.call
	return w
}

func (w *mmsgWriter) call(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.cur[0])), uintptr(len(w.cur)), 0, 0, 0)
	if errno == unix.EAGAIN || errno == unix.EINTR {
		return false // wait for room in the socket buffer
	}
	w.n, w.errno = int(n), errno
	return true
}

// write sends batch in order, mmsgBatch packets a call; a packet the
// kernel refuses is skipped (a GSO packet is retried as its segments).
func (w *mmsgWriter) write(c *batchConn, batch []outPacket) {
	for len(batch) > 0 {
		k := min(len(batch), mmsgBatch)
		for i := range k {
			w.fill(i, &batch[i])
		}
		done := 0
		for done < k {
			w.cur = w.hdrs[done:k]
			c.Batches.Add(1)
			if err := w.rc.Write(w.fn); err != nil { // closed, or past the close deadline
				c.Errors.Add(uint64(k - done))
				break
			}
			if w.errno != 0 {
				c.refused(&batch[done], w.errno)
				done++
				continue
			}
			done += w.n
			c.Packets.Add(uint64(w.n))
		}
		clear(w.iovs[:k]) // hold no packet between calls
		for i := range k {
			w.hdrs[i].Hdr.Control = nil
		}
		batch = batch[k:]
	}
	w.cur = nil
}

func (w *mmsgWriter) fill(i int, p *outPacket) {
	if len(p.b) > 0 {
		w.iovs[i].Base = &p.b[0]
	} else {
		w.iovs[i].Base = nil
	}
	w.iovs[i].SetLen(len(p.b))
	h := &w.hdrs[i].Hdr
	h.Name, h.Namelen = (*byte)(unsafe.Pointer(&w.names[i])), w.putAddr(&w.names[i], p.addr)
	h.Iov = &w.iovs[i]
	h.SetIovlen(1)
	h.Control = nil
	if len(p.oob) > 0 {
		h.Control = &p.oob[0]
	}
	h.SetControllen(len(p.oob))
	h.Flags = 0
	w.hdrs[i].Len = 0
}

// putAddr writes ap as the socket's family of sockaddr and returns its
// length.
func (w *mmsgWriter) putAddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort) uint32 {
	*sa = unix.RawSockaddrInet6{}
	a := ap.Addr()
	if !w.v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		sa4.Port = portBE(ap.Port())
		sa4.Addr = a.Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	sa.Port = portBE(ap.Port())
	sa.Addr = a.As16() // an IPv4 address as IPv4-mapped
	return unix.SizeofSockaddrInet6
}

// portBE is p as stored in a sockaddr (network byte order).
func portBE(p uint16) uint16 {
	var v uint16
	b := (*[2]byte)(unsafe.Pointer(&v))
	b[0], b[1] = byte(p>>8), byte(p)
	return v
}

// refused handles a packet the kernel refused: one sent with a GSO segment
// size is sent again as its segments without it (a device without GSO
// refuses it); any other is lost and counted.
func (c *batchConn) refused(p *outPacket, errno syscall.Errno) {
	seg, rest := withoutSegmentSize(p.oob)
	if seg == 0 || (errno != unix.EIO && errno != unix.EINVAL) {
		c.Errors.Add(1)
		return
	}
	for b := p.b; len(b) > 0; {
		n := min(seg, len(b))
		c.sendOne(&outPacket{b: b[:n], oob: rest, addr: p.addr})
		b = b[n:]
	}
}

// withoutSegmentSize finds a UDP_SEGMENT control message in oob: its
// segment size (0: none) and the other control messages.
func withoutSegmentSize(oob []byte) (seg int, rest []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, oob
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_SEGMENT && len(m.Data) >= 2 {
			seg = int(*(*uint16)(unsafe.Pointer(&m.Data[0])))
			continue
		}
		start := len(rest)
		rest = append(rest, make([]byte, unix.CmsgSpace(len(m.Data)))...)
		h := (*unix.Cmsghdr)(unsafe.Pointer(&rest[start]))
		h.Level, h.Type = m.Header.Level, m.Header.Type
		h.SetLen(unix.CmsgLen(len(m.Data)))
		copy(rest[start+unix.CmsgLen(0):], m.Data)
	}
	return seg, rest
}
