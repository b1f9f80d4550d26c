package netstack

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/cookie"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/policy"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/trust"
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
}

// ClientInfo describes an admitted client.
type ClientInfo struct {
	ID   uint32
	Name string
	Addr netip.AddrPort
	// Ticket is the admission ticket of the client's ClientFinished
	// (docs/protocol.md §3.13), as sent: opaque bytes (≤ 256) that the
	// transport never interprets; nil when there was none. It is set in
	// the ClientInfo given to OnAdmitted only.
	Ticket []byte
	// Protocol is the session's protocol version: 4, or 3 for a v3 client
	// (which must not be sent the v4 data plane's own types).
	Protocol uint16
}

// Handler receives a validated message from an admitted client on the
// receive goroutine. payload is valid only during the call; copy what you keep.
// What a handler sends to that client is flushed at the end of the receive
// pass, so a request's answer leaves at once.
type Handler func(client uint32, h *wire.Header, payload []byte)

// Sentinel errors of the server API.
var (
	ErrNoSuchClient = errors.New("netstack: no such admitted client")
	ErrServerClosed = errors.New("netstack: server closed")
)

type slotState uint8

const (
	slotSecuring slotState = iota
	slotConnected
	slotClosed
)

// peer is one slot of an admitted client: a session plus its name. state and
// name are guarded by the session's lock; rxMarked by it too (the receive
// goroutine's flag for rxTouched).
type peer struct {
	*session
	state    slotState
	name     string
	rxMarked bool
	departed bool // OnDisconnected was called (at a kick, before the linger ends)
	// The module schema table last queued to the client (announce.go).
	schemaSent bool
	schemaRev  uint32
	ticket     []byte // ClientFinished's admission ticket, handed to OnAdmitted
}

// Speaks reports whether the client's protocol version defines message
// type t (wire.InProtocol): a v3 client is sent only v3's types and module
// types. Send refuses any other with ErrNotInProtocol; a broadcast skips
// the client.
func (ci ClientInfo) Speaks(t wire.MessageType) bool { return wire.InProtocol(ci.Protocol, t) }

func (p *peer) info() ClientInfo {
	return ClientInfo{ID: p.id, Name: p.name, Addr: p.addr, Protocol: p.version}
}

