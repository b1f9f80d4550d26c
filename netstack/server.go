package netstack

import (
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
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

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
	ticket     []byte     // ClientFinished's admission ticket, handed to OnAdmitted
	resume     peerResume // resume_server.go
	dueIdx     int32      // its entry in the server's dueTable, plus one (0: none); under mu
}

// Speaks reports whether the client's protocol version defines message
// type t (wire.InProtocol): a v3 client is sent only v3's types and module
// types. Send refuses any other with ErrNotInProtocol; a broadcast skips
// the client.
func (ci ClientInfo) Speaks(t wire.MessageType) bool { return wire.InProtocol(ci.Protocol, t) }

func (p *peer) info() ClientInfo {
	return ClientInfo{ID: p.id, Name: p.name, Addr: p.path.addr, Protocol: p.version}
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
	drain   drainState  // drain.go: new clients refused while it holds a detail

	closedSessions closedTable // closed.go: late frames are not attacks
	resume         resumeState // resume_server.go: tickets and held seats
	schemas        schemaTable // announce.go: the module types' table

	// mu guards the admitted clients' maps. It is never held across a
	// signature, a key agreement or a syscall: the game thread's sends and the
	// service loop take it briefly.
	mu     sync.RWMutex
	byAddr map[netip.AddrPort]*peer
	byID   map[uint32]*peer
	// byConnID finds a v4 session by the connection id of its class-0x03
	// frames, whatever their source (migrate.go).
	byConnID map[[seal.IDSize]byte]*peer
	// due holds when the service loop next has work for each of byID's
	// sessions, densely (duetable.go): its walks touch only those due.
	due dueTable
	// admittedBy counts byAddr's entries per address and prefix (admitcaps.go).
	admittedBy admittedCount

	nextID uint32 // receive goroutine only: the id of the next ConnectAccepted
	open   []byte // receive goroutine only: scratch for a half-open's ClientFinished
	reply  []byte // receive goroutine only: scratch for plain answers
	// replyPayload is the receive goroutine's scratch for a ConnectRejected payload.
	replyPayload []byte

	handlersMu sync.RWMutex
	handlers   map[wire.MessageType]Handler
	// handlersGen counts the changes of handlers, so that a receive pass
	// looks a type's handler up once for a run of messages of that type.
	handlersGen atomic.Uint64

	// dispatching is the session whose messages the receive goroutine's
	// handlers are being given: Send to it needs no lookup of its id.
	dispatching atomic.Pointer[peer]
	// dispatchAt is the receive pass's time (since origin) while
	// dispatching is set: a Send to that session is queued at it, without a
	// clock read per message (the pass's answers all leave at its end).
	dispatchAt atomic.Int64

	ctr  Counters
	hist *sessionHistograms // the sessions' RTT, loss, bandwidth and send-queue delay
	hs   handshakeCounters  // answers to Connect (metrics.go)

	readyFn   func(wire.MessageType) bool // s.hasHandler, bound once
	rxd       *dispatcher                 // receive goroutine's deliveries
	svcd      *dispatcher                 // service goroutine's (held messages released)
	rxMsgs    []transport.Message         // receive goroutine only: the read slots
	rxAhead   []*peer                     // the batch's sessions by source, for prefetching (receive goroutine)
	plainOut  []transport.Message         // receive goroutine only: writeOne's scratch
	rxFlush   *flusher
	rxTouched []*peer // peers with something to send at the end of the receive pass

	svcFlush *flusher // service goroutine only

	// flushMu serializes Flush and QueueFlush (the game thread's). Flush
	// packs into a free flusher and hands it to the tick writer goroutine,
	// which seals and makes the system calls while the game thread goes on;
	// QueueFlush hands it over empty and the writer packs it first.
	flushMu     sync.Mutex
	flushClosed bool
	tickFree    chan *flusher
	tickWrites  chan *flusher

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
	cfg.populate()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		hist:     newSessionHistograms(),
		cfg:      cfg,
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
		byConnID:     make(map[[seal.IDSize]byte]*peer),
		nextID:       1,
		handlers:     make(map[wire.MessageType]Handler),
		done:         make(chan struct{}),
	}
	s.rxd, s.svcd = newDispatcher(s), newDispatcher(s)
	s.initResume(s.origin)
	s.readyFn = s.hasHandler
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
	if cfg.Sessions != nil {
		s.tr = transport.NewMux(s.tr, cfg.Sessions)
	}
	s.chcfg = cfg.channelConfig(s.tr.MaxDatagram())
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
		f := newFlusher(s.tr)
		// Sealed by the tick writer: the encryption of a tick's datagrams
		// is not the game thread's time.
		f.b.deferSeal = true
		s.tickFree <- f
	}
}

