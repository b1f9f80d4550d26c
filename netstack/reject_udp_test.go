package netstack_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// smallOrderPoints is libsodium's blocklist of X25519 public keys (§5.3),
// little-endian: 0, 1, the two points of order 8, p−1, p, p+1. Written out
// here rather than taken from the handshake package, so that the test checks
// the list itself.
var smallOrderPoints = [7][32]byte{
	{},
	{1},
	{0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
		0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00},
	{0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b,
		0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
}

// goodKey is an X25519 public key that is not of small order (the base point 9).
var goodKey = [32]byte{9}

func TestUDPRejectionReasons(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.ConnectBudget = plentyBudget })

	wrongMagic := helloBytes(3, 1, goodKey)
	wrongMagic[0] = 'X'
	long5 := append(helloBytes(5, 1, goodKey), make([]byte, 80-55)...)
	type helloCase struct {
		name    string
		hello   []byte
		want    wire.RejectReason
		version uint16 // server_version; 0 means 3
	}
	cases := []helloCase{
		{"empty payload", nil, wire.RejectProtocolMissing, 0},
		{"5 bytes", helloBytes(3, 1, goodKey)[:5], wire.RejectProtocolMissing, 0},
		{"wrong magic", wrongMagic, wire.RejectProtocolMissing, 0},
		{"version 2", helloBytes(2, 1, goodKey), wire.RejectProtocolTooOld, 0},
		{"version 2, 6 bytes", helloBytes(2, 1, goodKey)[:6], wire.RejectProtocolTooOld, 0},
		{"version 5", helloBytes(5, 1, goodKey), wire.RejectProtocolTooNew, 4},
		{"version 5, 80 bytes", long5, wire.RejectProtocolTooNew, 4},
		// A v4 hello must be padded to 1176 bytes (docs/protocol.md §3.3).
		{"version 4, 55 bytes", helloBytes(4, 1, goodKey), wire.RejectMalformedHandshake, 4},
		{"version 3, 54 bytes", helloBytes(3, 1, goodKey)[:54], wire.RejectMalformedHandshake, 0},
		{"version 3, 56 bytes", append(helloBytes(3, 1, goodKey), 0), wire.RejectMalformedHandshake, 0},
		{"suite 2", helloBytes(3, 2, goodKey), wire.RejectUnsupportedSuite, 0},
		// The suite is judged before the key (§5.5's order).
		{"suite 2 with a small-order key", helloBytes(3, 2, [32]byte{}), wire.RejectUnsupportedSuite, 0},
	}
	for i, k := range smallOrderPoints {
		cases = append(cases, helloCase{fmt.Sprintf("small-order point %d", i), helloBytes(3, 1, k), wire.RejectMalformedHandshake, 0})
		k[31] |= 0x80
		cases = append(cases, helloCase{fmt.Sprintf("small-order point %d with bit 255", i), helloBytes(3, 1, k), wire.RejectMalformedHandshake, 0})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := udpSocket(t, loopback)
			sendTo(t, c, srv.Addr(), connectFrame(tc.hello))
			expectRejectedV(t, c, tc.want, max(tc.version, 3))
		})
	}
	if n := srv.SlotCount(); n != 0 {
		t.Errorf("rejected hellos left %d slots", n)
	}
}

