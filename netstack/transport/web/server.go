package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// The endpoint layout (docs/protocol.md, "Transports"): on the web port,
// TCP serves HTTP (HTTPS with an operator's certificate) and UDP serves
// HTTP/3.
const (
	// PathWebTransport is the WebTransport endpoint (HTTP/3, UDP).
	PathWebTransport = "/wt"
	// PathWebSocket is the WebSocket endpoint (HTTP/1.1, TCP).
	PathWebSocket = "/ws"
	// PathInfo is the connect facts as JSON (TCP, and HTTP/3): Info.
	PathInfo = "/web.json"
)

// Defaults of Config.
const (
	DefaultMaxSessions  = 256
	DefaultPerAddress   = 8
	DefaultIdleTimeout  = 30 * time.Second
	defaultHeaderTimout = 5 * time.Second
)

// Config configures a Server.
type Config struct {
	// Hub receives the sessions (NewHub with validated set).
	Hub *Hub
	// Bind is the address listened on (invalid: every address); Port the
	// TCP and UDP port number (0: any free port, the same number for both).
	Bind netip.Addr
	Port int
	// WebTransport and WebSocket enable the two endpoints.
	WebTransport, WebSocket bool
	// CertFile and KeyFile are an operator's certificate (PEM) for both
	// listeners; empty: WebTransport serves a rotating self-signed
	// certificate published by hash, and TCP serves plain HTTP.
	CertFile, KeyFile string
	// AllowedOrigins are the page origins ("https://game.example",
	// scheme://host[:port]; "*" any) allowed besides the server's own
	// (an Origin whose host:port is the request's Host). A request
	// without Origin (not from a browser) is allowed.
	AllowedOrigins []string
	// MaxSessions caps concurrent web sessions (0: DefaultMaxSessions);
	// PerAddress caps concurrent connections from one IP address on each
	// listener (0: DefaultPerAddress); IdleTimeout ends a session that
	// received no datagram for that long (0: DefaultIdleTimeout).
	MaxSessions, PerAddress int
	IdleTimeout             time.Duration
	// Taken, when set, rules out peer keys another transport of the same
	// server uses (its UDP peers).
	Taken func(netip.AddrPort) bool
	// Info returns what /web.json tells besides the endpoints (the pin).
	Info func() Info
	// Logger (nil: slog.Default()); Now is the clock of the self-signed
	// certificates (nil: time.Now).
	Logger *slog.Logger
	Now    func() time.Time
	// PacketSize is the QUIC packets' size before path MTU discovery
	// (0: quic-go's 1,280; at least 1,200), which sets the WebTransport
	// datagram size a session starts with.
	PacketSize int
	// OnRotate is called after the self-signed certificate rotated, with
	// the hashes now published.
	OnRotate func([]CertHash)
}

// Server serves web sessions into a Hub.
type Server struct {
	cfg   Config
	log   *slog.Logger
	hub   *Hub
	certs *selfSigned      // nil with an operator's certificate
	opCrt *tls.Certificate // the operator's certificate
	mux   *http.ServeMux

	tcp     net.Listener
	httpSrv *http.Server
	udp     *net.UDPConn
	qtr     *quic.Transport
	wt      *webtransport.Server
	port    int
	tcpGate gate
	udpGate gate

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Counters.
	stats counters
}

// New opens the listeners; nothing is served until Serve.
func New(cfg Config) (*Server, error) {
	if cfg.Hub == nil || (!cfg.WebTransport && !cfg.WebSocket) {
		return nil, errors.New("web: a Hub and at least one of WebTransport and WebSocket are needed")
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.PerAddress <= 0 {
		cfg.PerAddress = DefaultPerAddress
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, hub: cfg.Hub, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	// Connections besides the sessions': pages, /web.json, refused
	// upgrades on their way out.
	total := 2*cfg.MaxSessions + cfg.PerAddress
	s.tcpGate.init(cfg.PerAddress, total)
	s.udpGate.init(cfg.PerAddress, total)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.loadCerts(); err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		s.closeListeners()
		return nil, err
	}
	s.routes()
	return s, nil
}

func (s *Server) loadCerts() error {
	if s.cfg.CertFile != "" || s.cfg.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
		if err != nil {
			return fmt.Errorf("web: the certificate (web.cert_file, web.key_file): %w", err)
		}
		s.opCrt = &c
		return nil
	}
	var err error
	s.certs, err = newSelfSigned(s.cfg.Now, s.cfg.OnRotate)
	return err
}

