package web_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
)

func wsURL(r *rig) string { return fmt.Sprintf("ws://127.0.0.1:%d%s", r.web.Port(), web.PathWebSocket) }

func wtURL(r *rig) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", r.web.Port(), web.PathWebTransport)
}

// rawWS opens a WebSocket to the rig with the library alone (no session
// rules of this package's client).
func rawWS(t *testing.T, r *rig, origin string, protocols ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, rsp, err := websocket.Dial(ctx, wsURL(r), &websocket.DialOptions{HTTPHeader: h, Subprotocols: protocols})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, rsp, err
}

// readUntilClosed reads until the server ends the connection and returns
// its close status.
func readUntilClosed(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the server did not close the connection")
			}
			return websocket.CloseStatus(err)
		}
	}
}

// TestWebSocketMessageOverLimitRefused: a message larger than the largest
// datagram ends the session with MessageTooBig, after the server read at
// most the limit of it; nothing of it reaches the netstack server.
func TestWebSocketMessageOverLimitRefused(t *testing.T) {
	r := startRig(t, nil)
	c, _, err := rawWS(t, r, "", web.Subprotocol)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session registered", func() bool { return r.hub.Sessions() == 1 })
	before := r.srv.Stats().PacketsReceived
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	// The write may fail once the server closed: what matters is the close.
	_ = c.Write(ctx, websocket.MessageBinary, make([]byte, 70000))
	if got := readUntilClosed(t, c); got != websocket.StatusMessageTooBig {
		t.Fatalf("closed with %v, want MessageTooBig", got)
	}
	eventually(t, "the session gone", func() bool { return r.hub.Sessions() == 0 })
	if got := r.srv.Stats().PacketsReceived - before; got != 0 {
		t.Fatalf("%d datagrams reached the server", got)
	}
}

// TestWebSocketRules: the subprotocol must be offered, and text messages
// end the session.
func TestWebSocketRules(t *testing.T) {
	r := startRig(t, nil)
	c, _, err := rawWS(t, r, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readUntilClosed(t, c); got != websocket.StatusPolicyViolation {
		t.Fatalf("without the subprotocol: closed with %v, want PolicyViolation", got)
	}
	c, _, err = rawWS(t, r, "", web.Subprotocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := readUntilClosed(t, c); got != websocket.StatusUnsupportedData {
		t.Fatalf("after a text message: closed with %v, want UnsupportedData", got)
	}
}

// TestOriginChecked: a page of another origin is refused (403) on both
// endpoints unless configured; the server's own page, a configured origin
// and a client without Origin are served.
func TestOriginChecked(t *testing.T) {
	r := startRig(t, func(c *web.Config) { c.AllowedOrigins = []string{"https://game.example"} })
	own := fmt.Sprintf("http://127.0.0.1:%d", r.web.Port())
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, {own, true}, {"https://game.example", true},
		{"https://evil.example", false}, {"http://127.0.0.1:1", false}, {"null", false},
	} {
		t.Run("ws "+tc.origin, func(t *testing.T) {
			_, rsp, err := rawWS(t, r, tc.origin, web.Subprotocol)
			if tc.ok != (err == nil) {
				t.Fatalf("origin %q: %v", tc.origin, err)
			}
			if !tc.ok && (rsp == nil || rsp.StatusCode != http.StatusForbidden) {
				t.Fatalf("origin %q refused with %v, want 403", tc.origin, rsp)
			}
		})
		t.Run("wt "+tc.origin, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			c, err := web.DialWebTransport(ctx, wtURL(r), web.ClientOptions{CertHashes: r.hashes(), Origin: tc.origin})
			if c != nil {
				c.Close()
			}
			if tc.ok != (err == nil) {
				t.Fatalf("origin %q: %v", tc.origin, err)
			}
		})
	}
	if st := r.web.Stats(); st.OriginRefused != 6 {
		t.Fatalf("%d upgrades refused for their origin, want 6", st.OriginRefused)
	}
}

// TestSessionCap: past max_sessions an upgrade is refused with 503 on
// both endpoints.
func TestSessionCap(t *testing.T) {
	r := startRig(t, func(c *web.Config) { c.MaxSessions = 1 })
	if _, _, err := rawWS(t, r, "", web.Subprotocol); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session registered", func() bool { return r.hub.Sessions() == 1 })
	_, rsp, err := rawWS(t, r, "", web.Subprotocol)
	if err == nil || rsp == nil || rsp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second WebSocket session: %v %v, want 503", err, rsp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if c, err := web.DialWebTransport(ctx, wtURL(r), web.ClientOptions{CertHashes: r.hashes()}); err == nil {
		c.Close()
		t.Fatal("a WebTransport session past the cap was served")
	}
	if st := r.web.Stats(); st.SessionsRefused != 2 {
		t.Fatalf("%d sessions refused, want 2", st.SessionsRefused)
	}
}

