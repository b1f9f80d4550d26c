package transport

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// writeBatchSize is how many datagrams one sendmmsg call carries; a larger
// batch is written in several calls.
const writeBatchSize = 64

// freeWriters bounds the idle sendmmsg scratch a UDP transport keeps: one per
// goroutine that writes batches (a server's receive, service and tick writer
// goroutines), with room to spare.
const freeWriters = 8

var _ Transport = (*UDP)(nil)

// UDP is the Transport of a UDP socket: batches move with recvmmsg and
// sendmmsg on Linux (one system call for many datagrams; a batch of one
// too, as a raw system call: see sysReader), one datagram per call
// elsewhere.
type UDP struct {
	conn  *net.UDPConn
	local netip.AddrPort

	// readMu keeps a second reader off the recvmmsg scratch; ReadBatch has
	// one caller at a time, so it is never contended.
	readMu sync.Mutex
	rd     *sysReader // built at the first batched read; nil when unavailable

	// writers holds idle sendmmsg scratch: each WriteBatch takes one, so
	// that concurrent writers never share message headers.
	writers chan *sysWriter
	batched bool // the system offers sendmmsg for this socket
}

// NewUDP returns the Transport of uc. Closing the transport closes uc.
func NewUDP(uc *net.UDPConn) *UDP {
	u := &UDP{conn: uc, writers: make(chan *sysWriter, freeWriters)}
	if ua, ok := uc.LocalAddr().(*net.UDPAddr); ok {
		u.local = ua.AddrPort()
	}
	if w := newSysWriter(uc, writeBatchSize); w != nil {
		u.batched = true
		u.writers <- w
	}
	return u
}

// ListenUDP opens a UDP socket on network ("udp", "udp4" or "udp6") at addr
// (port 0: an ephemeral port; an invalid addr: every address) and asks for
// socket buffers of buffer bytes each way (0: the system's default). The
// default buffers hold only a few hundred datagrams — less than one burst of
// a busy server's clients — so servers and clients ask for megabytes; a
// smaller buffer than asked for only means more loss under bursts.
func ListenUDP(network string, addr netip.AddrPort, buffer int) (*UDP, error) {
	var la *net.UDPAddr
	if addr.IsValid() {
		la = net.UDPAddrFromAddrPort(addr)
	}
	uc, err := net.ListenUDP(network, la)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s %v: %w", network, addr, err)
	}
	if buffer > 0 {
		_ = uc.SetReadBuffer(buffer)
		_ = uc.SetWriteBuffer(buffer)
	}
	return NewUDP(uc), nil
}

// Batched reports whether batches of more than one datagram move with
// recvmmsg and sendmmsg.
func (u *UDP) Batched() bool { return u.batched }

// ReadBatch implements Transport.
func (u *UDP) ReadBatch(msgs []Message) (int, error) {
	if u.batched {
		u.readMu.Lock()
		defer u.readMu.Unlock()
		if u.rd == nil || len(u.rd.hdrs) < len(msgs) {
			u.rd = newSysReader(u.conn, len(msgs))
		}
		if u.rd != nil {
			return u.rd.read(msgs)
		}
	}
	m := &msgs[0]
	n, ap, err := u.conn.ReadFromUDPAddrPort(m.Buf)
	if err != nil {
		return 0, err
	}
	m.N, m.Addr, m.Validated = n, unmap(ap), false
	return 1, nil
}

// WriteBatch implements Transport.
func (u *UDP) WriteBatch(msgs []Message) (sent int, err error) {
	if u.batched {
		var w *sysWriter
		select {
		case w = <-u.writers:
		default:
			w = newSysWriter(u.conn, writeBatchSize)
		}
		if w != nil {
			sent, err = w.write(msgs)
			select {
			case u.writers <- w:
			default:
			}
			return sent, err
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if _, e := u.conn.WriteToUDPAddrPort(m.Buf[:m.N], m.Addr); e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		sent++
	}
	return sent, err
}

// LocalAddr implements Transport.
func (u *UDP) LocalAddr() netip.AddrPort { return u.local }

// MaxDatagram implements Transport: 65,507 bytes.
func (u *UDP) MaxDatagram() int { return MaxUDPDatagram }

// SetReadDeadline implements Transport.
func (u *UDP) SetReadDeadline(t time.Time) error { return u.conn.SetReadDeadline(t) }

// Close implements Transport; it closes the socket.
func (u *UDP) Close() error { return u.conn.Close() }
