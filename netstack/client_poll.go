package netstack

import (
	"net/netip"
	"time"
)

// A polled client (ClientConfig.Polled) receives on its caller's goroutine.
// Dial runs the handshake as usual; the client's receive goroutine ends with
// the pass that admitted it, and from then on the caller reads the client's
// transport and hands each datagram to Ingest, which opens it, runs the
// reliability and returns the messages at once: no goroutine wakes up and no
// channel carries a message between the datagram and the code that answers
// it. Send, Flush, FlushNow and the timers work as for any client.

// Ingest takes one datagram the caller read from the client's transport,
// from address from, at time now, and appends the messages it delivers to
// dst. It applies every check the client's own receive goroutine applies: a
// datagram from any other address than the server's, or not a sealed frame
// of this session, is dropped and counted (Stats().PacketsDropped), and so
// is anything malformed inside it. Acknowledgements it owes urgently are
// written at once; the rest leave with the next flush.
//
// The messages' payloads are the client's own buffer: they are valid until
// the next Ingest of this client. A client that is not Polled, or not yet
// admitted, takes nothing (its receive goroutine reads) and returns dst.
// Ingest is not safe for concurrent use on one client; different clients
// may be driven from different goroutines.
func (c *Client) Ingest(dst []Message, from netip.AddrPort, datagram []byte, now time.Time) []Message {
	if !c.cfg.Polled || !c.isAdmitted() {
		return dst
	}
	if from != c.cfg.Server || len(datagram) == 0 || datagram[0] != classSealed {
		c.sess.ctr.drop(dropOther)
		return dst
	}
	c.sess.mu.Lock()
	c.polling, c.polled, c.arena = true, dst, c.arena[:0]
	c.sess.receiveLocked(&c.check, datagram, now, c.deliverFn, nil)
	c.sess.lingerDoneLocked(now)
	if c.sess.out.urgent {
		c.sess.flushLocked(now, &c.rxFlush.b)
	}
	closed := c.sess.life.closed
	dst, c.polled, c.polling = c.polled, nil, false
	c.sess.mu.Unlock()
	c.rxFlush.write()
	if closed {
		c.shutdown()
	}
	return dst
}

// isAdmitted reports whether the server admitted the client.
func (c *Client) isAdmitted() bool {
	select {
	case <-c.admitted:
		return true
	default:
		return false
	}
}
