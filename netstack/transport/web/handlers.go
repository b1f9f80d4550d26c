package web

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// counters are a Server's counts (Stats).
type counters struct {
	SessionsOpened, SessionsRefused, OriginRefused atomic.Uint64
	ConnectionsRefused, IdleClosed                 atomic.Uint64
}

// Stats are a Server's counts.
type Stats struct {
	// Sessions is the number of live web sessions; SessionsOpened those
	// opened since start.
	Sessions       int
	SessionsOpened uint64
	// SessionsRefused: upgrades refused at the session cap;
	// OriginRefused: upgrades refused for their Origin;
	// ConnectionsRefused: TCP connections and QUIC handshakes refused at
	// a per-address or total connection cap; IdleClosed: sessions ended
	// for receiving nothing for the idle timeout.
	SessionsRefused, OriginRefused, ConnectionsRefused, IdleClosed uint64
	// Dropped: datagrams dropped at a full queue; Overflowed: datagrams
	// sent on a WebTransport overflow stream.
	Dropped, Overflowed uint64
}

// Stats returns the server's counts.
func (s *Server) Stats() Stats {
	return Stats{Sessions: s.hub.Sessions(), SessionsOpened: s.stats.SessionsOpened.Load(),
		SessionsRefused: s.stats.SessionsRefused.Load(), OriginRefused: s.stats.OriginRefused.Load(),
		ConnectionsRefused: s.stats.ConnectionsRefused.Load(), IdleClosed: s.stats.IdleClosed.Load(),
		Dropped: s.hub.Dropped.Load(), Overflowed: s.hub.Overflowed.Load()}
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET "+PathInfo, s.serveInfo)
	if s.cfg.WebSocket {
		s.mux.HandleFunc("GET "+PathWebSocket, s.upgradeWS)
	}
}

// originAllowed: no Origin (not a browser), the server's own page (the
// Origin's host:port is the request's Host), or a configured origin.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, a := range s.cfg.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), u.Scheme+"://"+u.Host) {
			return true
		}
	}
	return false
}

// admit checks the origin and the session cap for an upgrade; false: it
// answered the request with the refusal.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Connection", "close") // a refused connection does not stay to hold a place
	if !s.originAllowed(r) {
		s.stats.OriginRefused.Add(1)
		http.Error(w, "origin not allowed (web.allowed_origins)", http.StatusForbidden)
		return false
	}
	if s.hub.Sessions() >= s.cfg.MaxSessions {
		s.stats.SessionsRefused.Add(1)
		http.Error(w, "server full: too many web sessions", http.StatusServiceUnavailable)
		return false
	}
	w.Header().Del("Connection")
	return true
}

func (s *Server) upgradeWS(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered
	}
	if c.Subprotocol() != Subprotocol {
		_ = c.Close(websocket.StatusPolicyViolation, "offer the subprotocol "+Subprotocol)
		return
	}
	c.SetReadLimit(maxFrame)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	p, err := s.hub.add(addrOf(remoteAddr(r)), "websocket", maxFrame, &wsLink{c: c, cancel: cancel}, s.cfg.Taken)
	if err != nil {
		_ = c.Close(websocket.StatusTryAgainLater, "server closing")
		return
	}
	s.stats.SessionsOpened.Add(1)
	serveWS(ctx, s.hub, p, c)
}

// remoteAddr is the request's peer as a net.Addr.
func remoteAddr(r *http.Request) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
	if err != nil {
		return &net.TCPAddr{}
	}
	return a
}

// serveQUIC serves HTTP/3 with WebTransport at PathWebTransport on the UDP
// listener. QUIC connections are gated per address like TCP ones (a QUIC
// Retry proves the address once half the cap is in use).
func (s *Server) serveQUIC() {
	h3mux := http.NewServeMux()
	h3 := &http3.Server{Handler: h3mux, TLSConfig: http3.ConfigureTLSConfig(s.tlsConfig())}
	s.wt = &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	webtransport.ConfigureHTTP3Server(h3)
	h3mux.HandleFunc(PathWebTransport, s.upgradeWT)
	h3mux.HandleFunc("GET "+PathInfo, s.serveInfo)
	s.qtr = &quic.Transport{Conn: s.udp, ConnContext: s.quicGate,
		VerifySourceAddress: func(net.Addr) bool { return s.udpGate.busy() }}
	qc := &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true,
		HandshakeIdleTimeout: defaultHeaderTimout, MaxIdleTimeout: s.cfg.IdleTimeout,
		MaxIncomingStreams: maxIncomingBidi, MaxIncomingUniStreams: 8, InitialPacketSize: uint16(s.cfg.PacketSize)}
	ln, err := s.qtr.ListenEarly(h3.TLSConfig, qc)
	if err != nil {
		s.log.Error("WebTransport listener failed", "err", err)
		return
	}
	s.wg.Go(func() {
		defer ln.Close()
		for {
			conn, err := ln.Accept(s.ctx)
			if err != nil {
				return
			}
			go func() { _ = s.wt.ServeQUICConn(conn) }()
		}
	})
}

