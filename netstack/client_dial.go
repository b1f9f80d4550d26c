package netstack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// HandshakeErrorCode says why a handshake failed on the client side.
type HandshakeErrorCode uint8

// Client-side handshake outcomes.
const (
	// HandshakeRejected: the server answered ConnectRejected (see Reason).
	HandshakeRejected HandshakeErrorCode = iota + 1
	// ServerIdentityMismatch: the server's key differs from the pin or known_hosts.
	ServerIdentityMismatch
	// HandshakeAuthFailed: the ServerHello signature did not verify.
	HandshakeAuthFailed
	// HandshakeTimeout: no usable answer after every resend.
	HandshakeTimeout
	// HandshakeRefusedName: the server closed the handshake at admission
	// (NameInvalid; ServerFull when its last slot was taken meanwhile or
	// it holds seats for resumption; ServerDraining: see Draining).
	HandshakeRefusedName
	// HandshakeDowngrade: after a ProtocolTooNew made the client fall back to
	// v3, the server's signed answer showed it speaks v4: the refusal was
	// forged. Nothing is sent; retry, or insist on v4 (Protocol 4).
	HandshakeDowngrade
)

// HandshakeError is the error Dial returns when no session was established.
type HandshakeError struct {
	Code       HandshakeErrorCode
	Reason     wire.RejectReason     // for HandshakeRejected
	Disconnect wire.DisconnectReason // for HandshakeRefusedName
	Detail     string
	Err        error
}

// Draining reports whether the server refused because it drains, in
// either of the two places it may (docs/protocol.md §3.14): at the hello
// (ConnectRejected ServerDraining) or at admission (Disconnect
// ServerDraining, from a server that holds seats for resumption). A client
// treats both alike: it connects elsewhere.
func (e *HandshakeError) Draining() bool {
	return e.Code == HandshakeRejected && e.Reason == wire.RejectServerDraining ||
		e.Code == HandshakeRefusedName && e.Disconnect == wire.DisconnectServerDraining
}

func (e *HandshakeError) Error() string {
	switch e.Code {
	case HandshakeRejected:
		return fmt.Sprintf("server rejected the connection: %s (%s)", e.Reason, e.Detail)
	case ServerIdentityMismatch:
		return "server identity mismatch: " + errText(e.Err)
	case HandshakeAuthFailed:
		return "server handshake signature invalid: " + errText(e.Err)
	case HandshakeTimeout:
		return "no answer from the server; is it running and reachable?"
	case HandshakeRefusedName:
		if e.Disconnect == wire.DisconnectServerFull {
			return fmt.Sprintf("server refused admission: ServerFull (%s)", e.Detail)
		}
		return fmt.Sprintf("server refused admission: %s (%s)", e.Disconnect, e.Detail)
	case HandshakeDowngrade:
		return "protocol downgrade detected: a forged ProtocolTooNew claimed the server speaks only v3, but the server's signed answer says it speaks v4; nothing was sent. Try again, or connect with protocol 4 only"
	}
	return "handshake failed"
}

func (e *HandshakeError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Dial connects to a server, completes the handshake and waits for
// admission (see ClientConfig.Welcome).
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	cfg.populate()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var pin [32]byte
	if cfg.Pin != "" {
		pin, _ = trust.ParsePin(cfg.Pin) // validated
	}
	c := &Client{
		cfg:      cfg,
		reg:      cfg.Registry,
		inbox:    make(chan Message, cfg.InboxSize),
		admitted: make(chan struct{}),
		rxDone:   make(chan struct{}),
		done:     make(chan struct{}),
		flushReq: make(chan struct{}, 1),
	}
	c.deliverFn = c.deliver
	c.check.own = cfg.Registry
	if c.tr = givenTransport(cfg.Transport, cfg.Conn); c.tr == nil {
		// As on the server: the default buffer holds only a few hundred
		// datagrams, less than one window of replies.
		u, err := transport.ListenUDP(clientNetwork(cfg.Server), netip.AddrPort{}, clientSocketBuffer)
		if err != nil {
			return nil, fmt.Errorf("netstack: open client socket: %w", err)
		}
		c.tr, c.ownsConn = u, true
	}
	if cfg.Transport == nil {
		// A socket (its own or cfg.Conn) can be replaced by Rebind.
		c.tr = newSwapTransport(c.tr, c.ownsConn)
	}
	res, origin, err := c.handshake(ctx, pin)
	if err != nil {
		c.closeConn()
		return nil, err
	}
	if err := c.finish(ctx, res, origin); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) closeConn() {
	if _, ok := c.tr.(*swapTransport); ok || c.ownsConn {
		_ = c.tr.Close() // a swapTransport closes only the sockets the client owns
	}
}