// Server is the server endpoint of protocol v4 (and v3 where allowed).
type Server struct {
	cfg      ServerConfig
	chcfg    channelConfig
	tr       transport.Transport
	ownsConn bool // the server opened tr and closes it
	policy   policy.Policy
	budgets  *budgets
	cookies  *cookie.Jar
	halfOpen *halfOpenTable
	allowV3  bool // v3 hellos are answered (not ProtocolTooOld)
	validate bool // v4 sources must echo a cookie first
	reg      *wire.Registry
	log      *slog.Logger
	identity *handshake.ServerIdentity
	origin   time.Time

	started atomic.Bool // Start ran: the goroutines that end a linger are there

	closedSessions closedTable // closed.go: late frames are not attacks
	schemas        schemaTable // announce.go: the module types' table

	// mu guards the admitted clients' maps. It is never held across a
	// signature, a key agreement or a syscall: the game thread's sends and the
	// service loop take it briefly.
	mu     sync.RWMutex
	byAddr map[netip.AddrPort]*peer
	byID   map[uint32]*peer
	// admittedBy counts byAddr's entries per address and prefix (admitcaps.go).
	admittedBy admittedCount

	nextID uint32 // receive goroutine only: the id of the next ConnectAccepted
	open   []byte // receive goroutine only: scratch for a half-open's ClientFinished
	reply  []byte // receive goroutine only: scratch for plain answers
	// replyPayload is the receive goroutine's scratch for a ConnectRejected payload.
	replyPayload []byte

	handlersMu sync.RWMutex
	handlers   map[wire.MessageType]Handler

	ctr Counters
	hs  handshakeCounters // answers to Connect (metrics.go)

	readyFn   func(wire.MessageType) bool // s.hasHandler, bound once
	rxd       *dispatcher                 // receive goroutine's deliveries
	svcd      *dispatcher                 // service goroutine's (held messages released)
	rxMsgs    []transport.Message         // receive goroutine only: the read slots
	plainOut  []transport.Message         // receive goroutine only: writeOne's scratch
	rxFlush   *flusher
	rxTouched []*peer // peers with something to send at the end of the receive pass

	svcFlush *flusher // service goroutine only

	// flushMu serializes Flush (the game thread's). Flush packs and seals
	// into a free flusher and hands it to the tick writer goroutine, which
	// makes the system calls while the game thread goes on.
	flushMu     sync.Mutex
	flushClosed bool
	tickFree    chan *flusher
	tickWrites  chan *flusher
	tickPeers   []*peer

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

type pendingDelivery struct {
	h          wire.Header
	start, end int
}

// NewServer validates cfg and opens the socket (or adopts cfg.Conn). Call
// Start to begin serving.
func NewServer(cfg ServerConfig) (*Server, error) {
	parse := policy.Parse
	if cfg.Internet {
		parse = policy.ParseInternet
	}
	pol, err := parse(cfg.Bind)
	if err != nil {
		return nil, err
	}
	if cfg.MaxProtocol == 0 {
		cfg.MaxProtocol = MaxProtocol
	}
	switch {
	case cfg.MaxProtocol != 3 && cfg.MaxProtocol != MaxProtocol:
		return nil, fmt.Errorf("netstack: MaxProtocol %d: this server speaks protocol 3 or 4", cfg.MaxProtocol)
	case cfg.Internet && cfg.MaxProtocol < MaxProtocol:
		return nil, errors.New("netstack: internet mode requires protocol v4; MaxProtocol 3 is for private binds only")
	case cfg.Internet && cfg.SkipAddressValidation:
		return nil, errors.New("netstack: internet mode always validates addresses; SkipAddressValidation is for private binds only")
	case len(cfg.RefuseV3Detail) > maxRefuseV3Detail || !wire.ValidUTF8NoNUL([]byte(cfg.RefuseV3Detail)):
		return nil, fmt.Errorf("netstack: RefuseV3Detail %q: at most %d bytes of UTF-8 without NUL", cfg.RefuseV3Detail, maxRefuseV3Detail)
	}
	if cfg.RefuseV3Detail == "" {
		cfg.RefuseV3Detail = "this server needs protocol v4; update the client"
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.SecuringTimeout <= 0 {
		cfg.SecuringTimeout = DefaultSecuringTimeout
	}
	if cfg.Registry == nil {
		cfg.Registry = wire.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SocketBuffer <= 0 {
		cfg.SocketBuffer = 4 << 20
	}
	if err := checkDatagramSize(cfg.DatagramSize); err != nil {
		return nil, err
	}
	if cfg.ReceiveBatch <= 0 {
		cfg.ReceiveBatch = 32
	}
	populateBudgets(&cfg)
	for _, err := range []error{cfg.ConnectBudget.Validate(), cfg.PrefixBudget.Validate(),
		cfg.HandshakeBudget.Validate(), cfg.UnvalidatedReplyBudget.Validate(), cfg.UnvalidatedRefusalBudget.Validate()} {
		if err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg: cfg,
		chcfg: channelConfig{rotation: cfg.Rotation, reliable: cfg.Reliable, heartbeat: cfg.HeartbeatInterval, timeout: cfg.Timeout,
			datagramSize: cfg.DatagramSize, flushDelay: cfg.FlushDelay},
		policy:   pol,
		budgets:  newBudgets(&cfg),
		cookies:  cookie.NewJar(cfg.CookieRotation, nil),
		allowV3:  !cfg.Internet && !cfg.RefuseV3,
		validate: cfg.MaxProtocol >= MaxProtocol && !cfg.SkipAddressValidation,
		open:     make([]byte, 0, wire.MaxDatagram),
		reply:    make([]byte, 0, 1+wire.HeaderSize+5+wire.MaxDetailLen),

		replyPayload: make([]byte, 0, 5+wire.MaxDetailLen),
		reg:          cfg.Registry,
		log:          cfg.Logger,
		origin:       time.Now(),
		byAddr:       make(map[netip.AddrPort]*peer),
		byID:         make(map[uint32]*peer),
		nextID:       1,
		handlers:     make(map[wire.MessageType]Handler),
		done:         make(chan struct{}),
	}
	s.rxd, s.svcd = newDispatcher(s), newDispatcher(s)
	s.readyFn = s.hasHandler
	s.chcfg.holdFor = cfg.HoldNotLoaded
	s.chcfg.closeLinger = cfg.CloseLinger
	s.chcfg.populate()
	s.chcfg.populateServer()
	s.halfOpen = newHalfOpenTable(cfg.HalfOpen, cfg.SecuringTimeout, &s.ctr)
	if s.identity, err = handshake.NewServerIdentity(cfg.Identity); err != nil {
		return nil, err
	}
	if s.tr = givenTransport(cfg.Transport, cfg.Conn); s.tr == nil {
		// A burst of 32 clients at 60 Hz overflows the default buffers.
		u, err := transport.ListenUDP(pol.Network(), netip.AddrPortFrom(pol.BindAddr(), uint16(cfg.Port)), cfg.SocketBuffer)
		if err != nil {
			return nil, fmt.Errorf("netstack: listen on %s port %d: %w", pol.BindAddr(), cfg.Port, err)
		}
		s.tr, s.ownsConn = u, true
	}
	s.initIO()
	return s, nil
}

// initIO builds the read slots and the flushers of the transport.
func (s *Server) initIO() {
	s.rxMsgs = readSlots(s.cfg.ReceiveBatch)
	s.plainOut = make([]transport.Message, 1)
	s.rxFlush = newFlusher(s.tr)
	s.svcFlush = newFlusher(s.tr)
	s.tickFree = make(chan *flusher, tickFlushers)
	s.tickWrites = make(chan *flusher, tickFlushers)
	for range tickFlushers {
		s.tickFree <- newFlusher(s.tr)
	}
}

// tickFlushers is how many ticks' datagrams may wait for the tick writer;
// a Flush finding none free waits for the writer (back pressure).
const tickFlushers = 4

// tickWriter writes the datagrams Flush packed, then returns the flusher.
func (s *Server) tickWriter() {
	defer s.wg.Done()
	for f := range s.tickWrites {
		f.write()
		s.tickFree <- f
	}
}

// Start launches the receive, service and tick writer goroutines.
func (s *Server) Start() {
	s.started.Store(true)
	s.wg.Add(3)
	go s.receiveLoop()
	go s.serviceLoop()
	go s.tickWriter()
}

// Addr returns the local address the server listens on.
func (s *Server) Addr() netip.AddrPort { return s.tr.LocalAddr() }

// Pin returns the server identity pin ("ed25519:" + base64url).
func (s *Server) Pin() string { return trust.Pin(s.identity.Public[:]) }

// Policy returns the endpoint policy the server applies (its Exposure text
// says which peers can reach it).
func (s *Server) Policy() policy.Policy { return s.policy }

// Protocols describes what the server accepts, for logs and banners, e.g.
// "protocol v4 with address validation, v3 refused".
func (s *Server) Protocols() string {
	if s.cfg.MaxProtocol < MaxProtocol {
		return "protocol v3 only"
	}
	out := "protocol v4 with address validation"
	if !s.validate {
		out = "protocol v4 without address validation"
	}
	if s.allowV3 {
		return out + ", v3 accepted"
	}
	return out + ", v3 refused"
}

// Protocol is the newest protocol version the server speaks (4, or 3 for
// a server configured to speak only v3); LAN discovery announces it.
func (s *Server) Protocol() uint16 { return s.cfg.MaxProtocol }

// Registry returns the schema registry used by the receive path.
func (s *Server) Registry() *wire.Registry { return s.reg }

// Counters returns the server-wide counters (the host adds InboxDrops).
func (s *Server) Counters() *Counters { return &s.ctr }

// Stats returns a snapshot of the server-wide counters.
func (s *Server) Stats() Stats { return s.ctr.snapshot() }

// Time returns the server clock: seconds since the server started (§5.2).
func (s *Server) Time() float32 { return float32(time.Since(s.origin).Seconds()) }

// Handle sets the handler for message type t (nil removes it).
func (s *Server) Handle(t wire.MessageType, h Handler) {
	s.handlersMu.Lock()
	defer s.handlersMu.Unlock()
	if h == nil {
		delete(s.handlers, t)
		return
	}
	s.handlers[t] = h
}

// Close tells every client ServerShutdown, frees all slots and stops the
// server. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.flushMu.Lock()
		s.flushClosed = true
		close(s.tickWrites) // the tick writer writes what is queued, then ends
		s.flushMu.Unlock()
		s.lingerAll()
		now := time.Now()
		for _, p := range s.snapshotPeers(nil) {
			p.mu.Lock()
			if p.state == slotConnected {
				p.closeLocked(wire.DisconnectServerShutdown, "server shutting down", now)
			} else {
				p.closed = true
			}
			p.mu.Unlock()
			s.remove(p)
		}
		s.halfOpen.clearAll()
		close(s.done)
		// Unblock the receive goroutine.
		_ = s.tr.SetReadDeadline(time.Now())
		if s.ownsConn {
			_ = s.tr.Close()
		}
		s.wg.Wait()
	})
	return nil
}

