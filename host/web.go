package host

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sparkhost/sparkhost/host/webpage"

	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/ops"
)

// webState is the web transports of a server with [web] on: the hub the
// netstack server serves beside its UDP socket, and the listeners.
type webState struct {
	hub *web.Hub
	srv *web.Server
}

// newWebHub is the hub of the web sessions, or nil when [web] is off (a
// nil interface: netstack serves UDP alone).
func (s *Server) newWebHub() transport.Sessions {
	if !s.cfg.Web.Enabled {
		return nil
	}
	s.web.hub = web.NewHub(netip.AddrPort{}, true)
	return s.web.hub
}

// openWeb opens the web listeners (nothing served until serveWeb).
func (s *Server) openWeb() error {
	if s.web.hub == nil {
		return nil
	}
	w := &s.cfg.Web
	// The game socket's address: what the endpoint policy made of
	// network.bind_address (a LAN bind's prefix dropped; :: in internet
	// mode, every address).
	bind := s.net.Addr().Addr()
	srv, err := web.New(web.Config{
		Hub: s.web.hub, Bind: bind, Port: w.Port, WebTransport: w.WebTransport, WebSocket: w.WebSocket,
		CertFile: w.CertFile, KeyFile: w.KeyFile, AllowedOrigins: w.AllowedOrigins,
		MaxSessions: w.MaxSessions, PerAddress: w.ConnectionsPerAddress, IdleTimeout: s.cfg.WebIdleTimeout(),
		Taken:  s.net.PeerAt,
		Info:   func() web.Info { return web.Info{Pin: s.Pin(), Name: s.cfg.Server.Name} },
		Logger: s.log,
		OnRotate: func(hs []web.CertHash) {
			s.log.Info("WebTransport certificate rotated; pages fetch the new hashes from /web.json", "cert_hashes", strings.Join(hashStrings(hs), " "))
		},
	})
	if err != nil {
		s.web.hub.Close()
		return fmt.Errorf("web transports: %w", err)
	}
	// The game page (host/webpage) on the same origin as /ws and /web.json.
	srv.Handle("GET /", webpage.Handler())
	s.web.srv = srv
	return nil
}

// serveWeb starts serving the web listeners.
func (s *Server) serveWeb() {
	if s.web.srv != nil {
		s.web.srv.Serve()
		s.log.Info("web transports serving", "port", s.web.srv.Port(), "webtransport", s.cfg.Web.WebTransport,
			"websocket", s.cfg.Web.WebSocket, "cert_hashes", strings.Join(hashStrings(s.web.srv.CertHashes()), " "))
	}
}

// closeWeb ends the web sessions and closes the listeners (after the
// transport's close linger delivered the sessions' Disconnects).
func (s *Server) closeWeb() {
	if s.web.srv != nil {
		s.web.srv.Close()
	}
	if s.web.hub != nil {
		s.web.hub.Close()
	}
}

// WebPort is the web transports' port number; 0 when [web] is off.
func (s *Server) WebPort() int {
	if s.web.srv == nil {
		return 0
	}
	return s.web.srv.Port()
}

// WebInfo is what /web.json tells; ok is false when [web] is off.
func (s *Server) WebInfo() (web.Info, bool) {
	if s.web.srv == nil {
		return web.Info{}, false
	}
	return s.web.srv.Describe(), true
}

// WebLine is the console's line about the web transports ("" when off):
// where browsers connect, and the certificate hashes to pin by.
func (s *Server) WebLine() string {
	if s.web.srv == nil {
		return ""
	}
	host := "HOST" // the address players reach the server at
	if a := s.net.Addr().Addr(); a.IsValid() && !a.IsUnspecified() {
		host = a.String()
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(s.web.srv.Port()))
	var parts []string
	if s.cfg.Web.WebTransport {
		parts = append(parts, fmt.Sprintf("WebTransport https://%s%s", hostPort, web.PathWebTransport))
	}
	if s.cfg.Web.WebSocket {
		scheme := "ws"
		if s.web.srv.TLS() {
			scheme = "wss"
		}
		parts = append(parts, fmt.Sprintf("WebSocket %s://%s%s", scheme, hostPort, web.PathWebSocket))
	}
	line := fmt.Sprintf("web transports on port %d: %s; connect facts at %s", s.web.srv.Port(), strings.Join(parts, ", "), web.PathInfo)
	if hs := s.web.srv.CertHashes(); len(hs) > 0 {
		line += "; self-signed certificate sha-256 " + strings.Join(hashStrings(hs), " ") + " (rotated every 6 days: pages read the current ones from " + web.PathInfo + ")"
	}
	return line
}

// webSnapshot is the web transports for the ops layer; nil when off.
func (s *Server) webSnapshot() *ops.Web {
	if s.web.srv == nil {
		return nil
	}
	st := s.web.srv.Stats()
	return &ops.Web{Port: s.web.srv.Port(), WebTransport: s.cfg.Web.WebTransport, WebSocket: s.cfg.Web.WebSocket,
		TLS: s.web.srv.TLS(), CertHashes: hashStrings(s.web.srv.CertHashes()), Sessions: st.Sessions, Opened: st.SessionsOpened,
		RefusedSessionCap: st.SessionsRefused, RefusedOrigin: st.OriginRefused, RefusedConnections: st.ConnectionsRefused,
		IdleClosed: st.IdleClosed}
}

// webCertAnnotation is the Agones annotation of the certificate hashes
// ("" when there are none).
func (s *Server) webCertAnnotation() string {
	if s.web.srv == nil {
		return ""
	}
	return strings.Join(hashStrings(s.web.srv.CertHashes()), ",")
}

// hashStrings are certificate hashes in standard base64 (what a page's
// serverCertificateHashes takes, decoded to bytes).
func hashStrings(hs []web.CertHash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h.SHA256[:])
	}
	return out
}
