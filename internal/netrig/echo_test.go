package netrig

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestEchoPacketRoundTrips(t *testing.T) {
	p := echoPacket{kind: kindProbe | kindReply, flow: 0xdeadbeef, seq: 1 << 40, sent: 123456789,
		seen: netip.MustParseAddrPort("198.18.0.1:10213"), received: 77, arrived: 1 << 50}
	b := make([]byte, 64)
	p.put(b)
	got, err := parseEcho(b)
	if err != nil || got != p {
		t.Fatalf("parsed %+v, %v; want %+v", got, err, p)
	}
	if _, err := parseEcho(b[:echoHeader-1]); err == nil {
		t.Fatal("a short datagram parsed")
	}
}

// FuzzParseEcho: the echo server reads whatever arrives; nothing may panic,
// and a datagram that parses writes back the same header.
func FuzzParseEcho(f *testing.F) {
	b := make([]byte, echoHeader)
	echoPacket{kind: kindProbe, flow: 1, seq: 2, sent: 3}.put(b)
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, echoHeader-1))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := parseEcho(in)
		if err != nil {
			return
		}
		out := make([]byte, echoHeader)
		p.put(out)
		q, err := parseEcho(out)
		if err != nil || q != p {
			t.Fatalf("%+v came back as %+v, %v", p, q, err)
		}
	})
}

// TestProbeAgainstLoopbackEcho runs the echo server and the probe on
// loopback, without the rig: everything comes back, counted right.
func TestProbeAgainstLoopbackEcho(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	go ServeEcho(srv)
	defer srv.Close()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Probe(ctx, conn, srv.LocalAddr().(*net.UDPAddr).AddrPort(),
		ProbeConfig{Count: 50, Interval: time.Millisecond, Size: 200, Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 50 || res.Echoed != 50 || res.ServerReceived != 50 || res.Duplicates != 0 {
		t.Fatalf("sent %d echoed %d server %d dups %d", res.Sent, res.Echoed, res.ServerReceived, res.Duplicates)
	}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if seen := res.Seen(); len(seen) != 1 || seen[0] != local {
		t.Errorf("server saw %v, want %v", seen, local)
	}
	for i := range res.Sent {
		if res.Up[i] < 0 || res.Down[i] < 0 || res.Up[i]+res.Down[i] != res.RTT[i] {
			t.Errorf("probe %d: up %v + down %v is not its round trip %v", i, res.Up[i], res.Down[i], res.RTT[i])
		}
	}
	if res.LossUp() != 0 || res.LossDown() != 0 || res.LossRoundTrip() != 0 {
		t.Errorf("loss up %v down %v", res.LossUp(), res.LossDown())
	}
	b, err := Blast(ctx, conn, srv.LocalAddr().(*net.UDPAddr).AddrPort(),
		BlastConfig{Size: 500, Rate: 2_000_000, Duration: 500 * time.Millisecond, Wait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Paced at 2 Mbit/s for half a second: about 236 datagrams of 528 bytes.
	if b.Received != b.Sent || b.Sent < 180 || b.Sent > 300 {
		t.Errorf("blast sent %d, server counted %d", b.Sent, b.Received)
	}
}
