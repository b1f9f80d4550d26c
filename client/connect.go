package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// KnownHostsFile is the name of the known_hosts file in Config.DataDir.
const KnownHostsFile = "known_hosts"

// connectTimeout bounds a connect: the §5.5 resend schedule (11 × 500 ms)
// plus admission.
const connectTimeout = 15 * time.Second

func cmdConnect(c *Console, args []string) error {
	if len(args) != 2 {
		return usageError("connect HOST:PORT NAME")
	}
	name := args[1]
	if !wire.ValidName([]byte(name), wire.MaxNameLen) {
		return fmt.Errorf("connect: %q is not a valid player name: 1..%d bytes, no control characters, not only spaces",
			name, wire.MaxNameLen)
	}
	ctx, cancel := context.WithTimeout(c.context(), connectTimeout)
	defer cancel()
	addr, err := resolveServer(ctx, args[0])
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	cfg := netstack.ClientConfig{Server: addr, Name: name, Pin: c.cfg.Pin, Registry: c.cfg.Registry, Protocol: c.cfg.Protocol, DeliverRefusals: true,
		Resumable: true, Timeout: c.cfg.Timeout, HeartbeatInterval: c.cfg.Timeout / 5}
	if cfg.Pin == "" {
		if c.cfg.DataDir == "" {
			return errors.New("connect: no pin and no data directory for known_hosts; give the server's pin (--pin ed25519:...) or a data directory")
		}
		kh, err := trust.OpenKnownHosts(filepath.Join(c.cfg.DataDir, KnownHostsFile))
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		cfg.KnownHosts = kh
		cfg.OnTrustNew = func(hostport, pin string) {
			c.Printf("trusting new server %s key %s (recorded in %s)", hostport, pin, kh.Path())
		}
	}
	if err := c.beginDial(); err != nil {
		return err
	}
	cl, gs, err := Dial(ctx, cfg)
	return c.endDial(cl, gs, err, addr.String(), name)
}

// beginDial claims the console's one connection for a dial and makes wait
// look only at events from here on.
func (c *Console) beginDial() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrConsoleClosed
	case c.conn != nil:
		return fmt.Errorf("connect: already connected to %s as %s; disconnect first", c.conn.server, c.conn.name)
	case c.dialing:
		return errors.New("connect: another connect is in progress")
	}
	c.dialing = true
	c.events.skipAll()
	return nil
}

// endDial publishes a new connection and starts its receive goroutine, or
// explains why the dial failed.
func (c *Console) endDial(cl *netstack.Client, gs gamemsg.GameStateSync, err error, server, name string) error {
	c.mu.Lock()
	c.dialing = false
	if err != nil {
		c.mu.Unlock()
		return connectError(server, err)
	}
	if c.closed {
		c.mu.Unlock()
		cl.Close()
		return ErrConsoleClosed
	}
	conn := &connection{client: cl, server: server, name: name, world: NewWorld(), recvDone: make(chan struct{}), quit: make(chan struct{})}
	c.conn = conn
	c.Printf("connected to %s as %s (id %d)", server, name, cl.ID())
	// Printed here rather than by the receive goroutine, so that a script sees
	// it before the next command's output.
	c.Printf("%s", serverLine(gs))
	c.mu.Unlock()
	go c.receive(conn)
	return nil
}

// explainedError replaces an error's text with one that says what to do,
// keeping the original for errors.Is and errors.As.
type explainedError struct {
	msg string
	err error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }

// connectError turns a Dial error into a message that says what to do.
func connectError(server string, err error) error {
	var mm *trust.MismatchError
	switch {
	case errors.As(err, &mm):
		return &explainedError{err: err, msg: fmt.Sprintf(
			"connect: server identity mismatch: %s presented key %s, but line %d of %s records %s for it; nothing was sent "+
				"(someone may be intercepting the connection). If the server legitimately changed its key (ask its operator "+
				"for the new pin), remove line %d from %s and connect again.",
			server, trust.Pin(mm.Presented[:]), mm.Line, mm.Path, trust.Pin(mm.Recorded[:]), mm.Line, mm.Path)}
	case errors.Is(err, trust.ErrBadPin):
		return fmt.Errorf("connect: %w", err)
	case errors.Is(err, context.DeadlineExceeded):
		return &explainedError{err: err, msg: fmt.Sprintf(
			"connect %s: not admitted within %s; is the server running and reachable?", server, connectTimeout)}
	case errors.Is(err, context.Canceled):
		return &explainedError{err: err, msg: fmt.Sprintf("connect %s: interrupted", server)}
	}
	return fmt.Errorf("connect %s: %w", server, err)
}

// resolveServer parses HOST:PORT (an IPv6 address in brackets, e.g.
// [::1]:27015), resolving a host name to its first IPv4 address.
func resolveServer(ctx context.Context, s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		ip := ap.Addr().Unmap()
		switch {
		case ip.Zone() != "":
			return netip.AddrPort{}, fmt.Errorf("%s: link-local addresses with a zone are not supported", s)
		case ap.Port() == 0:
			return netip.AddrPort{}, fmt.Errorf("%s: port must be 1..65535", s)
		}
		return netip.AddrPortFrom(ip, ap.Port()), nil
	}
	host, portText, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return netip.AddrPort{}, fmt.Errorf("%q is not HOST:PORT; write e.g. 127.0.0.1:27015", s)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s: port must be 1..65535", s)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve %q to an IPv4 address: %v", host, err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(port)), nil
}