// tickFlushers is how many ticks' datagrams may wait for the tick writer;
// a Flush finding none free waits for the writer (back pressure).
const tickFlushers = 4

// tickWriter packs the flushers QueueFlush handed over, writes the
// datagrams, then returns the flusher.
func (s *Server) tickWriter() {
	defer s.wg.Done()
	for f := range s.tickWrites {
		if f.pack {
			s.packTick(f)
			f.pack = false
		}
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
	s.handlersGen.Add(1)
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
		for _, p := range append(s.snapshotPeers(nil), s.heldPeers()...) {
			p.mu.Lock()
			if p.state == slotConnected {
				p.closeLocked(wire.DisconnectServerShutdown, "server shutting down", now)
			} else {
				p.life.closed = true
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
		waiting = len(s.byID) > 0
		s.mu.RUnlock()
	}
}

func (s *Server) snapshotPeers(buf []*peer) []*peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	buf = buf[:0]
	for _, p := range s.byID { // not byAddr: a migrated session may have no entry there (migrate.go)
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
	n := len(s.byID)
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
	return p.keys.th, p.state == slotConnected
}

// Send queues one message for an admitted client: the next Flush (or the
// end of the receive pass, for a handler's answer; or the service loop,
// after FlushDelay) packs it with the others for that client. It never
// performs a system call. An unreliable message that does not fit one
// datagram is refused (ErrUnreliableTooLarge); a reliable one is fragmented.
// A type the client's protocol version does not define is refused
// (ErrNotInProtocol; see ClientInfo.Speaks).
func (s *Server) Send(id uint32, t wire.MessageType, ch wire.Channel, payload []byte) error {
	// A handler answering its client: that session is at hand. (Its id is
	// never another session's; one closed or resumed meanwhile is found
	// out under its lock by sendTo, as one looked up would be.)
	p := s.dispatching.Load()
	if p != nil && p.id == id {
		// Stored before dispatching, and read after: no later than now.
		return s.sendTo(p, t, ch, payload, s.origin.Add(time.Duration(s.dispatchAt.Load())))
	}
	if p = s.admitted(id); p == nil {
		return ErrNoSuchClient
	}
	return s.sendTo(p, t, ch, payload, time.Now())
}

func (s *Server) sendTo(p *peer, t wire.MessageType, ch wire.Channel, payload []byte, now time.Time) error {
	p.mu.Lock()
	if next := p.resume.successor; next != nil { // resumed meanwhile
		p.mu.Unlock()
		return s.sendTo(next, t, ch, payload, now)
	}
	if p.state != slotConnected || p.life.lingering {
		p.mu.Unlock()
		return ErrNoSuchClient
	}
	if p.life.seat.held {
		end, err := s.sendHeldLocked(p, t, ch, payload, now)
		p.mu.Unlock()
		if end {
			s.remove(p)
		}
		return err
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
// §5.5); acknowledgements ride along. Peer locks are held only while
// packing; the datagrams are encrypted and written (sendmmsg on Linux) by
// the server's tick writer goroutine, so the caller waits neither for the
// sealing nor for the system calls (each datagram's frame sequence and
// header are fixed while packing, so the frames are the same). When Flush
// returns, everything queued before it is packed. QueueFlush leaves the
// packing to the tick writer too.
// It is safe to call from any goroutine; calls are serialized.
func (s *Server) Flush() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.flushClosed {
		return
	}
	f := <-s.tickFree
	s.packTick(f)
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
	if ch.IsReliable() {
		peers = s.appendHeld(peers) // queued for a resumption (resume_server.go)
	}
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
	if p.state != slotConnected || p.life.lingering {
		p.mu.Unlock()
		return ErrNoSuchClient
	}
	if p.life.seat.held { // its path is dark: nothing to deliver first
		p.endHoldLocked(reason, detail, time.Now())
		p.mu.Unlock()
		s.remove(p)
		return nil
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
	reason, detail := p.life.reason, p.life.detail
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
	if s.byAddr[p.path.addr] == p {
		delete(s.byAddr, p.path.addr)
		s.admittedBy.release(p.path.addr.Addr())
	}
	if s.byID[p.id] == p {
		delete(s.byID, p.id)
	}
	s.unholdLocked(p)
	if m := &p.path.mig; m.hasID && s.byConnID[m.id] == p {
		delete(s.byConnID, m.id)
	}
	s.mu.Unlock()

	s.depart(p)
	p.mu.Lock()
	s.due.remove(p)
	p.state = slotClosed
	opener := p.keys.opener
	p.mu.Unlock()
	s.closedSessions.remember(p.path.addr, opener, time.Now())
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
		s.lookAhead(n)
		for i := range n {
			if i+1 < n {
				prefetchPeer(s.rxAhead[i+1]) // loaded while this one is handled
			}
			m := &s.rxMsgs[i]
			s.handleDatagram(m.Buf[:m.N], m.Addr, m.Validated, now)
		}
		clear(s.rxAhead)
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
			s.scheduleLocked(p) // what the pass made due has left
		}
		closed := p.life.closed && p.state == slotConnected
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
			s.expireHeld(time.Now())
			// Only the sessions due: an idle session is not locked.
			peers = s.due.dueList(peers, int64(time.Since(s.origin)))
			for _, p := range peers {
				s.servicePeer(p, time.Now())
			}
			clear(peers)
			s.svcFlush.write()
		}
	}
}

// scheduleLocked sets when the service loop next has work for p, from
// its timers (under p.mu, after what is due now was done).
func (s *Server) scheduleLocked(p *peer) {
	due := int64(0) // held messages wait for a handler: looked at every pass
	if len(p.rel.held) == 0 {
		due = p.nextServiceLocked()
		if t := s.resumeDueLocked(p); !t.IsZero() {
			due = min(due, max(int64(t.Sub(p.origin)), 1))
		}
	}
	p.svcAt.Load().Store(due)
}

func (s *Server) servicePeer(p *peer, now time.Time) {
	p.mu.Lock()
	var closed bool
	if p.state == slotConnected {
		if len(p.rel.held) > 0 {
			p.rel.rx0 = rxContext{reg: s.reg, deliver: s.svcd.collectFn, now: now, ready: s.readyFn}
			p.releaseHeldLocked()
			p.rel.rx0 = rxContext{}
		}
		closed = p.serviceLocked(now, &s.svcFlush.b)
		s.resumeServiceLocked(p, now)
		s.scheduleLocked(p)
	}
	held := p.state == slotConnected && p.life.seat.held
	info := p.info()
	p.mu.Unlock()
	s.svcd.dispatch(info)
	switch {
	case closed:
		s.remove(p)
	case held:
		s.holdSeat(p)
	}
}

func (s *Server) newPeerSession(addr netip.AddrPort, id uint32, version uint16, now time.Time, keys sessionKeys) *session {
	cfg := &s.chcfg
	if size := transport.MaxDatagramTo(s.tr, addr); size < cfg.datagramSize {
		// A peer whose transport carries less (a WebTransport session)
		// gets datagrams it can carry; fragmentation carries the rest.
		own := s.chcfg
		own.datagramSize = size
		cfg = &own
	}
	ss := newSession(s.tr, addr, id, true, version, s.origin, now, keys, cfg)
	ss.global, ss.hist = &s.ctr, s.hist
	return ss
}