// TestConnectionsPerAddress: past the per-address cap, a TCP connection is
// closed before any byte is read, and a QUIC handshake is refused.
func TestConnectionsPerAddress(t *testing.T) {
	r := startRig(t, func(c *web.Config) { c.PerAddress = 2 })
	addr := fmt.Sprintf("127.0.0.1:%d", r.web.Port())
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		t.Cleanup(func() { c.Close() })
	}
	eventually(t, "two connections accepted", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(waitLong))
		_, err = c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
	})
	// A third QUIC connection from the address is refused too.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var wts []*web.Client
	for i := range 3 {
		c, err := web.DialWebTransport(ctx, wtURL(r), web.ClientOptions{CertHashes: r.hashes()})
		if i < 2 && err != nil {
			t.Fatalf("WebTransport session %d: %v", i+1, err)
		}
		if i == 2 && err == nil {
			c.Close()
			t.Fatal("a third QUIC connection from one address was served")
		}
		if c != nil {
			wts = append(wts, c)
		}
	}
	for _, c := range wts {
		c.Close()
	}
	if st := r.web.Stats(); st.ConnectionsRefused < 2 {
		t.Fatalf("%d connections refused, want at least 2", st.ConnectionsRefused)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && bytes.Contains([]byte(op.Err.Error()), []byte("reset"))
}

// TestIdleSessionClosed: a web session that sends nothing is closed after
// the idle timeout.
func TestIdleSessionClosed(t *testing.T) {
	r := startRig(t, func(c *web.Config) { c.IdleTimeout = time.Second })
	c, _, err := rawWS(t, r, "", web.Subprotocol)
	if err != nil {
		t.Fatal(err)
	}
	if got := readUntilClosed(t, c); got != websocket.StatusGoingAway {
		t.Fatalf("idle session closed with %v, want GoingAway", got)
	}
	// The janitor counts the sessions it closed after closing them.
	eventually(t, "one session counted closed idle", func() bool { return r.web.Stats().IdleClosed == 1 })
}

// TestWrongCertificateHashRefused: a WebTransport client that pins another
// hash does not connect.
func TestWrongCertificateHashRefused(t *testing.T) {
	r := startRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if c, err := web.DialWebTransport(ctx, wtURL(r), web.ClientOptions{CertHashes: [][32]byte{{1, 2, 3}}}); err == nil {
		c.Close()
		t.Fatal("connected with a wrong certificate hash")
	}
}

// TestFloodingSessionBounded: a WebSocket peer that sends far more than the
// server reads holds at most its share of the queue: its surplus is dropped
// and counted, and another session still gets through.
func TestFloodingSessionBounded(t *testing.T) {
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	hub := web.NewHub(u.LocalAddr(), true)
	m := transport.NewMux(u, hub) // nobody reads it until the flood is over
	t.Cleanup(func() { m.Close(); hub.Close() })
	ws, err := web.New(web.Config{Hub: hub, Bind: loopback, WebSocket: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ws.Serve()
	t.Cleanup(func() { ws.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	url := fmt.Sprintf("ws://127.0.0.1:%d%s", ws.Port(), web.PathWebSocket)
	flood, err := web.DialWebSocket(ctx, url, web.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	big := make([]byte, 60000)
	for range 400 { // 24 MB, three times the queue's bytes
		flood.WriteBatch([]transport.Message{{Buf: big, N: len(big)}})
		time.Sleep(time.Millisecond) // the client's own send queue holds 256
	}
	eventually(t, "the surplus dropped", func() bool { return hub.Dropped.Load() >= 400-128 })
	other, err := web.DialWebSocket(ctx, url, web.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.WriteBatch([]transport.Message{{Buf: []byte("me too"), N: 6}})
	msgs := []transport.Message{{Buf: make([]byte, 65536)}}
	queued := 0
	for {
		m.SetReadDeadline(time.Now().Add(waitLong))
		if _, err := m.ReadBatch(msgs); err != nil {
			t.Fatalf("after %d datagrams: %v", queued, err)
		}
		if string(msgs[0].Buf[:msgs[0].N]) == "me too" {
			break
		}
		queued++
	}
	if queued > 128 {
		t.Fatalf("%d datagrams of the flooding session were queued, more than its share of 128", queued)
	}
}
