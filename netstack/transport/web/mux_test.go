package web_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
)

// bareMux is a Mux of a loopback UDP socket and a web server's sessions,
// read by the test itself.
func bareMux(t *testing.T) (*transport.Mux, *web.Server, *transport.UDP) {
	t.Helper()
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	hub := web.NewHub(u.LocalAddr(), true)
	m := transport.NewMux(u, hub)
	t.Cleanup(func() { m.Close(); hub.Close() })
	ws, err := web.New(web.Config{Hub: hub, Bind: loopback, WebSocket: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ws.Serve()
	t.Cleanup(func() { ws.Close() })
	return m, ws, u
}

// readOne reads one datagram from m within the test's patience.
func readOne(t *testing.T, m *transport.Mux) transport.Message {
	t.Helper()
	msgs := []transport.Message{{Buf: make([]byte, 2048)}}
	got := make(chan error, 1)
	go func() {
		_, err := m.ReadBatch(msgs)
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		m.SetReadDeadline(time.Now())
		t.Fatal("no datagram read")
	}
	return msgs[0]
}

// TestMuxReadsBoth: a read blocked on the UDP socket returns a web
// session's datagram (Validated, named by the session's address) as soon as
// it arrives, and UDP datagrams as before (not Validated); a write to the
// session's address reaches the session.
func TestMuxReadsBoth(t *testing.T) {
	m, ws, _ := bareMux(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := web.DialWebSocket(ctx, "ws://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ws.Port()))+web.PathWebSocket, web.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.AfterFunc(50*time.Millisecond, func() { // after the read blocked
		c.WriteBatch([]transport.Message{{Buf: []byte("web"), N: 3}})
	})
	got := readOne(t, m)
	if string(got.Buf[:got.N]) != "web" || !got.Validated {
		t.Fatalf("read %q validated %v, want the web datagram, validated", got.Buf[:got.N], got.Validated)
	}
	key := got.Addr
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.WriteToUDPAddrPort([]byte("udp"), m.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	got = readOne(t, m)
	if string(got.Buf[:got.N]) != "udp" || got.Validated {
		t.Fatalf("read %q validated %v, want the UDP datagram, not validated", got.Buf[:got.N], got.Validated)
	}
	if _, err := m.WriteBatch([]transport.Message{{Buf: []byte("back"), N: 4, Addr: key}}); err != nil {
		t.Fatal(err)
	}
	in := []transport.Message{{Buf: make([]byte, 64)}}
	c.SetReadDeadline(time.Now().Add(waitLong))
	if n, err := c.ReadBatch(in); err != nil || n != 1 || string(in[0].Buf[:in[0].N]) != "back" {
		t.Fatalf("the session read %d %q %v", n, in[0].Buf[:in[0].N], err)
	}
}

// TestMuxCollision: a UDP datagram whose source is a live web session's
// address is dropped and counted: the address is the session's.
func TestMuxCollision(t *testing.T) {
	m, ws, _ := bareMux(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := web.DialWebSocket(ctx, "ws://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ws.Port()))+web.PathWebSocket, web.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteBatch([]transport.Message{{Buf: []byte("web"), N: 3}})
	key := readOne(t, m).Addr
	pc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(key))
	if err != nil {
		t.Skipf("UDP port of the session's address in use: %v", err)
	}
	defer pc.Close()
	pc.WriteToUDPAddrPort([]byte("spoof"), m.LocalAddr())
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	time.AfterFunc(100*time.Millisecond, func() { other.WriteToUDPAddrPort([]byte("fine"), m.LocalAddr()) })
	got := readOne(t, m)
	if string(got.Buf[:got.N]) != "fine" || m.Collisions.Load() != 1 {
		t.Fatalf("read %q with %d collisions; want the other datagram, 1 collision", got.Buf[:got.N], m.Collisions.Load())
	}
}

// TestMuxReadDeadline: the caller's deadline ends a read blocked on both.
func TestMuxReadDeadline(t *testing.T) {
	m, _, _ := bareMux(t)
	m.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := m.ReadBatch([]transport.Message{{Buf: make([]byte, 64)}})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
}
