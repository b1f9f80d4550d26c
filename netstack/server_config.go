package netstack

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/cookie"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// DefaultMaxClients is the default slot capacity (§5.5).
const DefaultMaxClients = 32

// MaxProtocol is the newest protocol version this package speaks.
const MaxProtocol = handshake.ProtocolVersion4

// maxRefuseV3Detail is the longest RefuseV3Detail: a refusal of a v3
// hello (79 bytes) is no larger than the hello, and its frame, header and
// fixed fields take 29.
const maxRefuseV3Detail = 50

// ServerConfig configures a Server. The zero value of every field means the
// documented default.
type ServerConfig struct {
	// Bind is the endpoint policy text of §11 ("" = "127.0.0.1"), or with
	// Internet the bind address of policy.ParseInternet.
	Bind string
	// Internet opts into internet mode (docs/protocol.md §3.8): Bind may be a
	// wildcard ("::" is dual stack), public or IPv6 address, every unicast
	// peer may connect, protocol v3 is refused and every v4 source must prove
	// its address. SkipAddressValidation and MaxProtocol 3 are refused.
	Internet bool
	// Port is the UDP port; 0 picks an ephemeral port (the host applies 27015).
	Port int
	// Transport, when set, carries the server's datagrams instead of a UDP
	// socket of its own (Port is then unused): another transport
	// (WebTransport, WebSocket) or a socket the caller opened. Bind still
	// decides which peers are allowed. The server does not close it.
	Transport transport.Transport
	// Conn is Transport for a net.PacketConn (in-memory links in tests),
	// wrapped with transport.FromPacketConn. Set one of the two at most.
	Conn net.PacketConn
	// Sessions, when set, are served beside the UDP socket (or Transport)
	// through a transport.Mux: the web sessions of netstack/transport/web,
	// each named by an address. The server does not close them.
	Sessions transport.Sessions
	// Identity is the server's Ed25519 identity key. Required.
	Identity ed25519.PrivateKey
	// MaxClients is the number of admitted clients; 0 means 32. Half-open
	// handshakes never count: capacity is judged at the hello (ServerFull)
	// and again at admission (Disconnect ServerFull).
	MaxClients int
	// ConnectBudget is the per-source-address token bucket of plain and
	// legacy datagrams (IPv4 address or IPv6 address); zero = burst 16, 4/s.
	ConnectBudget ratelimit.Config
	// PrefixBudget is the same per IPv4 /24 or IPv6 /64; zero = burst 64, 16/s.
	PrefixBudget ratelimit.Config
	// HandshakeBudget is the global budget of handshake signatures (X25519 +
	// Ed25519) across all sources; zero = 1000/s, burst = one second's worth.
	HandshakeBudget ratelimit.BucketConfig
	// UnvalidatedReplyBudget is the global budget of datagrams sent to sources
	// that have not proven their address; zero = 2000/s, burst = one second's.
	UnvalidatedReplyBudget ratelimit.BucketConfig
	// UnvalidatedRefusalBudget is the global budget of ConnectRejected
	// answers to such sources, charged before UnvalidatedReplyBudget, so that
	// tiny requests cannot take the CookieReplies' tokens; zero = 200/s,
	// burst = one second's.
	UnvalidatedRefusalBudget ratelimit.BucketConfig
	// Admission caps the admitted clients of one address and of one prefix
	// (zero: 8 and 16 in internet mode, none on a private bind).
	Admission AdmissionCaps
	// HalfOpen bounds the table of answered, unfinished handshakes.
	HalfOpen HalfOpenConfig
	// SecuringTimeout frees a half-open handshake without a valid
	// ClientFinished; 0 means 5 s.
	SecuringTimeout time.Duration
	// RefuseV3 answers protocol v3 hellos with ProtocolTooOld on a private
	// bind too (internet mode always does).
	RefuseV3 bool
	// RefuseV3Detail is the detail of that ProtocolTooOld: why v3 clients
	// are refused and what to do ("" = "this server needs protocol v4;
	// update the client"). The answer is no larger than the hello, so at
	// most 50 bytes of it are sent; UTF-8 without NUL.
	RefuseV3Detail string
	// SkipAddressValidation answers a v4 hello at once, without the cookie
	// round trip (private binds only: it lets a spoofed source cost a
	// signature). The zero value validates every v4 source.
	SkipAddressValidation bool
	// MaxProtocol is the newest version spoken; 0 means 4. 3 makes the server
	// answer like a protocol v3 server (v4 hellos get ProtocolTooNew, no
	// downgrade sentinel): for compatibility tests of v4 clients.
	MaxProtocol uint16
	// CookieRotation is how often the cookie secret changes; a cookie lives
	// between one and two periods. 0 means 30 s.
	CookieRotation time.Duration
	// Timeout closes a peer from which nothing authenticated; 0 means 10 s.
	Timeout time.Duration
	// HeartbeatInterval between heartbeats; 0 means 1 s.
	HeartbeatInterval time.Duration
	// Rotation sets the key rotation thresholds; zero = 600 s / 2^31 frames.
	Rotation seal.RotationConfig
	// Reliable tunes the reliability engine; zero = the spec's values.
	Reliable reliable.Config
	// Registry holds the message schemas; nil = built-in types only.
	Registry *wire.Registry
	// Logger receives connection events; nil = slog.Default().
	Logger *slog.Logger
	// IsBanned reports whether a source address is banned (checked at Connect).
	IsBanned func(netip.Addr) bool
	// Welcome, when set, gives the first message a newly admitted client is
	// sent (the host's GameStateSync): its type, channel and payload,
	// appended to dst. It is called on the receive goroutine under the
	// slot's lock, at admission, so nothing else can reach the client
	// before it; it must be quick and must not call back into the Server.
	// nil sends nothing: the client learns of its admission from the Ack of
	// its ClientFinished.
	Welcome func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte)
	// OnAdmitted is called when a client becomes Connected.
	OnAdmitted func(ClientInfo)
	// OnDisconnected is called once when an admitted client leaves, with the
	// first recorded reason.
	OnDisconnected func(ClientInfo, wire.DisconnectReason, string)
	// OnMigrated, when set, is told every completed migration: a client's
	// session moved to a new address it proved (docs/protocol.md §4.1). It
	// runs on the receive goroutine and must be quick.
	OnMigrated func(Migration)
	// SocketBuffer is the socket read/write buffer size in bytes; 0 means 4 MiB.
	SocketBuffer int
	// DatagramSize is the largest UDP payload the server sends in a v4
	// session, in bytes: 0 means 1200 (wire.DefaultDatagramSize); 1200 to
	// 65507. Messages are packed into datagrams of at most this size, and a
	// reliable message that does not fit is fragmented, so IP fragmentation
	// is never relied on. v3 sessions send one message per datagram.
	DatagramSize int
	// FlushDelay is the longest a message queued by Send waits for Flush
	// before the service loop sends it anyway; 0 means 10 ms. The host
	// calls Flush once per tick, so in practice nothing waits.
	FlushDelay time.Duration
	// ReceiveBatch is how many datagrams one read takes from the socket
	// (recvmmsg on Linux); 0 means 32.
	ReceiveBatch int
	// HoldNotLoaded is how long a client's reliable message of a module type
	// whose module is not loaded now (crashed and restarting, reloading) is
	// held, acknowledged, for the module to come back (docs/protocol.md
	// §10.3); 0 means 10 s, negative refuses such messages at once.
	HoldNotLoaded time.Duration
	// CloseLinger is how long a kick, a ban or the shutdown waits for the
	// client to acknowledge the reliable messages sent before it (the kick's
	// reason, a last chat line) before the Disconnect (docs/protocol.md §6);
	// 0 means 1 s, negative closes at once. The game sees the client leave
	// at once; its slot is freed when the linger ends.
	CloseLinger time.Duration
	// ResumeHold is how long after a client's last authenticated datagram
	// its seat is held for a resumption (docs/protocol.md §3.15), once the
	// client asked for resume tickets; 0 means 30 s, negative turns
	// resumption off (ResumeRequests are answered "no seats held").
	ResumeHold time.Duration
	// TicketLifetime is how long a resume ticket may be presented (and
	// how often the key that seals them is replaced); 0 means 1 hour.
	TicketLifetime time.Duration
	// OnHeld is called when an admitted client's path went dark and its
	// seat is held: the client still counts (OnDisconnected follows only
	// if the hold ends without a resumption).
	OnHeld func(ClientInfo)
	// OnResumed is called when a held (or still live) seat was resumed by
	// a new handshake: same id and name, possibly a new address.
	OnResumed func(ClientInfo)
}

