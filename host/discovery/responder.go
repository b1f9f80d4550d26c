package discovery

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/policy"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
)

// ErrConfig is wrapped by Listen's errors for a ResponderConfig it refuses.
var ErrConfig = errors.New("discovery: invalid responder config")

// ResponderConfig configures Listen. The zero value of each field means the
// documented default, except Info, which is required.
type ResponderConfig struct {
	// Bind is endpoint-policy text, as for the game server (§7): the responder
	// binds to its host and answers only the sources it admits. "" means
	// 127.0.0.1.
	Bind string
	// Port is the UDP discovery port; 0 means an ephemeral port (tests). The
	// host passes DefaultPort unless configured otherwise.
	Port int
	// Info is called once per answered query, on a receive goroutine. It must
	// be cheap and safe to call from that goroutine: give it a snapshot, not a
	// walk over live state. A panic in it is counted and the query dropped.
	Info func() Info
	// Logger receives start-up and first-failure messages, never one line per
	// datagram. nil means slog.Default().
	Logger *slog.Logger
	// Budget is the per-source-IPv4 answer budget; zero fields mean the
	// ratelimit defaults (burst 16, refill 4/s).
	Budget ratelimit.Config
}

// Stats counts what the responder did with the datagrams it read.
type Stats struct {
	Answered      uint64 // answers sent
	PolicyDropped uint64 // source refused by the endpoint policy (or port 0)
	Malformed     uint64 // not exactly a version-1 query
	RateLimited   uint64 // well-formed, but the source's budget was spent
	InfoFailed    uint64 // Info panicked or gave a game port of 0
	SendFailed    uint64 // the answer could not be written
}

type counters struct {
	answered, policyDropped, malformed, rateLimited, infoFailed, sendFailed atomic.Uint64
}

// Responder answers discovery queries. Its sockets are read by one goroutine
// each; Close stops them.
type Responder struct {
	info    func() Info
	log     *slog.Logger
	policy  policy.Policy
	limiter *ratelimit.Limiter
	ctr     counters
	warned  atomic.Bool // the first Info failure is logged, later ones only counted

	conn      *net.UDPConn // bound to the policy's host; every answer leaves from it
	broadcast *net.UDPConn // LAN policy only: receives limited broadcasts; may be nil

	closeOnce sync.Once
	closed    atomic.Bool
	wg        sync.WaitGroup
}

// Listen validates cfg, opens the discovery socket and starts answering. With
// a LAN policy it also listens on 255.255.255.255 at the same port, because a
// socket bound to a unicast address does not receive broadcasts; if that fails
// the responder still answers unicast queries and logs a warning.
func Listen(cfg ResponderConfig) (*Responder, error) {
	r, err := newResponder(cfg)
	if err != nil {
		return nil, err
	}
	bind := netip.AddrPortFrom(r.policy.BindAddr(), uint16(cfg.Port))
	r.conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(bind))
	if err != nil {
		return nil, fmt.Errorf("discovery: listen on %s: %w", bind, err)
	}
	port := r.Addr().Port()
	if !r.policy.BindAddr().IsLoopback() {
		bcast := netip.AddrPortFrom(netip.AddrFrom4([4]byte{255, 255, 255, 255}), port)
		if r.broadcast, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(bcast)); err != nil {
			r.log.Warn("LAN discovery will not see broadcast queries; clients can still query this host directly",
				"addr", bcast.String(), "err", err)
		}
	}
	r.log.Info("LAN discovery listening", "addr", r.Addr().String(), "peers", r.policy.Peers().String(),
		"broadcast", r.broadcast != nil)
	r.wg.Add(1)
	go r.receiveLoop(r.conn)
	if r.broadcast != nil {
		r.wg.Add(1)
		go r.receiveLoop(r.broadcast)
	}
	return r, nil
}

// newResponder checks cfg and builds everything but the sockets.
func newResponder(cfg ResponderConfig) (*Responder, error) {
	pol, err := policy.Parse(cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	switch {
	case cfg.Port < 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("%w: port %d outside 0..65535", ErrConfig, cfg.Port)
	case cfg.Info == nil:
		return nil, fmt.Errorf("%w: Info func is nil", ErrConfig)
	}
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("discovery: answer budget: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Responder{
		info:    cfg.Info,
		log:     cfg.Logger,
		policy:  pol,
		limiter: ratelimit.New(cfg.Budget),
	}, nil
}

// Addr returns the address the responder answers from.
func (r *Responder) Addr() netip.AddrPort {
	return r.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Stats returns a snapshot of the counters.
func (r *Responder) Stats() Stats {
	return Stats{
		Answered:      r.ctr.answered.Load(),
		PolicyDropped: r.ctr.policyDropped.Load(),
		Malformed:     r.ctr.malformed.Load(),
		RateLimited:   r.ctr.rateLimited.Load(),
		InfoFailed:    r.ctr.infoFailed.Load(),
		SendFailed:    r.ctr.sendFailed.Load(),
	}
}

// Close stops answering and waits for the receive goroutines. It is safe to
// call more than once.
func (r *Responder) Close() error {
	var err error
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		err = r.conn.Close()
		if r.broadcast != nil {
			err = errors.Join(err, r.broadcast.Close())
		}
		r.wg.Wait()
	})
	return err
}

func (r *Responder) receiveLoop(c *net.UDPConn) {
	defer r.wg.Done()
	// One byte more than a query, so that a longer datagram shows as too long
	// instead of being silently cut to a valid size.
	buf := make([]byte, QuerySize+1)
	out := make([]byte, 0, MaxAnswerSize)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if r.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // transient, e.g. an ICMP error surfaced by the kernel
		}
		ans := r.answer(out[:0], buf[:n], from, time.Now())
		if ans == nil {
			continue
		}
		// Counted before the write, so that whoever reads the answer also
		// sees it counted; a failed write takes the count back.
		r.ctr.answered.Add(1)
		if _, err := r.conn.WriteToUDPAddrPort(ans, from); err != nil {
			r.ctr.answered.Add(^uint64(0))
			r.ctr.sendFailed.Add(1)
		}
	}
}

// answer applies §12's checks in order — endpoint policy, query format,
// answer budget — and appends the answer to dst, or returns nil to drop the
// datagram. The budget is charged only for well-formed queries: it bounds
// answers, and a malformed datagram never gets one. It does not allocate.
func (r *Responder) answer(dst, datagram []byte, from netip.AddrPort, now time.Time) []byte {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if from.Port() == 0 || !r.policy.Allows(from.Addr()) {
		r.ctr.policyDropped.Add(1)
		return nil
	}
	nonce, err := ParseQuery(datagram)
	if err != nil {
		r.ctr.malformed.Add(1)
		return nil
	}
	if !r.limiter.Allow(from.Addr().As4(), now) {
		r.ctr.rateLimited.Add(1)
		return nil
	}
	info, ok := r.snapshot()
	if !ok {
		return nil
	}
	ans, err := AppendAnswer(dst, nonce, info)
	if err != nil {
		r.infoFailed("server info cannot be announced", err)
		return nil
	}
	return ans
}

// snapshot calls the host's Info func; a panic there is a counted failure,
// never a crash of the host.
func (r *Responder) snapshot() (info Info, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			r.infoFailed("server info func panicked", p)
			ok = false
		}
	}()
	return r.info(), true
}

func (r *Responder) infoFailed(msg string, cause any) {
	r.ctr.infoFailed.Add(1)
	if r.warned.CompareAndSwap(false, true) {
		r.log.Warn(msg+"; discovery queries go unanswered (logged once)", "cause", fmt.Sprint(cause))
	}
}