// listen opens TCP and UDP on one port number: with port 0, the number TCP
// was given is asked of UDP, a few times.
func (s *Server) listen() error {
	host := ""
	if s.cfg.Bind.IsValid() {
		host = s.cfg.Bind.String()
	}
	var err error
	for try := 0; try < 8; try++ {
		s.closeListeners()
		if s.tcp, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(s.cfg.Port))); err != nil {
			return fmt.Errorf("web: listen on TCP port %d: %w", s.cfg.Port, err)
		}
		s.port = s.tcp.Addr().(*net.TCPAddr).Port
		if !s.cfg.WebTransport {
			return nil
		}
		s.udp, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(bindOrAny(s.cfg.Bind), uint16(s.port))))
		if err == nil || s.cfg.Port != 0 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("web: listen on UDP port %d for WebTransport: %w", s.port, err)
	}
	return nil
}

func bindOrAny(a netip.Addr) netip.Addr {
	if a.IsValid() {
		return a
	}
	return netip.IPv6Unspecified()
}

func (s *Server) closeListeners() {
	if s.tcp != nil {
		s.tcp.Close()
		s.tcp = nil
	}
	if s.udp != nil {
		s.udp.Close()
		s.udp = nil
	}
}

// Port is the port number both listeners are on.
func (s *Server) Port() int { return s.port }

// Handle adds a handler to the TCP listener's routes (a game page);
// call it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// CertHashes are the SHA-256 hashes of the self-signed certificates
// published for serverCertificateHashes (the served one first); none with
// an operator's certificate.
func (s *Server) CertHashes() []CertHash {
	if s.certs == nil {
		return nil
	}
	return s.certs.hashes()
}

// TLS reports whether the TCP listener serves HTTPS (wss://).
func (s *Server) TLS() bool { return s.opCrt != nil }

func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if s.opCrt != nil {
			return s.opCrt, nil
		}
		return s.certs.get(), nil
	}}
}

// Serve serves until Close; it returns at once.
func (s *Server) Serve() {
	s.httpSrv = &http.Server{Handler: s.mux, ReadHeaderTimeout: defaultHeaderTimout, IdleTimeout: s.cfg.IdleTimeout,
		MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	ln := &gatedListener{Listener: s.tcp, gate: &s.tcpGate, refused: &s.stats.ConnectionsRefused}
	var tcp net.Listener = ln
	if s.opCrt != nil {
		tcp = tls.NewListener(ln, s.tlsConfig())
	}
	s.wg.Go(func() { _ = s.httpSrv.Serve(tcp) })
	if s.cfg.WebTransport {
		s.serveQUIC()
	}
	s.wg.Go(s.janitor)
}

// janitor ends idle sessions.
func (s *Server) janitor() {
	t := time.NewTicker(min(s.cfg.IdleTimeout/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.stats.IdleClosed.Add(uint64(s.hub.closeIdle(now.Add(-s.cfg.IdleTimeout))))
		}
	}
}

// Close stops the listeners and ends every session.
func (s *Server) Close() error {
	s.cancel()
	var errs []error
	if s.httpSrv != nil {
		errs = append(errs, s.httpSrv.Close())
	} else if s.tcp != nil {
		errs = append(errs, s.tcp.Close())
	}
	if s.wt != nil {
		errs = append(errs, s.wt.Close())
	}
	if s.qtr != nil {
		errs = append(errs, s.qtr.Close())
	}
	if s.udp != nil {
		errs = append(errs, s.udp.Close())
	}
	s.wg.Wait()
	return errors.Join(errs...)
}
