package netstack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Message is one message received by a client.
type Message struct {
	Header  wire.Header
	Payload []byte
}

// Client is a connected client (protocol v4, or v3 after a fallback).
type Client struct {
	cfg      ClientConfig
	tr       transport.Transport
	ownsConn bool // Dial opened tr and Close closes it
	sess     *session
	reg      *wire.Registry
	identity [32]byte
	helloOut [1]transport.Message // the Dial goroutine's writeOne scratch
	welcome  Message              // the first message of type cfg.Welcome (under sess.mu)
	version  uint16

	inbox     chan Message
	pending   []Message // collected by the receive goroutine under the lock
	polled    []Message // collected by Ingest under the lock (Polled)
	arena     []byte    // the payloads of Ingest's messages (Polled)
	polling   bool      // under sess.mu: Ingest is receiving
	rxDone    chan struct{}
	deliverFn deliverFunc // c.deliver, bound once: a method value allocates per use
	check     clientValidator
	schemas   wire.ModuleSchemas // the newest announcement (under sess.mu)
	gotTable  bool
	protocols wire.ModuleProtocols // the newest module protocols (under sess.mu)
	gotProtos bool

	rxMsgs   []transport.Message // receive goroutine
	rxFlush  *flusher            // receive goroutine
	svcFlush *flusher            // service goroutine
	// flushMu serializes Flush and the flush timer on apiFlush.
	flushMu    sync.Mutex
	apiFlush   *flusher
	flushTimer *time.Timer
	flushArmed bool // under sess.mu: the timer will flush what Send queued
	flushReq   chan struct{}

	rt clientTicket // resume_client.go: the newest resume ticket (under sess.mu)

	admitted  chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

func (c *Client) serviceLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.ServiceInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.sess.mu.Lock()
			closed := c.sess.serviceLocked(time.Now(), &c.svcFlush.b) || // not the tick's (possibly stale) scheduled time
				c.sess.life.seat.held // timed out, kept for Resume
			c.sess.mu.Unlock()
			c.svcFlush.write()
			if closed {
				c.shutdown()
				return
			}
		}
	}
}

// shutdown stops the goroutines' work once the session is closed.
func (c *Client) shutdown() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.tr.SetReadDeadline(time.Now())
		c.closeConn()
	})
}

// ID returns the client id the server assigned.
func (c *Client) ID() uint32 { return c.sess.id }

// Protocol returns the protocol version of the session (4, or 3 after a
// fallback to a v3 server).
func (c *Client) Protocol() uint16 { return c.version }

// ServerPin returns the verified server identity as a pin.
func (c *Client) ServerPin() string { return trust.Pin(c.identity[:]) }

// Welcome returns the first message of type ClientConfig.Welcome (zero
// when no Welcome type was configured). It is also delivered by Receive.
func (c *Client) Welcome() Message {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	return c.welcome
}

// ChannelBinding returns the session's transcript hash th (see Server.ChannelBinding).
func (c *Client) ChannelBinding() [32]byte { return c.sess.keys.th }

// Send queues one message for the server: it leaves at the next Flush, or
// FlushInterval after it was queued, packed with whatever else was queued
// (docs/protocol.md §5.5). An unreliable message that does not fit one
// datagram is refused (ErrUnreliableTooLarge); a reliable one is fragmented.
func (c *Client) Send(t wire.MessageType, ch wire.Channel, payload []byte) error {
	return c.SendAt(t, ch, payload, time.Now())
}

// SendAt is Send with the time now read by the caller (time.Now()), for a
// caller that sends many messages at one moment — a Polled client's
// answers to what one Ingest returned, at that Ingest's time: it saves a
// clock read per message. now must not be later than the clock.
func (c *Client) SendAt(t wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	c.sess.mu.Lock()
	err := c.sess.sendLocked(t, ch, payload, now)
	arm := err == nil && c.cfg.FlushInterval > 0 && !c.flushArmed
	if arm {
		c.flushArmed = true
	}
	closed := c.sess.life.closed
	c.sess.mu.Unlock()
	switch {
	case closed:
		c.shutdown()
	case err == nil && c.cfg.FlushInterval < 0:
		c.flushNow()
	case arm:
		c.flushTimer.Reset(c.cfg.FlushInterval)
	}
	return err
}

