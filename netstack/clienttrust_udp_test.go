package netstack_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// fakeServer is a raw UDP socket that answers one Connect with a
// ConnectAccepted of its own making, to drive the client's checks.
type fakeServer struct {
	conn *net.UDPConn
	id   *handshake.ServerIdentity
}

func newFakeServer(t *testing.T, conn *net.UDPConn) *fakeServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := handshake.NewServerIdentity(priv)
	if err != nil {
		t.Fatal(err)
	}
	if conn == nil {
		conn = udpSocket(t, loopback)
	}
	return &fakeServer{conn: conn, id: id}
}

func (f *fakeServer) addr() netip.AddrPort { return localAddr(f.conn) }
func (f *fakeServer) pin() string          { return trust.Pin(f.id.Public[:]) }

// serveOne answers the first Connect in the background. answer gets the
// genuine ConnectAccepted payload for that hello and returns what to send.
// The channel yields once the answer is sent.
func (f *fakeServer) serveOne(answer func(hello, accepted []byte) []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 65536)
		_ = f.conn.SetReadDeadline(time.Now().Add(waitLong))
		n, from, err := f.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			done <- fmt.Errorf("fake server: no Connect: %w", err)
			return
		}
		if n < 1 || buf[0] != 0x01 {
			done <- fmt.Errorf("fake server: first datagram % x is not a plain frame", head(buf[:n]))
			return
		}
		h, payload, err := wire.ParsePacket(buf[1:n])
		if err != nil || h.Type != wire.TypeConnect {
			done <- fmt.Errorf("fake server: not a Connect: %v %v", h.Type, err)
			return
		}
		// A v4 hello, answered at once as a server without address
		// validation would.
		if _, reason := handshake.CheckClientHello4(payload); reason != handshake.RejectNone {
			done <- fmt.Errorf("fake server: client sent a bad hello (%d)", reason)
			return
		}
		res, err := handshake.AcceptV4(f.id, payload, 7, 1.5, nil)
		if err != nil {
			done <- err
			return
		}
		out := answer(payload, res.Payload[:])
		ah := wire.Header{Type: wire.TypeConnectAccepted}
		if _, err := f.conn.WriteToUDPAddrPort(wire.AppendPacket([]byte{0x01}, &ah, out), from); err != nil {
			done <- err
			return
		}
		done <- nil
	}()
	return done
}

// expectNothingSealed checks that, after the client gave up, nothing but
// (resent) Connects reached the fake server.
func (f *fakeServer) expectNothingSealed(t *testing.T) {
	t.Helper()
	for _, d := range drain(t, f.conn, quietWait) {
		if len(d) == 0 || d[0] != 0x01 {
			t.Fatalf("the client sent % x after refusing the server", head(d))
		}
		if h, _, err := wire.ParsePacket(d[1:]); err != nil || h.Type != wire.TypeConnect {
			t.Fatalf("the client sent %v after refusing the server", h.Type)
		}
	}
}

func dialErr(t *testing.T, cfg netstack.ClientConfig) *netstack.HandshakeError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(cfg))
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded, want a HandshakeError")
	}
	var he *netstack.HandshakeError
	if !errors.As(err, &he) {
		t.Fatalf("Dial: %v, want a *HandshakeError", err)
	}
	return he
}

func wait(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal("fake server never answered")
	}
}

