package netrig

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
)

// The rig's own cost: a client and the echo server across the router, once
// through the kernel alone (the policy rules removed, so packets go from
// c0 straight to s0) and once through the forwarder on the None profile.
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/netrig
func benchRig(b *testing.B, forwarder bool) (*Rig, *net.UDPConn, netip.AddrPort) {
	r := New(b, Config{NAT: true})
	echo, err := r.Server.StartEcho(echoPort)
	if err != nil {
		b.Fatal(err)
	}
	if !forwarder {
		// Conntrack must see the client-side leg again, or the masquerade
		// would not apply to it.
		if err := r.Router.run("flush chain ip netrig raw\n", "nft", "-f", "-"); err != nil {
			b.Fatal(err)
		}
		if err := r.Router.batch(
			fmt.Sprintf("rule del pref 100 iif c0 lookup %d", upTable(0)),
			fmt.Sprintf("rule del pref 100 iif s0 to %s lookup %d", clientSubnet(0), downTable(0))); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := r.Client(0).ListenUDP(0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return r, conn, echo
}

func paths() []struct {
	name      string
	forwarder bool
} {
	return []struct {
		name      string
		forwarder bool
	}{{"kernel", false}, {"forwarder", true}}
}

// BenchmarkRigRoundTrip: one 64-byte echo at a time; ns/op is the round
// trip.
func BenchmarkRigRoundTrip(b *testing.B) {
	for _, path := range paths() {
		b.Run(path.name, func(b *testing.B) {
			r, conn, echo := benchRig(b, path.forwarder)
			out, in := make([]byte, 64), make([]byte, 2048)
			rtts := make([]time.Duration, 0, b.N)
			lost := 0
			b.ResetTimer()
			for i := range b.N {
				echoPacket{kind: kindProbe, flow: 1, seq: uint64(i), sent: monotonic()}.put(out)
				sent := time.Now()
				conn.WriteToUDPAddrPort(out, echo)
				conn.SetReadDeadline(sent.Add(time.Second))
				if _, err := conn.Read(in); err != nil {
					lost++
					continue
				}
				rtts = append(rtts, time.Since(sent))
			}
			b.StopTimer()
			s := Summarize(rtts)
			b.ReportMetric(float64(s.P50)/1e3, "p50-µs")
			b.ReportMetric(float64(s.P99)/1e3, "p99-µs")
			b.ReportMetric(float64(lost), "lost")
			if path.forwarder {
				b.Logf("forwarder: %+v", r.Stats(0).Up)
			}
		})
	}
}

// BenchmarkRigThroughput: one way, flat out, from client to server; what
// the echo server counted is the path's ceiling.
func BenchmarkRigThroughput(b *testing.B) {
	for _, size := range []int{64, 1200} {
		for _, path := range paths() {
			b.Run(fmt.Sprintf("%s/%dB", path.name, size), func(b *testing.B) {
				_, conn, echo := benchRig(b, path.forwarder)
				b.ResetTimer()
				res, err := Blast(context.Background(), conn, echo,
					BlastConfig{Size: size, Count: b.N, Duration: time.Minute, Wait: 500 * time.Millisecond})
				b.StopTimer()
				if err != nil || res.Received < 0 {
					b.Fatalf("blast: %v (received %d)", err, res.Received)
				}
				b.ReportMetric(res.ReceivedRate()/1e6, "Mbit/s")
				b.ReportMetric(float64(res.Received)/res.Elapsed.Seconds(), "pkt/s")
				b.ReportMetric(100*(1-float64(res.Received)/float64(res.Sent)), "%lost")
			})
		}
	}
}