// Flush asks for everything queued for the server to be sent now, packed
// into as few datagrams as the datagram size allows, and returns at once:
// the client's writer goroutine packs, seals and writes, so a client that
// calls Send and Flush for each of a burst of messages (answers to what it
// received) still sends them together when the writer runs after the burst.
// A client that sends a frame's worth of messages calls it once after them.
func (c *Client) Flush() {
	select {
	case c.flushReq <- struct{}{}:
	default: // a flush is already requested: it will take these too
	}
}

// FlushNow packs, seals and writes everything queued for the server on the
// calling goroutine and returns when it is written (Flush leaves that work to
// the client's writer goroutine). A client that sends a round of messages
// from one goroutine and then flushes, as a game loop does once a frame,
// saves the writer's wake-up and goroutine switch per round with it.
func (c *Client) FlushNow() { c.flushNow() }

// writer is the goroutine behind Flush and the flush timer.
func (c *Client) writer() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case <-c.flushReq:
			c.flushNow()
		}
	}
}

// flushNow packs, seals and writes what is queued, on the calling goroutine.
func (c *Client) flushNow() {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.sess.mu.Lock()
	if c.flushArmed {
		c.flushArmed = false
		c.flushTimer.Stop()
	}
	c.sess.flushLocked(time.Now(), &c.apiFlush.b)
	closed := c.sess.life.closed
	c.sess.mu.Unlock()
	c.apiFlush.write()
	if closed {
		c.shutdown()
	}
}

// timerFlush is the flush timer's function: Send armed it FlushInterval
// ago and no Flush came.
func (c *Client) timerFlush() {
	c.sess.mu.Lock()
	due := c.flushArmed
	c.sess.mu.Unlock()
	if due {
		c.Flush()
	}
}

// Receive returns the next message, or an error once the connection is closed
// and every received message has been returned.
func (c *Client) Receive(ctx context.Context) (Message, error) {
	select {
	case m := <-c.inbox:
		return m, nil
	default:
	}
	select {
	case m := <-c.inbox:
		return m, nil
	case <-c.done:
		select {
		case m := <-c.inbox:
			return m, nil
		default:
			return Message{}, ErrClosed
		}
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

// CloseReason returns why the connection closed (valid after Done).
func (c *Client) CloseReason() (wire.DisconnectReason, string) {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	return c.sess.life.reason, c.sess.life.detail
}

// Stats returns this client's §13 statistics.
func (c *Client) Stats() Stats {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	return c.sess.statsLocked()
}

// Disconnect tells the server reason and closes the connection. What was
// sent before it is delivered first: Disconnect waits, at most
// ClientConfig.CloseLinger, until the server has acknowledged every reliable
// message, then sends the Disconnect (docs/protocol.md §6). It returns when
// the connection is closed.
func (c *Client) Disconnect(reason wire.DisconnectReason, detail string) {
	if c.sess != nil {
		c.flushTimer.Stop()
		c.sess.mu.Lock()
		closed := c.sess.beginCloseLocked(reason, detail, c.sess.life.closeLinger, time.Now())
		c.sess.mu.Unlock()
		if !closed {
			c.flushNow() // what was queued leaves now; the Acks end the linger
			c.awaitLinger()
		}
	}
	c.shutdown()
	c.wg.Wait()
}

// awaitLinger waits for the receive or service goroutine to end the
// linger; if they are not running (a failed Dial) or late, it ends it.
func (c *Client) awaitLinger() {
	select {
	case <-c.done:
		return
	case <-time.After(c.sess.life.closeLinger + 50*time.Millisecond):
	}
	c.sess.mu.Lock()
	c.sess.closeLocked(c.sess.life.reason, c.sess.life.detail, time.Now())
	c.sess.mu.Unlock()
}

// Unconfirmed returns how many reliable messages the server has not
// acknowledged yet (after Disconnect: how many a close gave up on).
func (c *Client) Unconfirmed() int {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	if c.sess.life.closed {
		return c.sess.life.abandoned
	}
	return c.sess.rel.engine.Unsettled()
}

// Close disconnects with ClientQuit, delivering first what was sent (see
// Disconnect). It returns an error wrapping ErrUnconfirmed when the linger
// ended before the server acknowledged everything: those messages may not
// have arrived.
func (c *Client) Close() error {
	c.Disconnect(wire.DisconnectClientQuit, "client quit")
	if n := c.Unconfirmed(); n > 0 {
		return fmt.Errorf("%w: %d reliable message(s) not acknowledged within %v; they may not have arrived", ErrUnconfirmed, n, c.sess.life.closeLinger)
	}
	return nil
}
