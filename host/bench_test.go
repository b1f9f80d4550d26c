package host_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The module benchmarks measure messages/s from a client's UDP socket through
// the transport, the module's inbox and the game thread into a handler that
// reads two u32 fields and replies, and back to the client: once into Lua
// (testdata/echo2.lua), once into a Go function (supervisor.Funcs), in one run.
// The server ticks at 1000 Hz so that tick waits do not dominate; 128
// messages are kept in flight.

var benchReq, benchRep = testplugin.EchoReq, testplugin.EchoRep

func goEcho() supervisor.Spec { return testplugin.GoEcho() }

func benchModule(b *testing.B, luaFile string, spec []supervisor.Spec) {
	srv, _ := startHost(b, func(c *config.Config) {
		c.Server.TickRate = 1000
		c.Match.ReplicationRate = 20
		// The window of messages in flight exceeds the per-client limit
		// of a tick; the benchmark measures the path, not the limit.
		c.Limits.ModuleMessagesPerTick = 100_000
		if luaFile != "" {
			c.Modules.Load = []string{luaFile}
		}
	}, spec...)
	reg := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{benchReq, benchRep} {
		if err := reg.Register("bench", s); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bench", Pin: srv.Pin(), Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	window := benchWindow
	msg := make([]byte, 8)
	sent, got := 0, 0
	send := func() {
		binary.LittleEndian.PutUint32(msg, uint32(sent))
		binary.LittleEndian.PutUint32(msg[4:], uint32(sent*7))
		if err := c.Send(1200, wire.Reliable, msg); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	b.ResetTimer()
	start := time.Now()
	for sent < min(window, b.N) {
		send()
	}
	for got < b.N {
		m, err := c.Receive(ctx)
		if err != nil {
			list, _ := srv.Exec("module list")
			r, d := c.CloseReason()
			st := c.Stats()
			ss := srv.Net().Stats()
			b.Fatalf("after %d of %d replies: %v (close %v %q; retx %d, drops %d, inboxDrops %d)\nserver: %+v\n%s", got, b.N, err, r, d, st.Retransmissions, st.PacketsDropped, st.InboxDrops, ss, list)
		}
		if m.Header.Type != 1201 {
			continue
		}
		got++
		if sent < b.N {
			send()
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	if st := c.Stats(); st.Retransmissions > 0 {
		b.Logf("client retransmissions %d", st.Retransmissions)
	}
}

// BenchmarkModuleLua: UDP → inbox → Lua handler (two reads, one reply).
func BenchmarkModuleLua(b *testing.B) { benchModule(b, "testdata/echo2.lua", nil) }

// BenchmarkModuleGo: the same path into a Go function.
func BenchmarkModuleGo(b *testing.B) { benchModule(b, "", []supervisor.Spec{goEcho()}) }

// BenchmarkModulePlugin: the same path into the Go plugin
// host/testdata/plugins/echo2, one batch RPC per tick.
func BenchmarkModulePlugin(b *testing.B) {
	benchModule(b, testplugin.Build(b, "./host/testdata/plugins/echo2"), nil)
}

// benchWindow is how many messages the module benchmarks keep in flight.
var benchWindow = 128
