package netstack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Client retry schedule of §5.5.
const (
	DefaultConnectRetry   = 500 * time.Millisecond
	DefaultConnectRetries = 10
	// clientSocketBuffer is the socket buffer size a client asks for.
	clientSocketBuffer = 4 << 20
	// DefaultInboxSize bounds the messages a client holds for Receive.
	DefaultInboxSize = 4096
)

// ClientConfig configures Dial. Zero values mean the documented defaults.
type ClientConfig struct {
	// Server is the server's address; its text form "host:port" is also the
	// known_hosts key.
	Server netip.AddrPort
	// Name is the player name sent in ClientFinished.
	Name string
	// Ticket, when set, returns the admission ticket sent in ClientFinished
	// (docs/protocol.md §3.13), given the new session's channel binding th
	// (known once ConnectAccepted is verified, before ClientFinished is
	// sent). The bytes are opaque to the transport; at most
	// wire.MaxTicketLen (256), or Dial fails.
	Ticket func(channelBinding [32]byte) []byte
	// Pin, when set, is the only identity accepted ("ed25519:..."). Otherwise
	// KnownHosts decides, with trust on first use.
	Pin string
	// KnownHosts is the known_hosts store used when Pin is empty.
	KnownHosts *trust.KnownHosts
	// OnTrustNew is told when an unknown server key was recorded (TOFU).
	OnTrustNew func(hostport, pin string)
	// Transport, when set, carries the client's datagrams instead of a new
	// UDP socket (another transport, or a socket the caller opened); the
	// client does not close it.
	Transport transport.Transport
	// Conn is Transport for a net.PacketConn, wrapped with
	// transport.FromPacketConn. Set one of the two at most.
	Conn net.PacketConn
	// Registry holds the schemas of the messages the client understands
	// beyond the transport's own (sim/gamemsg's game messages, module
	// types); nil = the transport's types only.
	Registry *wire.Registry
	// Welcome is the type of the first message the server sends an
	// admitted client (sparkhost sends GameStateSync). When set, Dial
	// returns once it arrives and Client.Welcome returns it; 0 means Dial
	// returns as soon as the server acknowledges ClientFinished or sends
	// anything.
	Welcome wire.MessageType
	// ConnectRetry is the Connect resend interval (500 ms); ConnectRetries
	// the number of resends (10).
	ConnectRetry   time.Duration
	ConnectRetries int
	// Protocol selects the handshake (docs/protocol.md §3.2): 0 speaks v4 and
	// falls back to v3 when the server answers ProtocolTooNew with
	// server_version 3; 4 speaks v4 only (no fallback, so no downgrade); 3
	// speaks v3 only. Other values are refused.
	Protocol uint16
	// Timeout, HeartbeatInterval, Rotation and Reliable as in ServerConfig.
	Timeout           time.Duration
	HeartbeatInterval time.Duration
	Rotation          seal.RotationConfig
	Reliable          reliable.Config
	// InboxSize bounds undelivered messages; 0 means 4096. When it is full a
	// message is dropped and counted in InboxDrops.
	InboxSize int
	// DatagramSize is the largest UDP payload the client sends in a v4
	// session (see ServerConfig.DatagramSize); 0 means 1200.
	DatagramSize int
	// FlushInterval is the longest a message given to Send waits for an
	// explicit Flush before it is sent anyway: Send queues, and what is
	// queued within the interval leaves packed in one datagram
	// (docs/protocol.md §5.5). 0 means DefaultClientFlushInterval (2 ms); a
	// negative value flushes after every Send (no packing across Sends).
	FlushInterval time.Duration
	// CloseLinger is the longest Disconnect (and Close) waits for the server
	// to acknowledge the reliable messages sent before it, so that a quit
	// right after a chat line delivers the line (docs/protocol.md §6); 0
	// means 1 s (DefaultCloseLinger), negative closes at once. Unconfirmed
	// tells, after the close, how many messages were given up.
	CloseLinger time.Duration
}

// DefaultClientFlushInterval is ClientConfig.FlushInterval's default.
const DefaultClientFlushInterval = 2 * time.Millisecond

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
	// (NameInvalid, or ServerFull when its last slot was taken meanwhile).
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
	pending   []Message   // collected by the receive goroutine under the lock
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

	admitted  chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Dial connects to a server, completes the handshake and waits for