func TestUDPClientRefusesServer(t *testing.T) {
	t.Run("wrong pin", func(t *testing.T) {
		f := newFakeServer(t, nil)
		other := newFakeServer(t, nil)
		done := f.serveOne(func(_, a []byte) []byte { return a })
		he := dialErr(t, netstack.ClientConfig{Server: f.addr(), Name: "p", Pin: other.pin()})
		wait(t, done)
		if he.Code != netstack.ServerIdentityMismatch {
			t.Fatalf("code %d (%v), want ServerIdentityMismatch", he.Code, he)
		}
		f.expectNothingSealed(t)
	})
	for _, tc := range []struct {
		name string
		off  int
	}{
		{"flipped signature byte", 91 + 17},
		{"flipped last signature byte", 154},
		{"flipped client id", 0},     // the prefix is signed through th
		{"flipped server nonce", 80}, // so is the ServerHello
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, nil)
			done := f.serveOne(func(_, a []byte) []byte {
				a[tc.off] ^= 0x01
				return a
			})
			he := dialErr(t, netstack.ClientConfig{Server: f.addr(), Name: "p", Pin: f.pin()})
			wait(t, done)
			if he.Code != netstack.HandshakeAuthFailed {
				t.Fatalf("code %d (%v), want HandshakeAuthFailed", he.Code, he)
			}
			f.expectNothingSealed(t)
		})
	}
	t.Run("replayed ConnectAccepted", func(t *testing.T) {
		// A genuine, signed answer of the real server to an earlier hello...
		srv := quietServer(t, nil)
		earlier := newRawPeer4(t, srv.Addr(), nil)
		earlier.connect(srv.Pin())
		_, recorded := parsePlain(t, earlier.accept)
		// ...replayed by an impostor to a new handshake.
		f := newFakeServer(t, nil)
		done := f.serveOne(func(_, _ []byte) []byte { return recorded })
		he := dialErr(t, netstack.ClientConfig{Server: f.addr(), Name: "p", Pin: srv.Pin()})
		wait(t, done)
		if he.Code != netstack.HandshakeAuthFailed {
			t.Fatalf("code %d (%v), want HandshakeAuthFailed", he.Code, he)
		}
		f.expectNothingSealed(t)
	})
	t.Run("unknown host with a bad signature is not recorded", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "known_hosts")
		kh, err := trust.OpenKnownHosts(path)
		if err != nil {
			t.Fatal(err)
		}
		f := newFakeServer(t, nil)
		done := f.serveOne(func(_, a []byte) []byte {
			a[100] ^= 0x80
			return a
		})
		he := dialErr(t, netstack.ClientConfig{Server: f.addr(), Name: "p", KnownHosts: kh,
			OnTrustNew: func(string, string) { t.Error("OnTrustNew for a server whose signature failed") }})
		wait(t, done)
		if he.Code != netstack.HandshakeAuthFailed {
			t.Fatalf("code %d (%v), want HandshakeAuthFailed", he.Code, he)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("known_hosts written after a failed signature: %v", err)
		}
		f.expectNothingSealed(t)
	})
}

func TestUDPKnownHostsTOFU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known_hosts")
	kh, err := trust.OpenKnownHosts(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	cfg := func(srv netip.AddrPort) netstack.ClientConfig {
		return netstack.ClientConfig{Server: srv, Name: "tofu", KnownHosts: kh,
			OnTrustNew: func(hp, pin string) {
				mu.Lock()
				told = append(told, hp+" "+pin)
				mu.Unlock()
			}}
	}
	srv := quietServer(t, nil)
	addr := srv.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()

	// First use: recorded, and the user is told.
	c, err := netstack.Dial(ctx, gameClient(cfg(addr)))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	want := addr.String() + " " + srv.Pin()
	if len(told) != 1 || told[0] != want {
		t.Fatalf("OnTrustNew calls %q, want [%q]", told, want)
	}
	recorded, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(recorded, []byte(want)) {
		t.Fatalf("known_hosts = %q (%v), want a line %q", recorded, err, want)
	}
	// Known now: no second notice.
	c, err = netstack.Dial(ctx, gameClient(cfg(addr)))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(told) != 1 {
		t.Fatalf("OnTrustNew called again for a known key: %q", told)
	}

	// Another key at the same address.
	srv.Close()
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Skipf("cannot rebind %s after closing the server: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	f := newFakeServer(t, conn)
	for _, store := range []string{"same store", "reopened store"} {
		done := f.serveOne(func(_, a []byte) []byte { return a })
		c := cfg(addr)
		if store == "reopened store" {
			if c.KnownHosts, err = trust.OpenKnownHosts(path); err != nil {
				t.Fatal(err)
			}
		}
		he := dialErr(t, c)
		wait(t, done)
		if he.Code != netstack.ServerIdentityMismatch || !errors.Is(he, trust.ErrIdentityMismatch) {
			t.Fatalf("%s: %v (code %d), want ServerIdentityMismatch wrapping trust.ErrIdentityMismatch", store, he, he.Code)
		}
		f.expectNothingSealed(t)
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, recorded) {
		t.Fatalf("known_hosts changed after a mismatch:\nbefore %q\nafter  %q (%v)", recorded, now, err)
	}
	if len(told) != 1 {
		t.Fatalf("OnTrustNew called for the mismatching key: %q", told)
	}
}
