package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
)

// The transports the protocol's black-box tests run over, alike.
const (
	overUDP          = "udp"
	overWebTransport = "webtransport"
	overWebSocket    = "websocket"
)

var allTransports = []string{overUDP, overWebTransport, overWebSocket}

// webConfig is the [web] section the black-box tests' servers run with:
// the web transports on a free port, beside UDP.
const webConfig = "\n[web]\nenabled = true\nport = 0\n"

// mutableTransport is a client's transport that can fall silent: while
// muted it sends nothing (the server hears no more from the client), as a
// player whose machine hung.
type mutableTransport struct {
	transport.Transport
	muted atomic.Bool
}

func (m *mutableTransport) WriteBatch(msgs []transport.Message) (int, error) {
	if m.muted.Load() {
		return len(msgs), nil
	}
	return m.Transport.WriteBatch(msgs)
}

// webInfo fetches the server's connect facts (/web.json), as a page does.
func webInfo(t *testing.T, rs *runningServer) web.Info {
	t.Helper()
	rsp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", rs.webPort, web.PathInfo))
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	var in web.Info
	if err := json.NewDecoder(rsp.Body).Decode(&in); err != nil {
		t.Fatal(err)
	}
	if in.Pin != rs.pin {
		t.Fatalf("%s tells the pin %q; the server printed %q", web.PathInfo, in.Pin, rs.pin)
	}
	return in
}

// openTransport opens a client transport of kind to rs and returns it with
// the address the client dials: a UDP socket of its own, or a web session
// found through /web.json and, for WebTransport, trusted by the published
// certificate hash (as a browser's serverCertificateHashes).
func openTransport(t *testing.T, rs *runningServer, kind string) (transport.Transport, netip.AddrPort) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch kind {
	case overWebTransport:
		in := webInfo(t, rs)
		if in.WebTransport == nil || len(in.WebTransport.CertHashes) == 0 {
			t.Fatalf("%s names no WebTransport endpoint or certificate hash: %+v", web.PathInfo, in)
		}
		var hashes [][32]byte
		for _, h := range in.WebTransport.CertHashes {
			b, err := base64.StdEncoding.DecodeString(h.Value)
			if err != nil || len(b) != 32 || h.Algorithm != "sha-256" {
				t.Fatalf("certificate hash %+v", h)
			}
			hashes = append(hashes, [32]byte(b))
		}
		c, err := web.DialWebTransport(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", in.Port, in.WebTransport.Path), web.ClientOptions{CertHashes: hashes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.Peer()
	case overWebSocket:
		in := webInfo(t, rs)
		c, err := web.DialWebSocket(ctx, fmt.Sprintf("ws://127.0.0.1:%d%s", in.Port, in.WebSocket.Path), web.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.Peer()
	}
	u, err := transport.ListenUDP("udp4", netip.MustParseAddrPort("127.0.0.1:0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u, rs.addr
}

// dialOver admits a client over the transport kind.
func dialOver(t *testing.T, rs *runningServer, kind, name string) *netstack.Client {
	t.Helper()
	tr, addr := openTransport(t, rs, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: addr, Name: name, Pin: rs.pin, Transport: tr})
	if err != nil {
		t.Fatalf("dial %s over %s: %v", name, kind, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestProcessesChatAndShutdownOverTransports: over each transport alike, a
// real `sparkhost run` serving all three admits two clients (the pin
// checked), relays chat between them, and on SIGTERM tells both
// ServerShutdown before it closes the web listeners.
func TestProcessesChatAndShutdownOverTransports(t *testing.T) {
	bin := buildBinary(t)
	for _, kind := range allTransports {
		t.Run(kind, func(t *testing.T) {
			tmp := shortTempDir(t)
			cfg := filepath.Join(tmp, "config.toml")
			if err := os.WriteFile(cfg, []byte(webConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			rs := startServerWeb(t, bin, "", filepath.Join(tmp, "data"), true, "--config", cfg)
			alice, bob := dialOver(t, rs, kind, "alice"), dialOver(t, rs, kind, "bob")
			chatAliceToBob(t, alice, bob)
			shutdownTellsClients(t, rs, alice, bob)
		})
	}
}
