package netstack

import (
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Frame class bytes of §2.
const (
	classPlain  = 0x01
	classSealed = 0x02
	// classSealedID is a sealed frame with a connection id (§4.1): found by
	// its id, not its source.
	classSealedID = 0x03
	classLegacy   = 0x4B // followed by 52 50 53: a bare v1 packet
)

// handleDatagram is the whole receive path for one datagram (§2): endpoint
// policy first, then the frame class; plain and legacy datagrams are charged
// to their address and prefix budgets before any framing. vouched says the
// transport proved the source's address (transport.Message.Validated).
func (s *Server) handleDatagram(d []byte, from netip.AddrPort, vouched bool, now time.Time) {
	// Every datagram read counts, whatever becomes of it (dropped, a
	// handshake, a session's): as every datagram written does.
	s.ctr.PacketsReceived.Add(1)
	s.ctr.BytesReceived.Add(uint64(len(d)))
	addr := from.Addr()
	if from.Port() == 0 || !s.policy.Allows(addr) {
		s.ctr.drop(dropPolicy)
		return
	}
	if len(d) == 0 {
		s.ctr.drop(dropMalformed)
		return
	}
	switch d[0] {
	case classSealed:
		s.handleSealed(d, from, now)
	case classSealedID:
		s.handleSealedID(d, from, now)
	case classPlain:
		s.ctr.PlainBytesReceived.Add(uint64(len(d)))
		if kind, ok := s.budgets.chargeDatagram(addr, now); !ok {
			s.ctr.drop(kind)
			return
		}
		s.handlePlain(d, from, vouched, now)
	case classLegacy:
		s.ctr.PlainBytesReceived.Add(uint64(len(d)))
		if len(d) < 4 || d[1] != 0x52 || d[2] != 0x50 || d[3] != 0x53 {
			s.ctr.drop(dropMalformed)
			return
		}
		if kind, ok := s.budgets.chargeDatagram(addr, now); !ok {
			s.ctr.drop(kind)
			return
		}
		s.handleLegacy(d, from, now)
	default:
		s.ctr.drop(dropMalformed)
	}
}

func (s *Server) timeAt(now time.Time) float32 { return float32(now.Sub(s.origin).Seconds()) }

func (s *Server) writePlain(b []byte, to netip.AddrPort) {
	if err := writeOne(s.tr, s.plainOut, b, to); err == nil {
		s.ctr.PacketsSent.Add(1)
		s.ctr.BytesSent.Add(uint64(len(b)))
		s.ctr.PlainBytesSent.Add(uint64(len(b)))
	}
}

// handleSealed routes a sealed frame to the session of its source endpoint.
func (s *Server) handleSealed(d []byte, from netip.AddrPort, now time.Time) {
	s.mu.RLock()
	p := s.byAddr[from]
	s.mu.RUnlock()
	if p == nil {
		if ho := s.halfOpen.lookup(from); ho != nil {
			s.finishHalfOpen(ho, d, now)
			return
		}
		if hp := s.heldAt(from); hp != nil { // resume_server.go: a held seat's old address
			s.receiveOn(hp, d, from, now)
			return
		}
		if s.closedSessions.late(from, d, now) {
			s.ctr.drop(dropLate) // a Disconnect copy, or a frame sent just before a close
			return
		}
		s.ctr.drop(dropSecurity) // no channel for that endpoint
		return
	}
	s.receiveOn(p, d, from, now)
}

// bannedAddr reports whether from is banned (ServerConfig.IsBanned): a
// session never moves to a banned address, as no hello from one is served.
// Its frames are still taken (they authenticated); if the client really
// moved there, its session ends by timeout, as a new connection from there
// would be refused.
func (s *Server) bannedAddr(from netip.AddrPort) bool {
	return s.cfg.IsBanned != nil && s.cfg.IsBanned(from.Addr())
}

// receiveOn hands a sealed frame from from to its session p (found by its
// source, or by its connection id), dispatches what it delivered, and
// moves the session when the frame completed a path validation.
func (s *Server) receiveOn(p *peer, d []byte, from netip.AddrPort, now time.Time) {
	p.mu.Lock()
	if p.state == slotClosed {
		p.mu.Unlock()
		s.ctr.drop(dropSecurity)
		return
	}
	p.path.mig.rxFrom = from
	ok := p.receiveLocked(s.reg, d, now, s.rxd.collectFn, s.readyFn)
	woke := ok && p.wakeLocked(now) // a held seat heard from its client (resume_server.go)
	move, challenged := false, false
	if ok && from != p.path.addr && p.state == slotConnected && !p.life.closed && !s.bannedAddr(from) {
		spans := len(s.rxFlush.b.spans)
		move = p.fromOtherAddressLocked(from, len(d), now, &s.rxFlush.b)
		challenged = len(s.rxFlush.b.spans) > spans // written at the end of this pass
	}
	closed := p.lingerDoneLocked(now) // the Acks that end a linger end it now
	info := p.info()
	sends := p.out.sends.Load()
	p.mu.Unlock()
	if woke {
		s.wakeSeat(p)
	}
	if move {
		s.move(p, now)
	}

	s.dispatchAt.Store(int64(now.Sub(s.origin)))
	s.dispatching.Store(p)
	s.rxd.dispatchEach(info, answerEvery, func() {
		// A long burst of requests is answered in a pipeline: what the
		// handlers queued so far leaves now, while the rest is handled.
		p.mu.Lock()
		if p.out.sends.Load() != sends && p.state == slotConnected {
			p.flushLocked(time.Now(), &s.rxFlush.b)
		}
		p.mu.Unlock()
		s.rxFlush.write()
	})
	s.dispatching.Store(nil)
	if closed {
		s.remove(p)
		return
	}
	p.mu.Lock()
	switch {
	case p.rxMarked:
	case p.out.urgent || challenged || p.out.sends.Load() != sends:
		p.rxMarked = true
		s.rxTouched = append(s.rxTouched, p) // flushTouched schedules it
	case p.state == slotConnected:
		// Nothing to send: the receive woke the session (an Ack changes
		// its timers), its timers say when the service loop looks.
		s.scheduleLocked(p)
	}
	p.mu.Unlock()
}

// finishLocked processes ClientFinished (§5.4) on a Securing slot and reports
// whether the client was admitted.
func (s *Server) finishLocked(p *peer, h *wire.Header, payload []byte, now time.Time) bool {
	cf, err := wire.ParseClientFinished(payload)
	switch {
	case err == wire.ErrNameInvalid:
		p.closeLocked(wire.DisconnectNameInvalid, "player name must be 1..32 bytes of UTF-8 without control characters", now)
		return false
	case err != nil:
		p.countDrop(dropMalformed)
		return false
	}
	p.state = slotConnected
	p.name = cf.Name
	p.ticket = cf.Ticket                           // a copy: ParseClientFinished clones it
	p.rel.engine.Receive(h, payload, now, discard) // marks Sequence 1 received
	if s.cfg.Welcome != nil {
		t, ch, payload := s.cfg.Welcome(p.id, nil)
		if err := p.sendLocked(t, ch, payload, now); err != nil {
			s.log.Warn("welcome message not sent", "client", p.id, "type", t.String(), "err", err)
		}
	}
	s.announceLocked(p, now) // then the module types' table (v4)
	// The Ack of ClientFinished and the welcome leave at the end of this
	// receive pass.
	p.out.urgent, p.rxMarked = true, true
	s.rxTouched = append(s.rxTouched, p)
	return true
}

// dispatcher collects the messages delivered under a peer's lock and runs
// their handlers after it is released, so that handlers may call Send. The
// receive goroutine and the service goroutine (held messages released) each
// own one.
type dispatcher struct {
	s         *Server
	scratch   []byte
	pending   []pendingDelivery
	collectFn deliverFunc // d.collect, bound once: a method value allocates per use
}

func newDispatcher(s *Server) *dispatcher {
	d := &dispatcher{s: s}
	d.collectFn = d.collect
	return d
}

// collect copies a delivered message into the scratch (under the peer's lock).
func (d *dispatcher) collect(h *wire.Header, payload []byte) {
	start := len(d.scratch)
	d.scratch = append(d.scratch, payload...)
	d.pending = append(d.pending, pendingDelivery{h: *h, start: start, end: len(d.scratch)})
}

// answerEvery is how many messages of one receive pass a peer's handlers
// are given before what they have queued is flushed, so that the answers to
// a long burst of requests leave in a pipeline instead of all after the last
// request (docs/protocol.md §5.5). A handler that queues nothing (the host's
// hand messages to the game thread) costs no flush.
const answerEvery = 16

// dispatch runs the handlers of the collected messages (no lock held).
func (d *dispatcher) dispatch(from ClientInfo) { d.dispatchEach(from, 0, nil) }

// dispatchEach runs the handlers of the collected messages (no lock held),
// calling between after every n of them (not after the last) when n > 0.
func (d *dispatcher) dispatchEach(from ClientInfo, n int, between func()) {
	var (
		hf   Handler
		typ  wire.MessageType
		gen  uint64
		have bool
	)
	for i := range d.pending {
		if n > 0 && i > 0 && i%n == 0 {
			between()
		}
		pd := &d.pending[i]
		// One lookup for a run of one type, unless a handler changed since
		// (a handler may call Handle).
		if g := d.s.handlersGen.Load(); !have || pd.h.Type != typ || g != gen {
			d.s.handlersMu.RLock()
			hf, typ, gen, have = d.s.handlers[pd.h.Type], pd.h.Type, d.s.handlersGen.Load(), true
			d.s.handlersMu.RUnlock()
		}
		if hf != nil {
			hf(from.ID, &pd.h, d.scratch[pd.start:pd.end])
		}
	}
	d.pending = d.pending[:0]
	d.scratch = d.scratch[:0]
}

func (s *Server) hasHandler(t wire.MessageType) bool {
	s.handlersMu.RLock()
	defer s.handlersMu.RUnlock()
	return s.handlers[t] != nil
}
