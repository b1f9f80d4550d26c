package netstack_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// vouchingTransport is a real UDP transport whose reads say that the
// source's address is already validated, as a WebTransport or WebSocket
// transport says of its sessions' peers after its own handshake.
type vouchingTransport struct{ *transport.UDP }

func (v vouchingTransport) ReadBatch(msgs []transport.Message) (int, error) {
	n, err := v.UDP.ReadBatch(msgs)
	for i := range n {
		msgs[i].Validated = true
	}
	return n, err
}

// serverOn starts a test server on a loopback UDP transport, vouching for
// its sources or not.
func serverOn(t *testing.T, vouch bool) *netstack.Server {
	t.Helper()
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	var tr transport.Transport = u
	if vouch {
		tr = vouchingTransport{u}
	}
	return quietServer(t, func(c *netstack.ServerConfig) { c.Transport = tr })
}

// TestTransportValidatedSourceSkipsCookie: a v4 hello without a cookie is
// answered with a ConnectAccepted when the transport vouches for its source
// (docs/protocol.md §3.5 step 9 is the transport's), and with a CookieReply
// from a plain UDP source, which must still prove its address.
func TestTransportValidatedSourceSkipsCookie(t *testing.T) {
	for _, tc := range []struct {
		name        string
		vouch       bool
		want        wire.MessageType
		cookiesSent uint64
	}{
		{"transport vouches", true, wire.TypeConnectAccepted, 0},
		{"udp source", false, wire.TypeCookieReply, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serverOn(t, tc.vouch)
			c := udpSocket(t, loopback)
			sendTo(t, c, srv.Addr(), connectFrame(v4Hello(t, nil)))
			d, _, ok := recvDatagram(t, c, waitLong)
			if !ok {
				t.Fatal("no answer to the hello")
			}
			if h, _ := parsePlain(t, d); h.Type != tc.want {
				t.Fatalf("first hello answered with %s, want %s", h.Type, tc.want)
			}
			// The server counts a CookieReply once its write returned,
			// which may be after the client read it.
			eventually(t, "the cookies counted", func() bool { return srv.Stats().CookiesSent == tc.cookiesSent })
			if st := srv.Stats(); st.CookiesVerified != 0 {
				t.Fatalf("cookies verified %d, want 0", st.CookiesVerified)
			}
		})
	}
}

// TestDialOverVouchingTransport: a whole Dial through a transport that
// vouches for its peers is admitted without a cookie round trip.
func TestDialOverVouchingTransport(t *testing.T) {
	srv := serverOn(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cli, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "vouched", Pin: srv.Pin()}))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if st := srv.Stats(); st.CookiesSent != 0 || st.CookiesVerified != 0 {
		t.Fatalf("cookies sent %d, verified %d; want none", st.CookiesSent, st.CookiesVerified)
	}
	if n := len(srv.Clients()); n != 1 {
		t.Fatalf("%d clients admitted, want 1", n)
	}
}