// verifyIdentity checks the server key against the pin or known_hosts.
func (c *Client) verifyIdentity(pin [32]byte) func([32]byte) error {
	return func(pub [32]byte) error {
		if c.cfg.Pin != "" {
			if pub != pin {
				return fmt.Errorf("server key %s does not match the pin %s", trust.Pin(pub[:]), c.cfg.Pin)
			}
			return nil
		}
		_, err := c.cfg.KnownHosts.Check(c.cfg.Server.String(), pub)
		return err
	}
}

// maxCookieReplies bounds the CookieReplies one handshake follows, so that a
// server (or a forger) answering every hello with a new cookie cannot keep a
// client busy beyond its resend schedule.
const maxCookieReplies = 8

// helloAttempt is the hello the client currently sends: its handshake and
// the Connect datagram carrying it.
type helloAttempt struct {
	hs      *handshake.ClientHandshake
	connect []byte
}

func newHelloAttempt(version uint16) (*helloAttempt, error) {
	var hs *handshake.ClientHandshake
	var err error
	if version == handshake.ProtocolVersion {
		hs, err = handshake.NewClientHandshake(rand.Reader)
	} else {
		hs, err = handshake.NewClientHandshake4(rand.Reader)
	}
	if err != nil {
		return nil, err
	}
	a := &helloAttempt{hs: hs}
	a.setCookie(nil)
	return a, nil
}

// setCookie rebuilds the Connect datagram (a v4 hello echoes cookie).
func (a *helloAttempt) setCookie(cookie []byte) {
	hdr := wire.Header{Type: wire.TypeConnect}
	payload := a.hs.Hello()
	if a.hs.Version() == handshake.ProtocolVersion4 {
		payload = a.hs.Hello4(cookie)
	}
	a.connect = wire.AppendPacket([]byte{classPlain}, &hdr, payload)
}

// handshake sends Connect (resending on the §3.10 schedule) until a verified
// ConnectAccepted or a ConnectRejected arrives, following CookieReplies and,
// with Protocol 0, falling back to v3 for a server that speaks only v3.
func (c *Client) handshake(ctx context.Context, pin [32]byte) (*handshake.ClientResult, time.Time, error) {
	origin := time.Now()
	version := handshake.ProtocolVersion4
	if c.cfg.Protocol == handshake.ProtocolVersion {
		version = handshake.ProtocolVersion
	}
	a, err := newHelloAttempt(version)
	if err != nil {
		return nil, origin, err
	}
	var fellBack, sawCookie bool
	cookies := 0
	in := readSlots(1)
	verify := c.verifyIdentity(pin)
	for attempt := 0; attempt <= c.cfg.ConnectRetries; attempt++ {
		deadline, err := c.sendHello(ctx, a)
		if err != nil {
			return nil, origin, err
		}
		for {
			if err := ctx.Err(); err != nil {
				return nil, origin, err
			}
			_ = c.tr.SetReadDeadline(deadline)
			_, err := c.tr.ReadBatch(in)
			buf, n, from := in[0].Buf, in[0].N, in[0].Addr
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return nil, origin, err
			}
			if from != c.cfg.Server || n < 1 || buf[0] != classPlain {
				continue
			}
			h, payload, err := wire.ParsePacket(buf[1:n])
			if err != nil || h.SenderID != 0 {
				continue
			}
			switch h.Type {
			case wire.TypeCookieReply:
				cr, err := handshake.ParseCookieReply(payload)
				if err != nil || a.hs.Version() != handshake.ProtocolVersion4 || cr.Nonce != a.hs.Nonce() || cookies >= maxCookieReplies {
					continue
				}
				cookies++
				sawCookie = true
				a.setCookie(cr.Cookie)
				if deadline, err = c.sendHello(ctx, a); err != nil {
					return nil, origin, err
				}
			case wire.TypeConnectRejected:
				rej, err := wire.ParseConnectRejected(payload)
				if err != nil {
					continue
				}
				reason := wire.RejectReason(rej.Reason)
				if reason == wire.RejectProtocolTooNew && rej.ServerVersion == handshake.ProtocolVersion &&
					c.cfg.Protocol == 0 && a.hs.Version() == handshake.ProtocolVersion4 && !sawCookie {
					// A v3 server: speak v3 (§3.2). The refusal is not
					// authenticated; the v3 answer's downgrade sentinel
					// tells a forged one apart.
					fellBack = true
					if a, err = newHelloAttempt(handshake.ProtocolVersion); err != nil {
						return nil, origin, err
					}
					if deadline, err = c.sendHello(ctx, a); err != nil {
						return nil, origin, err
					}
					continue
				}
				if fellBack && reason == wire.RejectProtocolTooOld && rej.ServerVersion >= handshake.ProtocolVersion4 {
					return nil, origin, &HandshakeError{Code: HandshakeDowngrade, Reason: reason, Detail: rej.Detail}
				}
				return nil, origin, &HandshakeError{Code: HandshakeRejected, Reason: reason, Detail: rej.Detail}
			case wire.TypeConnectAccepted:
				res, err := a.hs.Finish(payload, verify)
				switch {
				case errors.Is(err, handshake.ErrServerIdentityMismatch):
					return nil, origin, &HandshakeError{Code: ServerIdentityMismatch, Err: err}
				case errors.Is(err, handshake.ErrHandshakeAuthFailed):
					return nil, origin, &HandshakeError{Code: HandshakeAuthFailed, Err: err}
				case err != nil:
					continue // abandoned silently (e.g. all-zero ss, bad shape)
				}
				if fellBack && res.DowngradeMarked {
					return nil, origin, &HandshakeError{Code: HandshakeDowngrade}
				}
				_ = c.tr.SetReadDeadline(time.Time{})
				return res, origin, nil
			}
		}
	}
	return nil, origin, &HandshakeError{Code: HandshakeTimeout}
}