// lingerAll begins the graceful close of every admitted client
// (ServerShutdown) and waits, at most the linger, while the receive and
// service goroutines deliver what was sent to them and free their slots.
func (s *Server) lingerAll() {
	if !s.started.Load() || s.chcfg.closeLinger <= 0 {
		return
	}
	now := time.Now()
	waiting := false
	for _, p := range s.snapshotPeers(nil) {
		p.mu.Lock()
		closed := p.state != slotConnected
		if !closed {
			closed = p.beginCloseLocked(wire.DisconnectServerShutdown, "server shutting down", s.chcfg.closeLinger, now)
		}
		p.mu.Unlock()
		if closed {
			s.remove(p)
		} else {
			s.depart(p)
			waiting = true
		}
	}
	// The service loop ends each linger within its 10 ms round; the
	// margin covers a late round.
	for deadline := now.Add(s.chcfg.closeLinger + 50*time.Millisecond); waiting && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		s.mu.RLock()
		waiting = len(s.byAddr) > 0
		s.mu.RUnlock()
	}
}

func (s *Server) snapshotPeers(buf []*peer) []*peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	buf = buf[:0]
	for _, p := range s.byAddr {
		buf = append(buf, p)
	}
	return buf
}

// Clients lists the admitted clients (half-open handshakes are not visible).
func (s *Server) Clients() []ClientInfo {
	var out []ClientInfo
	for _, p := range s.snapshotPeers(nil) {
		p.mu.Lock()
		if p.state == slotConnected && !p.departed {
			out = append(out, p.info())
		}
		p.mu.Unlock()
	}
	return out
}

