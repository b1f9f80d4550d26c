package web_test

import (
	"context"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkHandshake: a whole v4 handshake (and, over the web transports,
// the QUIC or TCP and HTTP handshakes under it) to the first message (the
// welcome), on loopback; closing is not timed, and the per-address
// handshake budgets are opened wide (every dial comes from 127.0.0.1):
// `go test -run X -bench Handshake ./netstack/transport/web/`.
func BenchmarkHandshake(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			r := startRigWith(b, nil, func(c *netstack.ServerConfig) {
				c.ConnectBudget = ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1 << 20}
				c.PrefixBudget = ratelimit.Config{Burst: 1 << 20, RefillPerSecond: 1 << 20}
			})
			ctx := context.Background()
			for b.Loop() {
				tr, addr, err := r.dialTransport(ctx, kind, web.ClientOptions{})
				if err != nil {
					b.Fatal(err)
				}
				cli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: addr, Name: "bench", Pin: r.srv.Pin(), Transport: tr,
					Registry: r.reg, Welcome: gamemsg.TypeGameStateSync})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cli.Close()
				if tr != nil {
					tr.Close()
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRoundTrip: one small reliable message to the server and its
// echo back, on loopback: `go test -run X -bench RoundTrip ./netstack/transport/web/`.
func BenchmarkRoundTrip(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			r := startRig(b, nil)
			ctx := context.Background()
			tr, addr, err := r.dialTransport(ctx, kind, web.ClientOptions{})
			if err != nil {
				b.Fatal(err)
			}
			cli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: addr, Name: "bench", Pin: r.srv.Pin(), Transport: tr,
				Registry: r.reg, Welcome: gamemsg.TypeGameStateSync})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cli.Close() })
			msg := []byte("ping")
			for b.Loop() {
				if err := cli.Send(typeBulk, wire.ReliableOrdered, msg); err != nil {
					b.Fatal(err)
				}
				cli.Flush()
				for {
					m, err := cli.Receive(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if m.Header.Type == typeBulk {
						break
					}
				}
			}
		})
	}
}
