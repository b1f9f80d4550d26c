package netstack

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// A client's transport can be replaced while the session runs (Rebind: the
// player's device moved from Wi-Fi to cellular, a new local socket). The
// session does not notice: its frames carry the connection id
// (docs/protocol.md §4.1), so the server finds it from the new address,
// proves that address and moves the session there.

// swapTransport is the client's transport: the current one, replaced by
// Rebind. Reads and writes go to the current one; a read blocked on a
// replaced one ends (it is closed, or its deadline set) and goes on with
// the new one.
type swapTransport struct {
	cur    atomic.Pointer[swapSlot]
	closed atomic.Bool

	mu       sync.Mutex // serializes swap, SetReadDeadline and Close
	deadline time.Time
}

// swapSlot is one transport and whether the client closes it.
type swapSlot struct {
	tr    transport.Transport
	owned bool
}

var _ transport.Transport = (*swapTransport)(nil)

func newSwapTransport(tr transport.Transport, owned bool) *swapTransport {
	t := &swapTransport{}
	t.cur.Store(&swapSlot{tr: tr, owned: owned})
	return t
}

func (t *swapTransport) ReadBatch(msgs []transport.Message) (int, error) {
	for {
		sl := t.cur.Load()
		n, err := sl.tr.ReadBatch(msgs)
		if err != nil && !t.closed.Load() && t.cur.Load() != sl {
			continue // replaced while this read waited: read the new one
		}
		return n, err
	}
}

func (t *swapTransport) WriteBatch(msgs []transport.Message) (int, error) {
	return t.cur.Load().tr.WriteBatch(msgs)
}

func (t *swapTransport) LocalAddr() netip.AddrPort { return t.cur.Load().tr.LocalAddr() }
func (t *swapTransport) MaxDatagram() int          { return t.cur.Load().tr.MaxDatagram() }

func (t *swapTransport) SetReadDeadline(d time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline = d
	return t.cur.Load().tr.SetReadDeadline(d)
}

// Close closes the current transport if the client owns it; one it does not
// own has its reads ended instead.
func (t *swapTransport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed.Store(true)
	return t.release(t.cur.Load())
}

func (t *swapTransport) release(sl *swapSlot) error {
	if sl.owned {
		return sl.tr.Close()
	}
	return sl.tr.SetReadDeadline(time.Now())
}

// swap makes next the current transport and releases the old one.
func (t *swapTransport) swap(next transport.Transport, owned bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		if owned {
			_ = next.Close()
		}
		return ErrClosed
	}
	_ = next.SetReadDeadline(t.deadline)
	old := t.cur.Swap(&swapSlot{tr: next, owned: owned})
	return t.release(old)
}

// ErrCannotRebind: the client's datagrams travel over a transport that is
// not a socket of its own (ClientConfig.Transport), which Rebind cannot
// replace.
var ErrCannotRebind = errors.New("netstack: this client's transport cannot be rebound")

// Rebind moves the client to a new local socket, as a device that moves
// from Wi-Fi to cellular does: conn, or, when conn is nil, a new UDP socket
// of the server's address family on a free port. The client closes conn
// when it closes; the socket it used before is closed if the client opened
// it. The session goes on without a new handshake: a probe leaves from the
// new socket at once, and a server that supports migration proves the new
// address and moves the session there within a round trip (until then what
// it sends still goes to the old address; reliable messages are resent).
// Against a server that does not support it, or before the server gave the
// client its connection id (the first round trip after admission), the
// session times out. Rebind returns an error for a client over a
// ClientConfig.Transport, for a Polled client without conn (its caller
// reads the socket: it gives the new one), and ErrClosed after Close.
func (c *Client) Rebind(conn net.PacketConn) error {
	sw, ok := c.tr.(*swapTransport)
	if !ok || c.cfg.Transport != nil || c.cfg.Polled && conn == nil {
		return ErrCannotRebind
	}
	next := transport.Transport(nil)
	if conn != nil {
		next = transport.FromPacketConn(conn)
	} else {
		u, err := transport.ListenUDP(clientNetwork(c.cfg.Server), netip.AddrPort{}, clientSocketBuffer)
		if err != nil {
			return fmt.Errorf("netstack: open client socket: %w", err)
		}
		next = u
	}
	if err := sw.swap(next, true); err != nil {
		return err
	}
	now := time.Now()
	c.sess.mu.Lock()
	if !c.sess.life.closed && !c.sess.life.finishing {
		c.sess.queueHeartbeatLocked(now) // the server learns the new address from it
		c.sess.path.nextHeartbeat = c.sess.since(now) + c.sess.path.hbInterval
		c.sess.out.urgent = true
	}
	c.sess.mu.Unlock()
	c.flushNow()
	return nil
}

// MigrationReady reports whether the server gave the client its connection
// id: from then on the session survives a change of the client's address.
func (c *Client) MigrationReady() bool {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	return c.sess.path.mig.hasID
}

// LocalAddr returns the address of the client's socket (the current one,
// after Rebind).
func (c *Client) LocalAddr() netip.AddrPort { return c.tr.LocalAddr() }

// clientNetwork is the UDP network of a client socket for server.
func clientNetwork(server netip.AddrPort) string {
	if server.Addr().Is6() && !server.Addr().Is4In6() {
		return "udp6"
	}
	return "udp4"
}
