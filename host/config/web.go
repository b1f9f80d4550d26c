package config

import (
	"net/url"
	"strings"
	"time"
)

// WebSection is [web]: the game for browsers, over WebTransport (HTTP/3
// on UDP) and WebSocket (TCP) on one port (docs/protocol.md, "Transports").
// The listeners bind network.bind_address.
type WebSection struct {
	// Enabled serves the web transports; false (the default) serves UDP
	// only.
	Enabled bool `toml:"enabled"`
	// Port is the TCP and UDP port number of the web transports; 0 means
	// any free port; not server.port or lan.port. 0..65535.
	Port int `toml:"port"`
	// WebTransport serves WebTransport at /wt; WebSocket serves WebSocket
	// at /ws. At least one, when Enabled.
	WebTransport bool `toml:"webtransport"`
	WebSocket    bool `toml:"websocket"`
	// CertFile and KeyFile are an operator's certificate and key (PEM),
	// for both listeners (HTTPS and wss on TCP). Empty: WebTransport serves
	// a self-signed ECDSA certificate valid 13 days, rotated every 6,
	// published by SHA-256 (console, /status, /web.json, the Agones
	// annotation web-cert-hashes) for browsers' serverCertificateHashes;
	// TCP serves plain HTTP (ws://).
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	// AllowedOrigins are page origins ("https://game.example") allowed to
	// open sessions besides the server's own page; "*" allows any. A
	// request without an Origin header (not a browser) is allowed.
	AllowedOrigins []string `toml:"allowed_origins"`
	// MaxSessions caps concurrent web sessions; 1..65536.
	MaxSessions int `toml:"max_sessions"`
	// ConnectionsPerAddress caps concurrent TCP connections, and QUIC
	// connections, from one IP address; 1..1024.
	ConnectionsPerAddress int `toml:"connections_per_address"`
	// IdleTimeout ends a web session that received no datagram for this
	// many seconds (its QUIC connection, or idle HTTP connections, too);
	// 1..600.
	IdleTimeout float64 `toml:"idle_timeout"`
}

func defaultWeb() WebSection {
	return WebSection{Enabled: false, Port: 27016, WebTransport: true, WebSocket: true, AllowedOrigins: []string{},
		MaxSessions: 256, ConnectionsPerAddress: 8, IdleTimeout: 30}
}

// WebIdleTimeout is web.idle_timeout as a time.Duration.
func (c *Config) WebIdleTimeout() time.Duration { return seconds(c.Web.IdleTimeout) }

func (c *Config) checkWeb() *Error {
	w := &c.Web
	if e := c.intIn("web.port", w.Port, 0, 65535, ""); e != nil {
		return e
	}
	if w.Enabled && w.Port != 0 && w.Port == c.Server.Port {
		return c.refuseVs("web.port", w.Port, "server.port", "is the game's UDP port; WebTransport needs its own")
	}
	if w.Enabled && w.Port != 0 && w.Port == c.LAN.Port && c.LAN.Enabled {
		return c.refuseVs("web.port", w.Port, "lan.port", "is the LAN discovery port; WebTransport needs its own")
	}
	if w.Enabled && !w.WebTransport && !w.WebSocket {
		return c.refuse("web.webtransport", w.WebTransport, "and web.websocket are both off: enable one, or set web.enabled = false")
	}
	if (w.CertFile == "") != (w.KeyFile == "") {
		return c.refuse("web.cert_file", w.CertFile, "and web.key_file go together: set both, or neither (a self-signed certificate)")
	}
	for _, o := range w.AllowedOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return c.refuse("web.allowed_origins", o, `must be an origin such as "https://game.example" (scheme://host[:port]) or "*"`)
		}
	}
	if e := c.intIn("web.max_sessions", w.MaxSessions, 1, 65536, ""); e != nil {
		return e
	}
	if e := c.intIn("web.connections_per_address", w.ConnectionsPerAddress, 1, 1024, ""); e != nil {
		return e
	}
	return c.floatIn("web.idle_timeout", w.IdleTimeout, 1, 600, " seconds")
}
