package netstack_test

import (
	"context"
	"net"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The end-to-end benchmarks measure one 300-byte message echoed over loopback,
// sealed and reliable through netstack, beside the same echo over raw UDP in
// the same run: the ratio of the two is what docs/performance.md reports.

const benchPayload = 300

const benchType wire.MessageType = 1000

func benchRegistry(b testing.TB, ch wire.Channel) *wire.Registry {
	reg := gamemsg.NewRegistry()
	err := reg.Register("bench", wire.Schema{
		ID: benchType, Name: "echo", Direction: wire.BothDirections, Channel: ch,
		MinLen: 0, MaxLen: 1200, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

// BenchmarkEchoRawUDP is the baseline: a goroutine echoes datagrams on
// 127.0.0.1 and the client waits for each echo before sending the next.
func BenchmarkEchoRawUDP(b *testing.B) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			srv.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	cli, err := net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	msg := make([]byte, benchPayload)
	buf := make([]byte, 2048)
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cli.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEcho(b *testing.B, ch wire.Channel) {
	reg := benchRegistry(b, ch)
	var srv *netstack.Server
	srv = newBenchServer(b, reg, func(id uint32, h *wire.Header, p []byte) {
		srv.Send(id, benchType, ch, p)
	})
	ctx := context.Background()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "bench", Pin: srv.Pin(), Registry: reg}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, benchPayload)
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Send(benchType, ch, msg); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if m.Header.Type == benchType {
				break
			}
		}
	}
}

// BenchmarkEchoSealedReliable echoes on the Reliable channel (sealed, acked).
func BenchmarkEchoSealedReliable(b *testing.B) { benchEcho(b, wire.Reliable) }

// BenchmarkEchoSealedUnreliable echoes on the Unreliable channel (sealed only).
func BenchmarkEchoSealedUnreliable(b *testing.B) { benchEcho(b, wire.Unreliable) }

func newBenchServer(b *testing.B, reg *wire.Registry, h netstack.Handler) *netstack.Server {
	b.Helper()
	srv := newTestServerTB(b, func(c *netstack.ServerConfig) { c.Registry = reg })
	srv.Handle(benchType, h)
	return srv
}

// benchDial measures whole handshakes over loopback UDP, client included: a
// Dial (hello, cookie round trip unless skipped, ConnectAccepted, client
// verification, ClientFinished, GameStateSync) and a Close per operation.
func benchDial(b *testing.B, protocol uint16, validate bool) {
	lift := ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1e9}
	srv := newTestServerTB(b, func(c *netstack.ServerConfig) {
		c.ConnectBudget, c.PrefixBudget = lift, lift
		c.MaxClients = 4096
		c.SkipAddressValidation = !validate
	})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bench", Pin: srv.Pin(), Protocol: protocol})
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handshakes/s")
}

func BenchmarkDialV4Validated(b *testing.B)   { benchDial(b, 4, true) }
func BenchmarkDialV4Unvalidated(b *testing.B) { benchDial(b, 4, false) }
func BenchmarkDialV3(b *testing.B)            { benchDial(b, 3, true) }
