// Package transport is netstack's one seam to the network: something that
// sends and receives datagrams to and from peer addresses, in batches.
//
// A UDP socket implements it (UDP: recvmmsg and sendmmsg on Linux, one
// datagram per call elsewhere); any net.PacketConn is adapted to it
// (FromPacketConn: the in-memory links of tests); a session- or
// stream-oriented transport (WebTransport datagrams, WebSocket binary
// messages) implements it by naming each of its sessions with a peer
// address, carrying one datagram per message, and saying which addresses
// its own handshake already proved (Message.Validated).
//
// The package owns buffers and system calls and nothing else: no parsing, no
// policy, no protocol. Everything above it — the endpoint policy, the
// handshake, the sealed channel — is the same whatever the transport.
//
// In steady state no implementation here allocates per datagram: buffers,
// message headers and socket addresses are built once and reused, and
// addresses are netip.AddrPort values, never net.Addr.
package transport

import (
	"net/netip"
	"time"
)

// MaxUDPDatagram is the largest UDP payload over IPv4 (65,535 minus the IP
// and UDP headers): what UDP and the net.PacketConn adapter carry.
const MaxUDPDatagram = 65507

// Message is one datagram of a batch.
type Message struct {
	// Buf holds the datagram: for a read, a buffer whose length is the most
	// a datagram may fill (a longer one is truncated to it), and whose first
	// N bytes are the datagram; for a write, Buf[:N] is sent.
	Buf []byte
	N   int
	// Addr is the source of a read (an IPv4-mapped IPv6 source is given as
	// IPv4) and the destination of a write.
	Addr netip.AddrPort
	// Validated, set by a read, says that the transport itself proved that
	// the datagram's sender can receive at Addr (a WebTransport or WebSocket
	// session did, by its own handshake), so that the protocol's address
	// validation — the cookie round trip of docs/protocol.md §3.4 — is
	// skipped for it. UDP and the PacketConn adapter never set it: a UDP
	// source address proves nothing.
	Validated bool
}

// Transport sends and receives datagrams to and from peer addresses, in
// batches.
//
// ReadBatch is called by one goroutine at a time. WriteBatch is safe for
// concurrent use, also while a ReadBatch blocks. SetReadDeadline and Close
// may be called from any goroutine and end a blocked ReadBatch.
type Transport interface {
	// ReadBatch blocks until at least one datagram arrives, the read
	// deadline passes (an error whose Timeout() is true, matching
	// os.ErrDeadlineExceeded), or the transport is closed (an error matching
	// net.ErrClosed). It fills msgs[:n] — N, Addr and Validated; Buf is the
	// caller's — and returns n ≥ 1, or 0 and the error. len(msgs) ≥ 1.
	ReadBatch(msgs []Message) (n int, err error)
	// WriteBatch sends every message, Buf[:N] to Addr, and returns how many
	// were sent and the first error: a datagram the transport refuses (no
	// route, too large, a closed peer session) is skipped and the others are
	// still sent. A datagram lost on the way is not an error: the protocol
	// recovers.
	WriteBatch(msgs []Message) (sent int, err error)
	// LocalAddr is the address peers send to (for a transport that serves
	// sessions, the address it listens on).
	LocalAddr() netip.AddrPort
	// MaxDatagram is the largest datagram the transport carries in bytes:
	// 65,507 for UDP, less for WebTransport datagrams. A session packs into
	// datagrams of at most min(its datagram size, MaxDatagram).
	MaxDatagram() int
	// SetReadDeadline makes a blocked and every later ReadBatch fail with a
	// timeout once t passes; the zero Time clears it.
	SetReadDeadline(t time.Time) error
	// Close releases the transport and ends a blocked ReadBatch with an
	// error matching net.ErrClosed.
	Close() error
}

// unmap turns an IPv4-mapped IPv6 source into plain IPv4, so that the
// endpoint policy and the per-IPv4 budgets above the seam see one form.
func unmap(ap netip.AddrPort) netip.AddrPort {
	if a := ap.Addr(); a.Is4In6() {
		return netip.AddrPortFrom(a.Unmap(), ap.Port())
	}
	return ap
}
