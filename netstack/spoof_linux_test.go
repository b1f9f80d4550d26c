//go:build linux

package netstack_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// rawSender sends IPv4 UDP datagrams with any source address (IP_HDRINCL),
// to 127.0.0.0/8 only.
type rawSender struct{ fd int }

// newRawSender opens a raw socket, or skips the test where the environment
// does not allow one (no CAP_NET_RAW).
func newRawSender(t *testing.T) *rawSender {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("raw sockets are not allowed here (%v): the spoofing test needs CAP_NET_RAW", err)
		}
		t.Fatalf("raw socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &rawSender{fd: fd}
}

// send sends payload as a UDP datagram from the spoofed source to dst.
func (r *rawSender) send(t *testing.T, src, dst netip.AddrPort, payload []byte) {
	t.Helper()
	if !src.Addr().Is4() || !dst.Addr().Is4() || dst.Addr().As4()[0] != 127 || src.Addr().As4()[0] != 127 {
		t.Fatalf("the spoofing test sends within 127.0.0.0/8 only, not %v → %v", src, dst)
	}
	pkt := make([]byte, 20+8+len(payload))
	pkt[0] = 0x45 // IPv4, 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64 // TTL
	pkt[9] = syscall.IPPROTO_UDP
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(pkt[12:16], s[:])
	copy(pkt[16:20], d[:])
	// The kernel fills in the IP checksum; a UDP checksum of 0 means none (IPv4).
	binary.BigEndian.PutUint16(pkt[20:], src.Port())
	binary.BigEndian.PutUint16(pkt[22:], dst.Port())
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload)))
	copy(pkt[28:], payload)
	to := &syscall.SockaddrInet4{Addr: d}
	if err := syscall.Sendto(r.fd, pkt, 0, to); err != nil {
		t.Fatalf("raw sendto: %v", err)
	}
}

// TestUDPSpoofedSource: an attacker sends hellos with the victim's address as
// source (a raw socket). The victim, listening on that address, receives only
// CookieReplies (or, in internet mode, refusals), each no larger than the
// hello; the server spends no signature and keeps no half-open state.
func TestUDPSpoofedSource(t *testing.T) {
	for _, internet := range []bool{false, true} {
		name := "private"
		if internet {
			name = "internet"
		}
		t.Run(name, func(t *testing.T) {
			raw := newRawSender(t)
			srv := quietServer(t, func(c *netstack.ServerConfig) { c.Internet = internet })
			victim := udpSocketOrSkip(t, netip.MustParseAddr("127.50.0.9"))
			src := localAddr(victim)
			hellos := [][]byte{
				connectFrame(v4Hello(t, nil)),
				connectFrame(v4Hello(t, make([]byte, 20))), // a made-up cookie
			}
			if internet {
				hellos = append(hellos, connectFrame(freshHello(t))) // v3: refused
			}
			for _, h := range hellos {
				raw.send(t, src, srv.Addr(), h)
				d, _, ok := recvDatagram(t, victim, waitLong)
				if !ok {
					if srv.Stats().PlainBytesReceived == 0 {
						t.Skip("the spoofed datagram never reached the server: this environment drops spoofed loopback traffic")
					}
					t.Fatal("the server got the spoofed hello but the victim got no answer")
				}
				rh, _ := parsePlain(t, d)
				if len(d) > len(h) {
					t.Fatalf("the victim got %d bytes (%v) for a %d-byte spoofed hello", len(d), rh.Type, len(h))
				}
				want := wire.TypeCookieReply
				if len(h) < 1000 {
					want = wire.TypeConnectRejected
				}
				if rh.Type != want {
					t.Fatalf("the victim got %v, want %v", rh.Type, want)
				}
			}
			probe(t, srv)
			if d := drain(t, victim, quietWait); len(d) != 0 {
				t.Fatalf("the victim got %d more datagrams", len(d))
			}
			if st := srv.Stats(); st.HandshakesSigned != 0 || srv.HalfOpenCount() != 0 {
				t.Fatalf("spoofed hellos cost %d signatures, %d half-open entries", st.HandshakesSigned, srv.HalfOpenCount())
			}
		})
	}
}

// TestUDPFloodBeyondTheBudgetTableLocksNobodyOut: spoofed datagrams from
// more distinct sources than the per-address budget table holds (70,000
// addresses of 127.0.0.0/8 against its 65,536 entries), each source's bucket
// left spent (a refill of one token per 100 s keeps it so for the whole
// test, whatever the send rate), and then a real player: it is admitted.
// A table that refused every new source once full would lock it out.
func TestUDPFloodBeyondTheBudgetTableLocksNobodyOut(t *testing.T) {
	raw := newRawSender(t)
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.ConnectBudget.RefillPerSecond = 0.01
		c.PrefixBudget = plentyBudget
	})
	const sources = 70000
	junk := []byte{0x01, 0x00} // a plain frame too short to parse: charged, dropped, never answered
	for i := range uint32(sources) {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1 + byte(i>>16), byte(i >> 8), byte(i)}), 40000)
		raw.send(t, src, srv.Addr(), junk)
		if i%2000 == 1999 {
			time.Sleep(2 * time.Millisecond) // let the server keep up: every datagram should be charged
		}
	}
	eventually(t, "the flood was received", func() bool { return srv.Stats().PlainBytesReceived >= sources*2*9/10 })
	if srv.Stats().PlainBytesReceived == 0 {
		t.Skip("the spoofed datagrams never reached the server: this environment drops spoofed loopback traffic")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "player", Pin: srv.Pin()}))
	if err != nil {
		t.Fatalf("a real player after a flood from %d sources: %v (address budget refusals %d)", sources, err, srv.Stats().ConnectRateLimited)
	}
	c.Close()
}