// quicGate takes a place for a QUIC connection, given back when it ends.
func (s *Server) quicGate(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	a := addrOf(ci.RemoteAddr).Addr()
	if !s.udpGate.enter(a) {
		s.stats.ConnectionsRefused.Add(1)
		return ctx, errors.New("too many connections")
	}
	context.AfterFunc(ctx, func() { s.udpGate.leave(a) })
	return ctx, nil
}

func (s *Server) upgradeWT(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	sess, err := s.wt.Upgrade(w, r)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	max, err := datagramMax(sess)
	if err != nil {
		_ = sess.CloseWithError(1, "no datagrams")
		return
	}
	p, err := s.hub.add(addrOf(sess.RemoteAddr()), "webtransport", max, &wtLink{sess: sess, max: max, counted: &s.hub.Overflowed}, s.cfg.Taken)
	if err != nil {
		_ = sess.CloseWithError(1, "server closing")
		return
	}
	s.stats.SessionsOpened.Add(1)
	go serveWT(s.hub, p, sess)
}

// Info is what PathInfo tells a page: how to reach the server.
type Info struct {
	// Pin is the server's identity pin (docs/protocol.md §8), as trusted
	// as the channel it was fetched over; Name the server's name.
	Pin  string `json:"pin"`
	Name string `json:"name,omitempty"`
	// Port is the web port (TCP and UDP); the endpoints are relative to a
	// host the page knows.
	Port         int     `json:"port"`
	WebTransport *InfoWT `json:"webtransport,omitempty"`
	WebSocket    *InfoWS `json:"websocket,omitempty"`
	Subprotocol  string  `json:"subprotocol"`
}

// InfoWT is the WebTransport endpoint: its path, and the certificate hashes
// for serverCertificateHashes (none with an operator's certificate).
type InfoWT struct {
	Path       string         `json:"path"`
	CertHashes []InfoCertHash `json:"cert_hashes"`
}

// InfoCertHash is one hash, as the browser API takes it (base64 of the
// SHA-256 of the DER certificate; hex too, for people).
type InfoCertHash struct {
	Algorithm string    `json:"algorithm"` // "sha-256"
	Value     string    `json:"value"`     // standard base64
	Hex       string    `json:"hex"`
	NotAfter  time.Time `json:"not_after"`
}

// InfoWS is the WebSocket endpoint: its path and whether it is wss.
type InfoWS struct {
	Path string `json:"path"`
	TLS  bool   `json:"tls"`
}

// Describe is the Info of this server.
func (s *Server) Describe() Info {
	var in Info
	if s.cfg.Info != nil {
		in = s.cfg.Info()
	}
	in.Port, in.Subprotocol = s.port, Subprotocol
	if s.cfg.WebTransport {
		in.WebTransport = &InfoWT{Path: PathWebTransport, CertHashes: []InfoCertHash{}}
		for _, h := range s.CertHashes() {
			in.WebTransport.CertHashes = append(in.WebTransport.CertHashes, InfoCertHash{Algorithm: "sha-256",
				Value: base64.StdEncoding.EncodeToString(h.SHA256[:]), Hex: hex.EncodeToString(h.SHA256[:]), NotAfter: h.NotAfter.UTC()})
		}
	}
	if s.cfg.WebSocket {
		in.WebSocket = &InfoWS{Path: PathWebSocket, TLS: s.TLS()}
	}
	return in
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && s.originAllowed(r) {
		w.Header().Set("Access-Control-Allow-Origin", o)
		w.Header().Set("Vary", "Origin")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s.Describe())
}