// admission (see ClientConfig.Welcome).
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.ConnectRetry <= 0 {
		cfg.ConnectRetry = DefaultConnectRetry
	}
	if cfg.ConnectRetries <= 0 {
		cfg.ConnectRetries = DefaultConnectRetries
	}
	if cfg.InboxSize <= 0 {
		cfg.InboxSize = DefaultInboxSize
	}
	if cfg.Registry == nil {
		cfg.Registry = wire.NewRegistry()
	}
	if err := checkDatagramSize(cfg.DatagramSize); err != nil {
		return nil, err
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultClientFlushInterval
	}
	switch cfg.Protocol {
	case 0, handshake.ProtocolVersion, handshake.ProtocolVersion4:
	default:
		return nil, fmt.Errorf("netstack: protocol %d: choose 3, 4 or 0 (v4 with fallback to v3)", cfg.Protocol)
	}
	var pin [32]byte
	if cfg.Pin != "" {
		var err error
		if pin, err = trust.ParsePin(cfg.Pin); err != nil {
			return nil, err
		}
	} else if cfg.KnownHosts == nil {
		return nil, errors.New("netstack: no pin and no known_hosts: refusing to trust an unknown server")
	}
	c := &Client{
		cfg:      cfg,
		reg:      cfg.Registry,
		inbox:    make(chan Message, cfg.InboxSize),
		admitted: make(chan struct{}),
		done:     make(chan struct{}),
		flushReq: make(chan struct{}, 1),
	}
	c.deliverFn = c.deliver
	c.check.own = cfg.Registry
	if c.tr = givenTransport(cfg.Transport, cfg.Conn); c.tr == nil {
		network := "udp4"
		if cfg.Server.Addr().Is6() && !cfg.Server.Addr().Is4In6() {
			network = "udp6"
		}
		// As on the server: the default buffer holds only a few hundred
		// datagrams, less than one window of replies.
		u, err := transport.ListenUDP(network, netip.AddrPort{}, clientSocketBuffer)
		if err != nil {
			return nil, fmt.Errorf("netstack: open client socket: %w", err)
		}
		c.tr, c.ownsConn = u, true
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
	if c.ownsConn {
		_ = c.tr.Close()
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
	chcfg := channelConfig{rotation: c.cfg.Rotation, reliable: c.cfg.Reliable, heartbeat: c.cfg.HeartbeatInterval, timeout: c.cfg.Timeout,
		datagramSize: c.cfg.DatagramSize, closeLinger: c.cfg.CloseLinger}
	chcfg.populate()
	if res.Version >= handshake.ProtocolVersion4 {
		// A module message may overtake the announcement of its type
		// (both Reliable, which does not order): hold it for the table.
		chcfg.holdFor = DefaultHoldUnannounced
	}
	c.sess = newSession(c.tr, c.cfg.Server, res.ClientID, false, res.Version, origin, now, sessionKeys{send: res.C2S, recv: res.S2C, th: res.TH}, &chcfg)
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
		return nil
	case <-c.done:
		c.sess.mu.Lock()
		reason, detail := c.sess.reason, c.sess.detail
		c.sess.mu.Unlock()
		return &HandshakeError{Code: HandshakeRefusedName, Disconnect: reason, Detail: detail}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) receiveLoop() {
	defer c.wg.Done()
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
				c.cfg.Welcome == 0 && c.sess.rel.Acknowledged(1) {
				c.admit() // ClientFinished (reliable sequence 1) was acknowledged
			}
			if c.sess.lingerDoneLocked(now) {
				break
			}
		}
		if c.sess.urgent {
			c.sess.flushLocked(now, &c.rxFlush.b)
		}
		closed := c.sess.closed
		c.sess.mu.Unlock()
		c.rxFlush.write()
		c.flushInbox()
		if closed {
			c.shutdown()
			return
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
	adopted := h.Type == wire.TypeModuleSchemas && c.adoptSchemas(payload)
	if h.Type == wire.TypeModuleProtocols {
		c.adoptProtocols(payload)
	}
	m := Message{Header: *h, Payload: append([]byte(nil), payload...)}
	if c.cfg.Welcome == 0 || (h.Type == c.cfg.Welcome && c.welcome.Payload == nil) {
		if h.Type == c.cfg.Welcome {
			c.welcome = m
		}
		c.admit()
	}
	c.pending = append(c.pending, m)
	if adopted {
		c.sess.releaseHeldLocked() // what waited for this table, after it
	}
}

// admit marks the client admitted (once); under the session lock.
func (c *Client) admit() {
	c.sess.finishing = false
	select {
	case <-c.admitted:
	default:
		close(c.admitted)
	}
}

func (c *Client) serviceLoop() {
	defer c.wg.Done()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.sess.mu.Lock()
			closed := c.sess.serviceLocked(time.Now(), &c.svcFlush.b) // not the tick's (possibly stale) scheduled time
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
func (c *Client) ChannelBinding() [32]byte { return c.sess.th }

// Send queues one message for the server: it leaves at the next Flush, or
// FlushInterval after it was queued, packed with whatever else was queued
// (docs/protocol.md §5.5). An unreliable message that does not fit one
// datagram is refused (ErrUnreliableTooLarge); a reliable one is fragmented.
func (c *Client) Send(t wire.MessageType, ch wire.Channel, payload []byte) error {
	c.sess.mu.Lock()
	err := c.sess.sendLocked(t, ch, payload, time.Now())
	arm := err == nil && c.cfg.FlushInterval > 0 && !c.flushArmed
	if arm {
		c.flushArmed = true
	}
	closed := c.sess.closed
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
	closed := c.sess.closed
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
	return c.sess.reason, c.sess.detail
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
		closed := c.sess.beginCloseLocked(reason, detail, c.sess.closeLinger, time.Now())
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
	case <-time.After(c.sess.closeLinger + 50*time.Millisecond):
	}
	c.sess.mu.Lock()
	c.sess.closeLocked(c.sess.reason, c.sess.detail, time.Now())
	c.sess.mu.Unlock()
}

// Unconfirmed returns how many reliable messages the server has not
// acknowledged yet (after Disconnect: how many a close gave up on).
func (c *Client) Unconfirmed() int {
	c.sess.mu.Lock()
	defer c.sess.mu.Unlock()
	if c.sess.closed {
		return c.sess.abandoned
	}
	return c.sess.rel.Unsettled()
}

// Close disconnects with ClientQuit, delivering first what was sent (see
// Disconnect). It returns an error wrapping ErrUnconfirmed when the linger
// ended before the server acknowledged everything: those messages may not
// have arrived.
func (c *Client) Close() error {
	c.Disconnect(wire.DisconnectClientQuit, "client quit")
	if n := c.Unconfirmed(); n > 0 {
		return fmt.Errorf("%w: %d reliable message(s) not acknowledged within %v; they may not have arrived", ErrUnconfirmed, n, c.sess.closeLinger)
	}
	return nil
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
