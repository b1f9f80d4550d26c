// Package udpbatch reads and writes UDP datagrams in batches: recvmmsg and
// sendmmsg on Linux for a *net.UDPConn, so that one system call moves many
// datagrams, and one datagram per call everywhere else (other systems,
// in-memory links in tests) behind the same API.
//
// It owns nothing but buffers and system calls: no parsing, no policy. In
// steady state neither Reader nor Writer allocates: buffers, message headers
// and socket addresses are built once and reused, and addresses are
// netip.AddrPort values rather than net.Addr.
//
// A Reader or a Writer is used by one goroutine at a time; a Reader and a
// Writer of the same socket may run concurrently.
package udpbatch

import (
	"net"
	"net/netip"
)

// Message is one datagram of a batch.
type Message struct {
	// Buf holds the datagram: for a read, a buffer of the Reader's size
	// whose first N bytes are the datagram; for a write, the datagram.
	Buf  []byte
	N    int
	Addr netip.AddrPort // source of a read (IPv4-mapped sources unmapped), destination of a write
}

// addrPortConn is implemented by *net.UDPConn and by in-memory test links:
// the AddrPort forms of ReadFrom/WriteTo do not allocate a net.Addr.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// Reader reads datagrams in batches of up to len(Msgs).
type Reader struct {
	// Msgs are the batch slots; Read fills Msgs[:n].
	Msgs []Message
	pc   net.PacketConn
	fast addrPortConn
	sys  *sysReader // nil when batching is unavailable
}

// NewReader returns a Reader of batches of up to n datagrams of at most size
// bytes each (a longer datagram is truncated, and its N is size). n < 1 means 1.
func NewReader(pc net.PacketConn, n, size int) *Reader {
	n = max(n, 1)
	r := &Reader{Msgs: make([]Message, n), pc: pc}
	for i := range r.Msgs {
		r.Msgs[i].Buf = make([]byte, size)
	}
	r.fast, _ = pc.(addrPortConn)
	if uc, ok := pc.(*net.UDPConn); ok && n > 1 {
		r.sys = newSysReader(uc, r.Msgs)
	}
	return r
}

// Batched reports whether reads use recvmmsg.
func (r *Reader) Batched() bool { return r.sys != nil }

// Read blocks until at least one datagram arrives (or the socket's read
// deadline passes, or it is closed) and returns how many of Msgs it filled.
func (r *Reader) Read() (int, error) {
	if r.sys != nil {
		return r.sys.read()
	}
	m := &r.Msgs[0]
	if r.fast != nil {
		n, ap, err := r.fast.ReadFromUDPAddrPort(m.Buf)
		if err != nil {
			return 0, err
		}
		m.N, m.Addr = n, unmap(ap)
		return 1, nil
	}
	n, addr, err := r.pc.ReadFrom(m.Buf)
	if err != nil {
		return 0, err
	}
	m.N, m.Addr = n, netip.AddrPort{}
	if ua, ok := addr.(*net.UDPAddr); ok {
		m.Addr = unmap(ua.AddrPort())
	}
	return 1, nil
}

// Writer writes batches of datagrams.
type Writer struct {
	pc   net.PacketConn
	fast addrPortConn
	sys  *sysWriter
}

// NewWriter returns a Writer for pc whose batches hold up to n datagrams per
// system call (larger batches are written in several calls).
func NewWriter(pc net.PacketConn, n int) *Writer {
	w := &Writer{pc: pc}
	w.fast, _ = pc.(addrPortConn)
	if uc, ok := pc.(*net.UDPConn); ok && n > 1 {
		w.sys = newSysWriter(uc, n)
	}
	return w
}

// Batched reports whether writes use sendmmsg.
func (w *Writer) Batched() bool { return w.sys != nil }

// Write sends every message (Buf[:N] to Addr). It returns how many were
// sent and the first error; a datagram the system refuses is skipped, the
// others are still sent.
func (w *Writer) Write(msgs []Message) (sent int, err error) {
	if w.sys != nil {
		return w.sys.write(msgs)
	}
	for i := range msgs {
		m := &msgs[i]
		var e error
		if w.fast != nil {
			_, e = w.fast.WriteToUDPAddrPort(m.Buf[:m.N], m.Addr)
		} else {
			_, e = w.pc.WriteTo(m.Buf[:m.N], net.UDPAddrFromAddrPort(m.Addr))
		}
		if e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		sent++
	}
	return sent, err
}

// unmap turns an IPv4-mapped IPv6 source into plain IPv4.
func unmap(ap netip.AddrPort) netip.AddrPort {
	if a := ap.Addr(); a.Is4In6() {
		return netip.AddrPortFrom(a.Unmap(), ap.Port())
	}
	return ap
}
