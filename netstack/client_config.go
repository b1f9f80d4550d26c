package netstack

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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
	// DeliverRefusals: the server's MessageRefused notices (docs/protocol.md
	// §5.6: it refused a message of ours, and why) are delivered to Receive
	// as messages of type wire.TypeMessageRefused, besides being counted,
	// so that a request the server refused fails at once instead of
	// waiting for an answer that will not come.
	DeliverRefusals bool
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
	// NoMigration: the client does not ask the server for a connection id
	// (docs/protocol.md §4.1), so its session ends when its address
	// changes (a NAT rebinding, Rebind) instead of following it. By default
	// a v4 client over a socket (its own, or Conn) asks, right after
	// admission, and from the answer on its frames carry the id (8 bytes
	// more each); one over a Transport never does.
	NoMigration bool
	// Resumable asks the server for resume tickets after admission
	// (docs/protocol.md §3.15; v4 servers that hold seats): a session that
	// then times out keeps its state, and Client.Resume comes back to the
	// same seat within the server's hold window.
	Resumable bool

	// ServiceInterval is how often the client runs its timers: heartbeats,
	// retransmissions, delayed Acks, the send of what waited FlushInterval.
	// 0 means DefaultServiceInterval (10 ms). A load generator holding
	// thousands of idle clients in one process raises it so that their
	// wake-ups do not cost a core; a player's client keeps the default (a
	// longer interval delays Acks, retransmissions and unflushed sends by up
	// to that much).
	ServiceInterval time.Duration

	// Polled: once admitted, the client reads nothing itself. Its receive
	// goroutine ends when Dial returns, and the caller reads the client's
	// transport (Transport or Conn) and hands every datagram to
	// Client.Ingest, which returns the messages on the caller's goroutine
	// (what arrived with the admission is returned by Receive); so it
	// needs Transport or Conn, the one the caller reads. A game loop that
	// polls its sessions once a frame, or a bot host driving
	// many sessions from one goroutine, saves a goroutine wake-up and a
	// channel hand-off per datagram. The client's timers (ServiceInterval)
	// and Flush still run on goroutines of its own.
	Polled bool

	resuming *resumeFrom // set by Client.Resume for its Dial
}

// DefaultServiceInterval is ClientConfig.ServiceInterval's default.
const DefaultServiceInterval = 10 * time.Millisecond

// DefaultClientFlushInterval is ClientConfig.FlushInterval's default.
const DefaultClientFlushInterval = 2 * time.Millisecond

// populate fills every zero field of c with its documented default; a
// negative FlushInterval or CloseLinger (none) is kept. It is the one place
// the client's defaults are applied.
func (c *ClientConfig) populate() {
	if c.ConnectRetry <= 0 {
		c.ConnectRetry = DefaultConnectRetry
	}
	if c.ConnectRetries <= 0 {
		c.ConnectRetries = DefaultConnectRetries
	}
	if c.InboxSize <= 0 {
		c.InboxSize = DefaultInboxSize
	}
	if c.Registry == nil {
		c.Registry = wire.NewRegistry()
	}
	if c.DatagramSize == 0 {
		c.DatagramSize = wire.DefaultDatagramSize
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultClientFlushInterval
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
	if c.ServiceInterval <= 0 {
		c.ServiceInterval = DefaultServiceInterval
	}
}

// validate checks a populated config: every error names the field and what
// to choose instead.
func (c *ClientConfig) validate() error {
	if err := checkDatagramSize(c.DatagramSize); err != nil {
		return err
	}
	switch c.Protocol {
	case 0, handshake.ProtocolVersion, handshake.ProtocolVersion4:
	default:
		return fmt.Errorf("netstack: protocol %d: choose 3, 4 or 0 (v4 with fallback to v3)", c.Protocol)
	}
	switch {
	case c.Pin != "":
		if _, err := trust.ParsePin(c.Pin); err != nil {
			return err
		}
	case c.KnownHosts == nil:
		return errors.New("netstack: no pin and no known_hosts: refusing to trust an unknown server")
	}
	if c.Transport != nil && c.Conn != nil {
		return errors.New("netstack: ClientConfig sets both Transport and Conn; set one")
	}
	if c.Polled && c.Transport == nil && c.Conn == nil {
		return errors.New("netstack: a Polled client is read by its caller: set Transport or Conn to what the caller reads")
	}
	return checkTransport(c.Transport)
}

// channelConfig is the session's share of a populated config, for a session
// of protocol version over a transport that carries datagrams of at most
// maxDatagram bytes.
func (c *ClientConfig) channelConfig(version uint16, maxDatagram int) channelConfig {
	cc := channelConfig{rotation: c.Rotation, reliable: c.Reliable, heartbeat: c.HeartbeatInterval, timeout: c.Timeout,
		datagramSize: c.DatagramSize, flushDelay: DefaultFlushDelay, closeLinger: c.CloseLinger, deliverRefusals: c.DeliverRefusals}
	if version >= handshake.ProtocolVersion4 {
		// A module message may overtake the announcement of its type
		// (both Reliable, which does not order): hold it for the table.
		cc.holdFor = DefaultHoldUnannounced
		if !c.NoMigration && c.Transport == nil {
			cc.idRoom = seal.IDSize // its frames will carry a connection id
		}
	}
	cc.fit(maxDatagram)
	return cc
}
