package client

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
)

// Resumption (docs/protocol.md §3.15): the console asks for resume
// tickets; when its connection times out it comes back to the same seat
// by itself within the server's hold window, and says so. When the seat
// is gone it joins again as a new player.

// stopResuming ends a resumption in progress (disconnect, close).
func (conn *connection) stopResuming() {
	conn.quitOnce.Do(func() { close(conn.quit) })
}

// resumeSeat tries to bring a connection that timed out back to its seat.
// resumed: a new connection took conn's place (its receive goroutine
// runs); afresh: the server refused the seat, so the caller joins again.
func (c *Console) resumeSeat(conn *connection) (resumed, afresh bool) {
	until, ok := conn.client.Resumable()
	if !ok {
		return false, false
	}
	c.Printf("connection lost; trying to resume your seat for up to %s", time.Until(until).Round(time.Second))
	ctx, cancel := context.WithDeadline(c.context(), until)
	defer cancel()
	go func() {
		select {
		case <-conn.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	nc, err := conn.client.Resume(ctx)
	var refused *netstack.ResumeRefusedError
	switch {
	case err == nil:
		return c.adoptResumed(conn, nc), false
	case errors.As(err, &refused):
		c.Printf("could not resume your seat: %s (%s); joining again as a new player", refused.Reason, refused.Detail)
		return false, c.context().Err() == nil
	default:
		c.Printf("could not resume your seat: %v", err)
		return false, false
	}
}

// OnResumed adds fn, called when the console's connection came back to
// its seat on a new connection (old is the connection that timed out, nc
// the one that replaced it), before anything of nc is handled: a module's
// session state kept per connection moves to nc there.
func (c *Console) OnResumed(fn func(old, nc *netstack.Client)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resumed = append(c.resumed, fn)
}

// adoptResumed makes the resumed client the console's connection, keeping
// the world it had seen.
func (c *Console) adoptResumed(conn *connection, nc *netstack.Client) bool {
	c.mu.Lock()
	hooks := slices.Clone(c.resumed)
	c.mu.Unlock()
	for _, fn := range hooks {
		fn(conn.client, nc)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.conn != conn {
		nc.Close()
		return false
	}
	next := &connection{client: nc, server: conn.server, name: conn.name, world: conn.world,
		recvDone: make(chan struct{}), quit: make(chan struct{})}
	c.conn = next
	c.Printf("seat resumed as client %d", nc.ID())
	go c.receive(next)
	return true
}

// rejoin connects again, as a new player, after a refused resumption.
func (c *Console) rejoin(conn *connection) {
	if err := cmdConnect(c, []string{conn.server, conn.name}); err != nil {
		c.Printf("%v", err)
	}
}
