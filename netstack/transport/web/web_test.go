package web_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

var loopback = netip.MustParseAddr("127.0.0.1")

const waitLong = 20 * time.Second

const typeBulk wire.MessageType = 1100

// rig is a real netstack server serving UDP and the web transports on
// loopback, through one Mux.
type rig struct {
	srv *netstack.Server
	web *web.Server
	hub *web.Hub
	mux *transport.Mux
	reg *wire.Registry
}

func registry(t testing.TB) *wire.Registry {
	t.Helper()
	reg := gamemsg.NewRegistry()
	if err := reg.Register("web-test", wire.Schema{ID: typeBulk, Name: "bulk", Direction: wire.BothDirections, Channel: wire.ReliableOrdered,
		MinLen: 0, MaxLen: 16000, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func startRig(t testing.TB, mod func(*web.Config)) *rig {
	t.Helper()
	return startRigWith(t, mod, nil)
}

// startRigWith is startRig with the netstack server's config changed by
// modNet too.
func startRigWith(t testing.TB, mod func(*web.Config), modNet func(*netstack.ServerConfig)) *rig {
	t.Helper()
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{hub: web.NewHub(u.LocalAddr(), true), reg: registry(t)}
	r.mux = transport.NewMux(u, r.hub)
	t.Cleanup(func() { r.mux.Close(); r.hub.Close() })
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	nc := netstack.ServerConfig{Transport: r.mux, Identity: priv, Registry: r.reg,
		Logger: slog.New(slog.DiscardHandler),
		Welcome: func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte) {
			return gamemsg.TypeGameStateSync, wire.ReliableOrdered, gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
				ClientID: client, TickRate: 60, ReplicationRate: 20, ServerName: "web", Mode: gamemsg.ModeCustom})
		}}
	if modNet != nil {
		modNet(&nc)
	}
	r.srv, err = netstack.NewServer(nc)
	if err != nil {
		t.Fatal(err)
	}
	r.srv.Handle(typeBulk, func(id uint32, _ *wire.Header, p []byte) { r.srv.Send(id, typeBulk, wire.ReliableOrdered, p) })
	r.srv.Start()
	t.Cleanup(func() { r.srv.Close() })
	cfg := web.Config{Hub: r.hub, Bind: loopback, WebTransport: true, WebSocket: true, Taken: r.srv.PeerAt,
		Logger: slog.New(slog.DiscardHandler), Info: func() web.Info { return web.Info{Pin: r.srv.Pin()} }}
	if mod != nil {
		mod(&cfg)
	}
	r.web, err = web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.web.Serve()
	t.Cleanup(func() { r.web.Close() })
	return r
}

func (r *rig) hashes() [][32]byte {
	var hs [][32]byte
	for _, h := range r.web.CertHashes() {
		hs = append(hs, h.SHA256)
	}
	return hs
}

// dialTransport opens a client transport of kind to the rig ("udp": none,
// the client opens its own socket) and returns it with the address to dial.
func (r *rig) dialTransport(ctx context.Context, kind string, opt web.ClientOptions) (transport.Transport, netip.AddrPort, error) {
	switch kind {
	case "webtransport":
		if opt.CertHashes == nil {
			opt.CertHashes = r.hashes()
		}
		c, err := web.DialWebTransport(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", r.web.Port(), web.PathWebTransport), opt)
		if err != nil {
			return nil, netip.AddrPort{}, err
		}
		return c, c.Peer(), nil
	case "websocket":
		c, err := web.DialWebSocket(ctx, fmt.Sprintf("ws://127.0.0.1:%d%s", r.web.Port(), web.PathWebSocket), opt)
		if err != nil {
			return nil, netip.AddrPort{}, err
		}
		return c, c.Peer(), nil
	}
	return nil, r.srv.Addr(), nil
}

func (r *rig) dial(t *testing.T, kind, name string) (*netstack.Client, transport.Transport) {
	t.Helper()
	return r.dialOpt(t, kind, name, web.ClientOptions{})
}

func (r *rig) dialOpt(t *testing.T, kind, name string, opt web.ClientOptions) (*netstack.Client, transport.Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	tr, addr, err := r.dialTransport(ctx, kind, opt)
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		t.Cleanup(func() { tr.Close() })
	}
	cli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: addr, Name: name, Pin: r.srv.Pin(), Transport: tr,
		Registry: r.reg, Welcome: gamemsg.TypeGameStateSync})
	if err != nil {
		t.Fatalf("dial over %s: %v", kind, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli, tr
}

// echo sends p as one reliable message and waits for the server's echo.
func echo(t *testing.T, cli *netstack.Client, p []byte) {
	t.Helper()
	if err := cli.Send(typeBulk, wire.ReliableOrdered, p); err != nil {
		t.Fatal(err)
	}
	cli.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for {
		m, err := cli.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for the echo of %d bytes: %v", len(p), err)
		}
		if m.Header.Type == typeBulk {
			if !bytes.Equal(m.Payload, p) {
				t.Fatalf("echo of %d bytes differs from the %d sent", len(m.Payload), len(p))
			}
			return
		}
	}
}

var kinds = []string{"udp", "webtransport", "websocket"}