// Defaults of ServerConfig not named elsewhere.
const (
	defaultRefuseV3Detail = "this server needs protocol v4; update the client"
	defaultSocketBuffer   = 4 << 20 // bytes each way
	defaultReceiveBatch   = 32
)

// populate fills every zero field of c with its documented default; a
// negative duration that means "none" (HoldNotLoaded, CloseLinger) is kept.
// It is the one place the server's defaults are applied.
func (c *ServerConfig) populate() {
	if c.MaxProtocol == 0 {
		c.MaxProtocol = MaxProtocol
	}
	if c.RefuseV3Detail == "" {
		c.RefuseV3Detail = defaultRefuseV3Detail
	}
	if c.MaxClients <= 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.SecuringTimeout <= 0 {
		c.SecuringTimeout = DefaultSecuringTimeout
	}
	if c.Registry == nil {
		c.Registry = wire.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SocketBuffer <= 0 {
		c.SocketBuffer = defaultSocketBuffer
	}
	if c.DatagramSize == 0 {
		c.DatagramSize = wire.DefaultDatagramSize
	}
	if c.ReceiveBatch <= 0 {
		c.ReceiveBatch = defaultReceiveBatch
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.CloseLinger == 0 {
		c.CloseLinger = DefaultCloseLinger
	}
	if c.FlushDelay <= 0 {
		c.FlushDelay = DefaultFlushDelay
	}
	if c.CookieRotation <= 0 {
		c.CookieRotation = cookie.DefaultRotation
	}
	if c.HoldNotLoaded == 0 {
		c.HoldNotLoaded = DefaultHoldNotLoaded
	}
	if c.ResumeHold == 0 {
		c.ResumeHold = DefaultResumeHold
	}
	if c.TicketLifetime <= 0 {
		c.TicketLifetime = DefaultTicketLifetime
	}
	populateBudgets(c)
	c.HalfOpen.populate()
}

// validate checks a populated config: every error names the field and what
// to choose instead.
func (c *ServerConfig) validate() error {
	switch {
	case c.MaxProtocol != 3 && c.MaxProtocol != MaxProtocol:
		return fmt.Errorf("netstack: MaxProtocol %d: this server speaks protocol 3 or 4", c.MaxProtocol)
	case c.Internet && c.MaxProtocol < MaxProtocol:
		return errors.New("netstack: internet mode requires protocol v4; MaxProtocol 3 is for private binds only")
	case c.Internet && c.SkipAddressValidation:
		return errors.New("netstack: internet mode always validates addresses; SkipAddressValidation is for private binds only")
	case len(c.RefuseV3Detail) > maxRefuseV3Detail || !wire.ValidUTF8NoNUL([]byte(c.RefuseV3Detail)):
		return fmt.Errorf("netstack: RefuseV3Detail %q: at most %d bytes of UTF-8 without NUL", c.RefuseV3Detail, maxRefuseV3Detail)
	case c.ResumeHold > wire.MaxHoldSeconds*time.Second || c.ResumeHold > 0 && c.ResumeHold%time.Second != 0:
		return fmt.Errorf("netstack: ResumeHold %v: whole seconds, at most %d", c.ResumeHold, wire.MaxHoldSeconds)
	case c.TicketLifetime < time.Minute:
		return fmt.Errorf("netstack: TicketLifetime %v: at least one minute", c.TicketLifetime)
	case c.Transport != nil && c.Conn != nil:
		return errors.New("netstack: ServerConfig sets both Transport and Conn; set one")
	}
	if err := checkDatagramSize(c.DatagramSize); err != nil {
		return err
	}
	if err := checkTransport(c.Transport); err != nil {
		return err
	}
	for _, err := range []error{c.ConnectBudget.Validate(), c.PrefixBudget.Validate(),
		c.HandshakeBudget.Validate(), c.UnvalidatedReplyBudget.Validate(), c.UnvalidatedRefusalBudget.Validate()} {
		if err != nil {
			return err
		}
	}
	return nil
}

// channelConfig is the sessions' share of a populated config, over a
// transport that carries datagrams of at most maxDatagram bytes.
func (c *ServerConfig) channelConfig(maxDatagram int) channelConfig {
	cc := channelConfig{rotation: c.Rotation, reliable: c.Reliable, heartbeat: c.HeartbeatInterval, timeout: c.Timeout,
		datagramSize: c.DatagramSize, flushDelay: c.FlushDelay, holdFor: c.HoldNotLoaded, closeLinger: c.CloseLinger}
	cc.fit(maxDatagram)
	return cc
}