// sendHello sends the current Connect and returns when to resend it.
func (c *Client) sendHello(ctx context.Context, a *helloAttempt) (time.Time, error) {
	if err := writeOne(c.tr, c.helloOut[:], a.connect, c.cfg.Server); err != nil {
		return time.Time{}, fmt.Errorf("netstack: send Connect: %w", err)
	}
	deadline := time.Now().Add(c.cfg.ConnectRetry)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline, nil
}

// finish records trust on first use, opens the channel, sends ClientFinished
// and waits for admission.
func (c *Client) finish(ctx context.Context, res *handshake.ClientResult, origin time.Time) error {
	c.identity = res.IdentityPub
	c.version = res.Version
	if c.cfg.Pin == "" {
		v, err := c.cfg.KnownHosts.Check(c.cfg.Server.String(), res.IdentityPub)
		if err != nil {
			return &HandshakeError{Code: ServerIdentityMismatch, Err: err}
		}
		if v == trust.Unknown {
			if err := c.cfg.KnownHosts.Record(c.cfg.Server.String(), res.IdentityPub); err != nil {
				return err
			}
			if c.cfg.OnTrustNew != nil {
				c.cfg.OnTrustNew(c.cfg.Server.String(), trust.Pin(res.IdentityPub[:]))
			}
		}
	}
	now := time.Now()
	chcfg := c.cfg.channelConfig(res.Version, c.tr.MaxDatagram())
	id := res.ClientID
	if c.cfg.resuming != nil {
		if res.Version < handshake.ProtocolVersion4 {
			return errors.New("netstack: the server answered the resumption in protocol v3; connect afresh")
		}
		id = c.cfg.resuming.id // the seat's; this handshake's id is never used
	}
	c.sess = newSession(c.tr, c.cfg.Server, id, false, res.Version, origin, now, sessionKeys{send: res.C2S, recv: res.S2C, th: res.TH}, &chcfg)
	if res.Version >= handshake.ProtocolVersion4 {
		c.sess.life.seat.key = resumeKey(res.C2S, res.S2C, res.TH)
	}
	c.sess.path.mig.req = &idRequest{wanted: chcfg.idRoom > 0}
	c.rxMsgs = readSlots(1)
	c.rxFlush, c.svcFlush, c.apiFlush = newFlusher(c.tr), newFlusher(c.tr), newFlusher(c.tr)
	c.flushTimer = time.AfterFunc(time.Hour, c.timerFlush)
	c.flushTimer.Stop()

	cf := wire.ClientFinished{Name: c.cfg.Name}
	if c.cfg.Ticket != nil {
		if cf.Ticket = c.cfg.Ticket(res.TH); len(cf.Ticket) > wire.MaxTicketLen {
			return fmt.Errorf("netstack: admission ticket of %d bytes; at most %d fit ClientFinished", len(cf.Ticket), wire.MaxTicketLen)
		}
	}
	if c.cfg.resuming != nil {
		c.prepareResume(&cf, res.TH)
	}
	payload := wire.AppendClientFinished(nil, &cf)
	c.sess.mu.Lock()
	err := c.sess.sendLocked(wire.TypeConnect, wire.Reliable, payload, now)
	c.sess.mu.Unlock()
	if err != nil {
		return err
	}
	c.flushNow()
	c.wg.Add(3)
	go c.receiveLoop()
	go c.serviceLoop()
	go c.writer()
	select {
	case <-c.admitted:
		if c.cfg.Polled {
			<-c.rxDone // it ends with the pass that admitted: the caller reads from now on
		}
		c.requestTickets(ctx)
		return nil
	case <-c.done:
		c.sess.mu.Lock()
		reason, detail := c.sess.life.reason, c.sess.life.detail
		c.sess.mu.Unlock()
		return &HandshakeError{Code: HandshakeRefusedName, Disconnect: reason, Detail: detail}
	case <-ctx.Done():
		return ctx.Err()
	}
}
