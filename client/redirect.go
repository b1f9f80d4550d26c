package client

import (
	"context"
	"errors"
	"net/netip"

	"github.com/sparkhost/sparkhost/netstack"
)

// Redirect moves the console's connection to another server, as a module
// asks when its server hands the player over (the mmo's area handoffs): it
// dials server, pinned to pin, under the current connection's player name,
// with ticket making the admission ticket of the new ClientFinished from
// the new session's channel binding (nil: none). Once admitted, adopt (if
// set) is called with the new client before any of its messages is
// dispatched; then the new connection becomes the console's and the old
// one is closed. On failure the old connection stays as it was.
func (c *Console) Redirect(ctx context.Context, server netip.AddrPort, pin string, ticket func([32]byte) []byte, adopt func(*netstack.Client)) (*netstack.Client, error) {
	c.mu.Lock()
	old := c.conn
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, ErrConsoleClosed
	case old == nil:
		c.mu.Unlock()
		return nil, ErrNotConnected
	case c.dialing:
		c.mu.Unlock()
		return nil, errors.New("redirect: another connect is in progress")
	}
	c.dialing = true
	name := old.name
	c.mu.Unlock()
	cfg := netstack.ClientConfig{Server: server, Name: name, Pin: pin, Registry: c.cfg.Registry, Protocol: c.cfg.Protocol, Ticket: ticket, DeliverRefusals: true,
		Resumable: true, Timeout: c.cfg.Timeout, HeartbeatInterval: c.cfg.Timeout / 5}
	cl, gs, err := Dial(ctx, cfg)
	c.mu.Lock()
	c.dialing = false
	if err != nil {
		c.mu.Unlock()
		return nil, connectError(server.String(), err)
	}
	if c.closed {
		c.mu.Unlock()
		cl.Close()
		return nil, ErrConsoleClosed
	}
	if adopt != nil {
		adopt(cl)
	}
	conn := &connection{client: cl, server: server.String(), name: name, world: NewWorld(), recvDone: make(chan struct{}), quit: make(chan struct{})}
	c.conn = conn
	c.Printf("connected to %s as %s (id %d)", conn.server, name, cl.ID())
	c.Printf("%s", serverLine(gs))
	c.mu.Unlock()
	go c.receive(conn)
	old.client.Close() // its receive goroutine prints its disconnected line and leaves c.conn alone
	return cl, nil
}