// TestSessionsOverEveryTransport: the same v4 session — handshake against
// the pin, a small and a fragmented message each way, close and reconnect —
// over UDP, WebTransport and WebSocket to one server; the web sessions are
// admitted without a cookie round trip (their transport proved the
// address), the UDP one with it.
func TestSessionsOverEveryTransport(t *testing.T) {
	r := startRig(t, nil)
	big := bytes.Repeat([]byte("sparkhost"), 8000/9) // larger than any web datagram
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			cookies := r.srv.Stats().CookiesSent
			cli, _ := r.dial(t, kind, "p-"+kind)
			if got := r.srv.Stats().CookiesSent - cookies; (kind == "udp") != (got > 0) {
				t.Fatalf("%d cookies sent for a %s handshake", got, kind)
			}
			echo(t, cli, []byte("hello"))
			echo(t, cli, big)
			id := cli.ID()
			cli.Close()
			eventually(t, "the closed session gone", func() bool { return !hasClient(r.srv, id) })
			again, _ := r.dial(t, kind, "p-"+kind)
			echo(t, again, big)
		})
	}
}

// TestWebTransportPacksToItsDatagram: a server session over WebTransport
// packs into the datagrams the QUIC connection carries (less than UDP's
// 1,200), so a fragmented message crosses as WebTransport datagrams.
func TestWebTransportPacksToItsDatagram(t *testing.T) {
	r := startRig(t, func(c *web.Config) { c.PacketSize = 1200 })
	cli, tr := r.dialOpt(t, "webtransport", "wt", web.ClientOptions{PacketSize: 1200})
	max := tr.MaxDatagram()
	if max <= 0 || max >= 1200 {
		t.Fatalf("the WebTransport client carries datagrams of %d bytes; want 0 < size < 1200", max)
	}
	ci := r.srv.Clients()
	if len(ci) != 1 {
		t.Fatalf("%d clients", len(ci))
	}
	if got := r.mux.MaxDatagramTo(ci[0].Addr); got <= 0 || got >= 1200 {
		t.Fatalf("the server's session packs into %d bytes; want 0 < size < 1200", got)
	}
	echo(t, cli, bytes.Repeat([]byte{7}, 6000))
	if st := r.web.Stats(); st.Dropped != 0 || st.Overflowed != 0 {
		t.Fatalf("server: %d datagrams dropped, %d sent on the overflow stream; want none", st.Dropped, st.Overflowed)
	}
	// The client's 1,200-byte hello did not fit a datagram: it crossed on
	// the overflow stream.
	if n := tr.(*web.Client).Overflowed.Load(); n == 0 {
		t.Fatal("the client sent nothing on its overflow stream; the hello needed it")
	}
}

func hasClient(srv *netstack.Server, id uint32) bool {
	for _, c := range srv.Clients() {
		if c.ID == id {
			return true
		}
	}
	return false
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLong)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientSeesTheEnd: when the server ends a web session, the client's
// transport reads what arrived before and then reports it closed, so the
// netstack client ends at once instead of timing out.
func TestClientSeesTheEnd(t *testing.T) {
	for _, kind := range []string{"webtransport", "websocket"} {
		t.Run(kind, func(t *testing.T) {
			r := startRig(t, nil)
			cli, _ := r.dial(t, kind, "ender")
			start := time.Now()
			r.web.Close()
			select {
			case <-cli.Done():
			case <-time.After(waitLong):
				t.Fatal("the client did not end after its session ended")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("the client ended %v after its session; the liveness timeout, not the transport, ended it", d)
			}
		})
	}
}

// TestPeerKeyAvoidsUDPPeers: a WebSocket session from the same IP address
// and port number as a UDP client's session gets another peer address, and
// both sessions work.
func TestPeerKeyAvoidsUDPPeers(t *testing.T) {
	r := startRig(t, nil)
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	udpCli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: r.srv.Addr(), Name: "udp", Pin: r.srv.Pin(), Transport: u,
		Registry: r.reg, Welcome: gamemsg.TypeGameStateSync})
	if err != nil {
		t.Fatal(err)
	}
	defer udpCli.Close()
	d := &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(u.LocalAddr())}
	ws, err := web.DialWebSocket(ctx, fmt.Sprintf("ws://127.0.0.1:%d%s", r.web.Port(), web.PathWebSocket), web.ClientOptions{Dialer: d})
	if err != nil {
		t.Skipf("TCP port %d taken: %v", u.LocalAddr().Port(), err)
	}
	defer ws.Close()
	wsCli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: ws.Peer(), Name: "ws", Pin: r.srv.Pin(), Transport: ws,
		Registry: r.reg, Welcome: gamemsg.TypeGameStateSync})
	if err != nil {
		t.Fatal(err)
	}
	defer wsCli.Close()
	addrs := map[netip.AddrPort]bool{}
	for _, c := range r.srv.Clients() {
		addrs[c.Addr] = true
	}
	if len(addrs) != 2 || !addrs[u.LocalAddr()] {
		t.Fatalf("client addresses %v; want the UDP client's %v and another", addrs, u.LocalAddr())
	}
	echo(t, udpCli, []byte("udp"))
	echo(t, wsCli, []byte("ws"))
}
