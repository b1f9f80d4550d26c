package netstack

import (
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

func (c *Client) receiveLoop() {
	defer c.wg.Done()
	defer close(c.rxDone)
	for {
		n, err := c.tr.ReadBatch(c.rxMsgs)
		if err != nil {
			select {
			case <-c.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				c.shutdown()
				return
			}
			continue
		}
		now := time.Now()
		c.sess.mu.Lock()
		for i := range n {
			m := &c.rxMsgs[i]
			if m.Addr != c.cfg.Server || m.N == 0 || m.Buf[0] != classSealed {
				c.sess.ctr.drop(dropOther)
				continue
			}
			if c.sess.receiveLocked(&c.check, m.Buf[:m.N], now, c.deliverFn, nil) &&
				c.cfg.Welcome == 0 && c.sess.rel.engine.Acknowledged(1) {
				c.admit() // ClientFinished (reliable sequence 1) was acknowledged
			}
			if c.sess.lingerDoneLocked(now) {
				break
			}
		}
		if c.sess.out.urgent {
			c.sess.flushLocked(now, &c.rxFlush.b)
		}
		closed := c.sess.life.closed
		c.sess.mu.Unlock()
		c.rxFlush.write()
		c.flushInbox()
		if closed {
			c.shutdown()
			return
		}
		if c.cfg.Polled && c.isAdmitted() {
			return // Ingest takes over (client_poll.go)
		}
	}
}

// flushInbox hands the messages collected in one receive pass to Receive. It
// runs after the session lock is released, so a reader woken by the inbox can
// Send at once instead of waiting for the receive goroutine's lock.
func (c *Client) flushInbox() {
	for i, msg := range c.pending {
		select {
		case c.inbox <- msg:
		default:
			c.sess.ctr.InboxDrops.Add(1)
		}
		c.pending[i] = Message{}
	}
	c.pending = c.pending[:0]
}

// deliver collects a message for Receive; it runs under the session lock.
func (c *Client) deliver(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeResumeTicket {
		c.takeTicket(payload, time.Now()) // the transport's own: not for Receive
		return
	}
	adopted := h.Type == wire.TypeModuleSchemas && c.adoptSchemas(payload)
	if h.Type == wire.TypeModuleProtocols {
		c.adoptProtocols(payload)
	}
	if c.polling { // Ingest's: the payload in the client's arena, no allocation (admitted already)
		at := len(c.arena)
		c.arena = append(c.arena, payload...)
		c.polled = append(c.polled, Message{Header: *h, Payload: c.arena[at:len(c.arena):len(c.arena)]})
	} else {
		m := Message{Header: *h, Payload: append([]byte(nil), payload...)}
		if c.cfg.Welcome == 0 || (h.Type == c.cfg.Welcome && c.welcome.Payload == nil) {
			if h.Type == c.cfg.Welcome {
				c.welcome = m
			}
			c.admit()
		}
		c.pending = append(c.pending, m)
	}
	if adopted {
		c.sess.releaseHeldLocked() // what waited for this table, after it
	}
}

// admit marks the client admitted (once); under the session lock.
func (c *Client) admit() {
	c.sess.life.finishing = false
	select {
	case <-c.admitted:
	default:
		close(c.admitted)
		c.sess.requestIDLocked(time.Now()) // a connection id, to follow address changes
	}
}

// ModuleSchemas returns the newest table of module message types the server
// announced (docs/protocol.md §10.2), and whether one arrived. The client
// also accepts those types with their announced rules when its own
// Registry does not know them.
func (c *Client) ModuleSchemas() (wire.ModuleSchemas, bool) {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	m := c.schemas
	m.Types = slices.Clone(m.Types)
	return m, c.gotTable
}

// clientValidator checks what the server sends: with the client's own
// registry, and for a module type it does not know, with the rule the
// server announced for it (ModuleSchemas).
type clientValidator struct {
	own       *wire.Registry
	announced atomic.Pointer[wire.Registry]
}

// A module type neither knows yet is "not loaded" for the session, which
// holds a reliable message of it (held.go) until an announcement names the
// type or DefaultHoldUnannounced passes: the announcement and the module
// messages queued after it travel on channels that do not order, so a lost
// datagram can let a module message arrive first (docs/protocol.md §10.2).
func (v *clientValidator) Validate(travel wire.Direction, h *wire.Header, payload []byte) error {
	err := v.own.Validate(travel, h, payload)
	if err == wire.ErrUnknownType || err == wire.ErrTypeNotLoaded {
		if a := v.announced.Load(); a != nil {
			err = a.Validate(travel, h, payload)
		}
		if err == wire.ErrUnknownType && h.Type >= wire.FirstUserDefined && h.Channel.IsReliable() {
			err = wire.ErrTypeNotLoaded
		}
	}
	return err
}

// adoptProtocols keeps a validated ModuleProtocols newer than the one held
// (under the session lock).
func (c *Client) adoptProtocols(payload []byte) {
	m, err := wire.ParseModuleProtocols(payload)
	if err != nil || c.gotProtos && m.Revision <= c.protocols.Revision {
		return
	}
	c.protocols, c.gotProtos = m, true
}

// ModuleProtocols returns the newest table of module protocol versions the
// server announced (docs/protocol.md §10.4), and whether one arrived.
func (c *Client) ModuleProtocols() (wire.ModuleProtocols, bool) {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	m := c.protocols
	m.Modules = slices.Clone(m.Modules)
	return m, c.gotProtos
}

// adoptSchemas keeps a validated announcement that is newer than the one
// held, and its types as the announced rules (under the session lock); it
// reports whether it did.
func (c *Client) adoptSchemas(payload []byte) bool {
	m, err := wire.ParseModuleSchemas(payload)
	if err != nil || c.gotTable && m.Revision <= c.schemas.Revision {
		return false
	}
	reg := wire.NewRegistry()
	for _, t := range m.Types {
		_ = reg.Register(t.Owner, t.Schema) // the parser applied Register's rules
	}
	c.schemas, c.gotTable = m, true
	c.check.announced.Store(reg)
	return true
}