func TestUDPRejectServerFull(t *testing.T) {
	t.Run("admitted client", func(t *testing.T) {
		srv := quietServer(t, func(c *netstack.ServerConfig) { c.MaxClients = 1 })
		dial(t, srv, "first")
		c := udpSocket(t, loopback)
		sendTo(t, c, srv.Addr(), connectFrame(freshHello(t)))
		expectRejected(t, c, wire.RejectServerFull)

		// The Go client reports it as a HandshakeError.
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		_, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "second", Pin: srv.Pin()}))
		var he *netstack.HandshakeError
		if !errors.As(err, &he) || he.Code != netstack.HandshakeRejected || he.Reason != wire.RejectServerFull {
			t.Fatalf("second Dial: %v, want HandshakeRejected ServerFull", err)
		}
	})
	// Half-open handshakes hold no slot (docs/protocol.md §3.6): capacity is
	// judged at the hello and again at admission. A v3 client is told with
	// reason Unknown: v3 defines no ServerFull Disconnect (its reasons end
	// at 11); the detail says what happened.
	for _, v := range []struct {
		name   string
		peer   func(t *testing.T, srv netip.AddrPort) *rawPeer
		reason wire.DisconnectReason
	}{
		{"half-open handshakes do not count", func(t *testing.T, srv netip.AddrPort) *rawPeer { return newRawPeer4(t, srv, nil) }, wire.DisconnectServerFull},
		{"half-open handshakes do not count, v3", newRawPeer, wire.DisconnectUnknown},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := quietServer(t, func(c *netstack.ServerConfig) { c.MaxClients = 1 })
			p := v.peer(t, srv.Addr())
			p.connect(srv.Pin()) // half-open, not finished yet
			if len(srv.Clients()) != 0 || srv.HalfOpenCount() != 1 {
				t.Fatalf("Clients %d, half-open %d; want 0 and 1", len(srv.Clients()), srv.HalfOpenCount())
			}
			dial(t, srv, "second") // takes the one slot
			// The half-open handshake finishes too late: Disconnect(ServerFull).
			p.sendFinished("late", 1)
			_, payload := p.await(wire.TypeDisconnect)
			if m, err := wire.ParseDisconnect(payload); err != nil || wire.DisconnectReason(m.Reason) != v.reason || !strings.Contains(m.Detail, "full") {
				t.Fatalf("Disconnect %+v (%v), want %s saying the server is full", m, err, v.reason)
			}
			eventually(t, "the late handshake freed", func() bool { return srv.HalfOpenCount() == 0 })
			if cl := srv.Clients(); len(cl) != 1 || cl[0].Name != "second" {
				t.Fatalf("Clients() = %+v", cl)
			}
		})
	}
}

func TestUDPRejectBanned(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.IsBanned = func(a netip.Addr) bool { return a == loopback }
	})
	c := udpSocket(t, loopback)
	sendTo(t, c, srv.Addr(), connectFrame(freshHello(t)))
	expectRejected(t, c, wire.RejectBanned)
	// The hello checks come before the ban (§5.5).
	sendTo(t, c, srv.Addr(), connectFrame(helloBytes(2, 1, goodKey)))
	expectRejected(t, c, wire.RejectProtocolTooOld)
	if srv.SlotCount() != 0 {
		t.Fatal("a banned address got a slot")
	}
}

// legacyPacket is a bare protocol v1 packet: no frame byte.
func legacyPacket(typ wire.MessageType, payload []byte) []byte {
	h := wire.Header{Type: typ}
	return wire.AppendPacket(nil, &h, payload)
}

func TestUDPLegacyConnect(t *testing.T) {
	srv := quietServer(t, nil)
	c := udpSocket(t, loopback)

	// A v1 Connect, whatever its payload, gets an unframed ConnectRejected.
	sendTo(t, c, srv.Addr(), legacyPacket(wire.TypeConnect, []byte("v1 hello, not inspected")))
	d, _, ok := recvDatagram(t, c, waitLong)
	if !ok {
		t.Fatal("no answer to a legacy Connect")
	}
	if d[0] != 0x4B || binary.LittleEndian.Uint32(d) != wire.Magic {
		t.Fatalf("legacy answer is framed: % x", head(d))
	}
	h, p, err := wire.ParsePacket(d)
	if err != nil {
		t.Fatal(err)
	}
	checkRejected(t, h, p, wire.RejectProtocolTooOld)

	// A legacy packet of another type gets nothing: the answer to the next
	// datagram is the first thing that arrives.
	before := srv.Stats()
	sendTo(t, c, srv.Addr(), legacyPacket(wire.TypeHeartbeat, make([]byte, 8)))
	sendTo(t, c, srv.Addr(), connectFrame(nil))
	expectRejected(t, c, wire.RejectProtocolMissing)
	if got := srv.Stats().MalformedDropped - before.MalformedDropped; got != 1 {
		t.Errorf("MalformedDropped grew by %d, want 1", got)
	}
	// A v1 Connect whose header fails §3's checks (length mismatch) gets nothing.
	bad := legacyPacket(wire.TypeConnect, []byte("abc"))
	bad = bad[:len(bad)-1]
	sendTo(t, c, srv.Addr(), bad)
	sendTo(t, c, srv.Addr(), connectFrame(nil))
	expectRejected(t, c, wire.RejectProtocolMissing)
}