// SlotCount returns the number of admitted clients plus half-open handshakes.
// Only the admitted ones count toward MaxClients.
func (s *Server) SlotCount() int {
	s.mu.RLock()
	n := len(s.byAddr)
	s.mu.RUnlock()
	return n + s.halfOpen.len()
}

// HalfOpenCount returns the number of half-open handshakes: answered with a
// ConnectAccepted, no valid ClientFinished yet.
func (s *Server) HalfOpenCount() int { return s.halfOpen.len() }

// admittedCount returns the number of admitted clients.
func (s *Server) admittedCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID)
}

func (s *Server) admitted(id uint32) *peer {
	s.mu.RLock()
	p := s.byID[id]
	s.mu.RUnlock()
	return p
}

// ClientStats returns the §13 statistics of an admitted client.
func (s *Server) ClientStats(id uint32) (Stats, bool) {
	p := s.admitted(id)
	if p == nil {
		return Stats{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != slotConnected {
		return Stats{}, false
	}
	return p.statsLocked(), true
}

// ChannelBinding returns the handshake transcript hash th of a client's
// session: a value unique to this session that in-channel authentication
// (e.g. SCRAM channel binding) can bind to.
func (s *Server) ChannelBinding(id uint32) ([32]byte, bool) {
	p := s.admitted(id)
	if p == nil {
		return [32]byte{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.th, p.state == slotConnected
}

// Send queues one message for an admitted client: the next Flush (or the
// end of the receive pass, for a handler's answer; or the service loop,
// after FlushDelay) packs it with the others for that client. It never
// performs a system call. An unreliable message that does not fit one
// datagram is refused (ErrUnreliableTooLarge); a reliable one is fragmented.
// A type the client's protocol version does not define is refused
// (ErrNotInProtocol; see ClientInfo.Speaks).
func (s *Server) Send(id uint32, t wire.MessageType, ch wire.Channel, payload []byte) error {
	p := s.admitted(id)
	if p == nil {
		return ErrNoSuchClient
	}
	return s.sendTo(p, t, ch, payload, time.Now())
}

func (s *Server) sendTo(p *peer, t wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	p.mu.Lock()
	if p.state != slotConnected || p.lingering {
		p.mu.Unlock()
		return ErrNoSuchClient
	}
	if t >= wire.FirstUserDefined {
		s.announceLocked(p, now) // the table that covers t goes first
	}
	err := p.sendLocked(t, ch, payload, now)
	p.mu.Unlock()
	return err
}

// Flush packs, seals and writes what every admitted client has queued, in
// as few datagrams per client as the datagram size allows (docs/protocol.md
// §5.5); acknowledgements ride along. The host calls it once per tick,
// after modules and replication ran. Peer locks are held only while
// packing; the datagrams are written (sendmmsg on Linux) by the server's
// tick writer goroutine, so the caller does not wait for the system calls.
// It is safe to call from any goroutine; calls are serialized.
func (s *Server) Flush() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.flushClosed {
		return
	}
	f := <-s.tickFree
	now := time.Now()
	s.tickPeers = s.snapshotPeers(s.tickPeers)
	for _, p := range s.tickPeers {
		p.mu.Lock()
		if p.state == slotConnected && (!p.queuedAt.IsZero() || p.urgent || p.rel.Due(now)) {
			p.flushLocked(now, &f.b)
		}
		closed := p.closed && p.state == slotConnected
		p.mu.Unlock()
		if closed {
			s.remove(p)
		}
	}
	clear(s.tickPeers)
	if len(f.b.spans) == 0 {
		s.tickFree <- f
		return
	}
	s.tickWrites <- f
}

// ClientProtocol returns the protocol version of an admitted client's
// session (4, or 3), or 0 for an unknown id.
func (s *Server) ClientProtocol(id uint32) uint16 {
	if p := s.admitted(id); p != nil {
		return p.version
	}
	return 0
}

// Broadcast sends one message to every admitted client whose protocol
// version defines t (a v4-only type skips v3 clients). It returns the
// first error; a failure for one client does not stop the others.
func (s *Server) Broadcast(t wire.MessageType, ch wire.Channel, payload []byte) error {
	return s.BroadcastExcept(0, t, ch, payload)
}

// BroadcastExcept is Broadcast but for the client with id except.
func (s *Server) BroadcastExcept(except uint32, t wire.MessageType, ch wire.Channel, payload []byte) error {
	now := time.Now()
	bp := peerLists.Get().(*[]*peer)
	peers := s.snapshotPeers(*bp)
	var first error
	for _, p := range peers {
		if p.id == except || !wire.InProtocol(p.version, t) { // version: immutable
			continue
		}
		if err := s.sendTo(p, t, ch, payload, now); err != nil && !errors.Is(err, ErrNoSuchClient) && first == nil {
			first = err
		}
	}
	clear(peers)
	*bp = peers[:0]
	peerLists.Put(bp)
	return first
}

// peerLists recycles the peer lists of broadcasts, which modules may send
// every tick.
var peerLists = sync.Pool{New: func() any { return new([]*peer) }}

// Kick closes an admitted client's connection with reason (e.g. Kicked,
// Banned) and detail, which the client is told. What was sent to the client
// before is delivered first (ServerConfig.CloseLinger): the client leaves the
// game at once (OnDisconnected, no more sends), and its Disconnect follows
// when it has acknowledged everything or the linger ends.
func (s *Server) Kick(id uint32, reason wire.DisconnectReason, detail string) error {
	p := s.admitted(id)
	if p == nil {
		return ErrNoSuchClient
	}
	p.mu.Lock()
	if p.state != slotConnected || p.lingering {
		p.mu.Unlock()
		return ErrNoSuchClient
	}
	closed := p.beginCloseLocked(reason, detail, s.chcfg.closeLinger, time.Now()) // what is queued leaves at the service loop's next round
	p.mu.Unlock()
	if closed {
		s.remove(p)
	} else {
		s.depart(p)
	}
	return nil
}

// depart reports the departure of an admitted client once: at its close,
// or when a graceful close begins (its slot is freed when that ends).
func (s *Server) depart(p *peer) {
	p.mu.Lock()
	report := p.state == slotConnected && !p.departed
	p.departed = true
	info := p.info()
	reason, detail := p.reason, p.detail
	p.mu.Unlock()
	if !report {
		return
	}
	s.log.Info("client disconnected", "client", info.ID, "name", info.Name, "addr", info.Addr.String(), "reason", reason.String(), "detail", detail)
	if s.cfg.OnDisconnected != nil {
		s.cfg.OnDisconnected(info, reason, detail)
	}
}

// remove frees a closed slot and reports the departure of an admitted client.
func (s *Server) remove(p *peer) {
	s.mu.Lock()
	if s.byAddr[p.addr] == p {
		delete(s.byAddr, p.addr)
		s.admittedBy.release(p.addr.Addr())
	}
	if s.byID[p.id] == p {
		delete(s.byID, p.id)
	}
	s.mu.Unlock()

	s.depart(p)
	p.mu.Lock()
	p.state = slotClosed
	opener := p.opener
	p.mu.Unlock()
	s.closedSessions.remember(p.addr, opener, time.Now())
}

func (s *Server) receiveLoop() {
	defer s.wg.Done()
	for {
		n, err := s.tr.ReadBatch(s.rxMsgs)
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // transient (e.g. ICMP port unreachable surfaced as an error)
		}
		now := time.Now()
		for i := range n {
			m := &s.rxMsgs[i]
			s.handleDatagram(m.Buf[:m.N], m.Addr, m.Validated, now)
		}
		s.flushTouched(now)
	}
}

// flushTouched sends, at the end of a receive pass, what the pass made due
// for its peers: heartbeat answers, Acks due at once, the admission's
// GameStateSync, and the answers handlers queued.
func (s *Server) flushTouched(now time.Time) {
	if len(s.rxTouched) == 0 {
		return
	}
	for _, p := range s.rxTouched {
		p.mu.Lock()
		p.rxMarked = false
		if p.state == slotConnected {
			p.flushLocked(now, &s.rxFlush.b)
		}
		closed := p.closed && p.state == slotConnected
		p.mu.Unlock()
		if closed {
			s.remove(p)
		}
	}
	clear(s.rxTouched)
	s.rxTouched = s.rxTouched[:0]
	s.rxFlush.write()
}

func (s *Server) serviceLoop() {
	defer s.wg.Done()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var peers []*peer
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			// time.Now per peer, not the tick's value: a tick carries its
			// scheduled time, which lags when this goroutine runs late, and a
			// heartbeat stamped with it would inflate the ping.
			s.halfOpen.expire(time.Now())
			s.closedSessions.expire(time.Now())
			peers = s.snapshotPeers(peers)
			for _, p := range peers {
				s.servicePeer(p, time.Now())
			}
			clear(peers)
			s.svcFlush.write()
		}
	}
}

func (s *Server) servicePeer(p *peer, now time.Time) {
	p.mu.Lock()
	var closed bool
	if p.state == slotConnected {
		if len(p.held) > 0 {
			p.rx0 = rxContext{reg: s.reg, deliver: s.svcd.collectFn, now: now, ready: s.readyFn}
			p.releaseHeldLocked()
			p.rx0 = rxContext{}
		}
		closed = p.serviceLocked(now, &s.svcFlush.b)
	}
	info := p.info()
	p.mu.Unlock()
	s.svcd.dispatch(info)
	if closed {
		s.remove(p)
	}
}

func (s *Server) newPeerSession(addr netip.AddrPort, id uint32, version uint16, now time.Time, keys sessionKeys) *session {
	ss := newSession(s.tr, addr, id, true, version, s.origin, now, keys, &s.chcfg)
	ss.global = &s.ctr
	return ss
}
