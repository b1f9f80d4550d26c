package netstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The client's side of resumption (docs/protocol.md §3.15): with
// ClientConfig.Resumable the client asks for resume tickets and keeps the
// newest; when its session times out it keeps the session's reliability
// state instead of discarding it, and Resume comes back to the same seat
// with a new handshake.

// ErrNotResumable: the client holds no ticket whose hold window is still
// open (it was not Resumable, the server holds no seats, the session
// closed by other than a timeout, or the window passed).
var ErrNotResumable = errors.New("netstack: nothing to resume: no resume ticket within its hold window")

// ResumeRefusedError is Resume's error when the server refused the ticket
// (ResumeExpired, ResumeInvalid, AddressLimit): the seat is gone. Connect
// afresh (a new player).
type ResumeRefusedError struct {
	Reason wire.DisconnectReason
	Detail string
}

func (e *ResumeRefusedError) Error() string {
	return fmt.Sprintf("server refused to resume the seat: %s (%s)", e.Reason, e.Detail)
}

// clientTicket is the newest ResumeTicket (under the session lock).
type clientTicket struct {
	ticket   []byte
	hold     time.Duration
	expires  time.Time
	asked    bool          // ResumeRequest sent (or the session is a resumed one)
	consumed bool          // Resume took the state
	answer   chan struct{} // closed when ResumeRequest was answered
}

// resumeFrom is what a resuming Dial takes over from the old client.
type resumeFrom struct {
	id        uint32
	ticket    []byte
	key       [32]byte
	engine    *reliable.Endpoint
	deadline  time.Time
	welcome   Message
	schemas   wire.ModuleSchemas
	gotTable  bool
	protocols wire.ModuleProtocols
	gotProtos bool
	announced *wire.Registry
}

// resumeAnswerWait bounds how long Dial waits, after admission, for the
// answer to ResumeRequest.
const resumeAnswerWait = time.Second

// takeTicket keeps a ResumeTicket's ticket (under the session lock).
func (c *Client) takeTicket(payload []byte, now time.Time) {
	m, err := wire.ParseResumeTicket(payload)
	if err != nil {
		return // validated already
	}
	c.answered()
	c.rt.ticket = m.Ticket
	c.rt.hold = time.Duration(m.HoldSeconds) * time.Second
	c.rt.expires = now.Add(time.Duration(m.Lifetime) * time.Second)
	c.sess.life.seat.holdable = m.HoldSeconds > 0
}

// answered closes rt.answer once: the server answered ResumeRequest
// (a ticket, or a refusal); under the session lock.
func (c *Client) answered() {
	if c.rt.answer != nil {
		select {
		case <-c.rt.answer:
		default:
			close(c.rt.answer)
		}
	}
}

// requestTickets sends ResumeRequest once after a fresh admission (v4) and
// waits, at most resumeAnswerWait, for the answer, so that Dial returns
// with a ticket in hand (and its request acknowledged: a close right after
// Dial has nothing of ours left unconfirmed).
func (c *Client) requestTickets(ctx context.Context) {
	if !c.cfg.Resumable || c.version < handshake.ProtocolVersion4 {
		return
	}
	c.sess.mu.Lock()
	asked := c.rt.asked
	c.rt.asked = true
	answer := make(chan struct{})
	if !asked {
		c.rt.answer = answer
		c.sess.life.seat.noTickets = c.answered
	}
	c.sess.mu.Unlock()
	if asked {
		return
	}
	if err := c.Send(wire.TypeResumeRequest, wire.Reliable, wire.AppendResumeRequest(nil)); err != nil {
		return
	}
	c.Flush()
	t := time.NewTimer(resumeAnswerWait)
	defer t.Stop()
	select {
	case <-answer:
	case <-t.C:
	case <-ctx.Done():
	case <-c.done:
	}
}

// Resumable reports whether the connection ended by a timeout and the
// client holds a ticket whose hold window is still open: Resume may bring
// it back to its seat until the returned time.
func (c *Client) Resumable() (time.Time, bool) {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	d := c.holdDeadlineLocked()
	return d, c.sess.life.seat.held && !c.rt.consumed && time.Now().Before(d)
}

func (c *Client) holdDeadlineLocked() time.Time {
	d := c.sess.at(c.sess.path.lastAuth + c.rt.hold)
	return minTime(d, c.rt.expires)
}

// takeResume hands the held session's state to a resuming Dial, once.
func (c *Client) takeResume() (*resumeFrom, error) {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	d := c.holdDeadlineLocked()
	if !c.sess.life.seat.held || c.rt.consumed || len(c.rt.ticket) == 0 || !time.Now().Before(d) {
		return nil, ErrNotResumable
	}
	c.rt.consumed = true
	return &resumeFrom{id: c.sess.id, ticket: c.rt.ticket, key: c.sess.life.seat.key, engine: c.sess.rel.engine,
		deadline: d, welcome: c.welcome, schemas: c.schemas, gotTable: c.gotTable, protocols: c.protocols,
		gotProtos: c.gotProtos, announced: c.check.announced.Load()}, nil
}

// Resume comes back to the seat of a client whose connection timed out
// (see Resumable): a new handshake, from a new socket when the client
// opened its own, presents the ticket, and the returned Client continues
// the old one — same ID, same reliability state, so the reliable messages
// in flight either way are delivered once and in order. While the path is
// still dark it keeps trying until the hold window ends (or ctx does). A
// *ResumeRefusedError means the seat is gone: Dial afresh.
func (c *Client) Resume(ctx context.Context) (*Client, error) {
	st, err := c.takeResume()
	if err != nil {
		return nil, err
	}
	cfg := c.cfg
	cfg.resuming = st
	if c.ownsConn {
		cfg.Transport, cfg.Conn = nil, nil
	}
	ctx, cancel := context.WithDeadline(ctx, st.deadline)
	defer cancel()
	for {
		nc, err := Dial(ctx, cfg)
		if err == nil {
			return nc, nil
		}
		var he *HandshakeError
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w (the hold window ended while the server was unreachable)", ErrNotResumable)
		case errors.As(err, &he) && he.Code == HandshakeTimeout:
			continue // still dark: a new handshake
		case errors.As(err, &he) && he.Code == HandshakeRefusedName && he.Disconnect != wire.DisconnectTimeout:
			return nil, &ResumeRefusedError{Reason: he.Disconnect, Detail: he.Detail}
		case errors.As(err, &he) && he.Code == HandshakeRefusedName:
			continue // the new path went dark too before admission
		}
		return nil, err
	}
}

// prepareResume sets up a resuming Dial's new session before its
// ClientFinished: the seat's id, the old state to adopt at the server's
// answer, and the resume extension with its proof over this th.
func (c *Client) prepareResume(cf *wire.ClientFinished, th [32]byte) {
	st := c.cfg.resuming
	cf.Resume = &wire.ResumeExtension{Ticket: st.ticket, Proof: resumeProof(st.key, th)}
	c.welcome, c.schemas, c.gotTable, c.protocols, c.gotProtos = st.welcome, st.schemas, st.gotTable, st.protocols, st.gotProtos
	if st.announced != nil {
		c.check.announced.Store(st.announced)
	}
	c.rt.asked = true // a resumed session is sent its ticket unasked
	c.sess.life.seat.adopt = st.engine
	c.sess.life.seat.onAdopt = c.admit
}

// HasResumeTicket reports whether the client holds a resume ticket of a
// server that holds seats: should the path go dark, Resume can bring it
// back within the hold window.
func (c *Client) HasResumeTicket() bool {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	return len(c.rt.ticket) > 0 && time.Now().Before(c.rt.expires)
}
