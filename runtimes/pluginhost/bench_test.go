package pluginhost_test

import (
	"encoding/binary"
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The module-path benchmarks measure messages/s from the transport's
// receive handler to the module's send: the validated message is copied
// into the bounded inbox, drained on a tick, handed to the handler — across
// the process boundary in one batch RPC for the plugin, by a function call
// for the in-process Go module — and its reply goes out through Host.Send
// to the transport. The transport is a counter (the UDP path is measured
// by the host benchmarks); everything between is the real code.

// countingTransport is the network side of the manager: it keeps the
// handlers the manager installs and counts what the module sends.
type countingTransport struct {
	reg      *wire.Registry
	ctr      netstack.Counters
	handlers map[wire.MessageType]netstack.Handler
	sent     int
}

func (t *countingTransport) Handle(mt wire.MessageType, h netstack.Handler) { t.handlers[mt] = h }
func (t *countingTransport) Send(uint32, wire.MessageType, wire.Channel, []byte) error {
	t.sent++
	return nil
}
func (t *countingTransport) BroadcastExcept(uint32, wire.MessageType, wire.Channel, []byte) error {
	return nil
}
func (t *countingTransport) Kick(uint32, wire.DisconnectReason, string) error { return nil }
func (t *countingTransport) ClientStats(uint32) (netstack.Stats, bool)        { return netstack.Stats{}, true }
func (t *countingTransport) ChannelBinding(uint32) ([32]byte, bool)           { return [32]byte{}, true }
func (t *countingTransport) Registry() *wire.Registry                         { return t.reg }
func (t *countingTransport) Counters() *netstack.Counters                     { return &t.ctr }

func pluginEchoSpec(b *testing.B) supervisor.Spec {
	path := testplugin.Build(b, "./host/testdata/plugins/echo2")
	return supervisor.Spec{Source: path, Kind: "plugin", New: func() (module.Module, error) {
		return pluginhost.New(pluginhost.Config{Path: path, Log: slog.New(slog.DiscardHandler), HangTimeout: 5 * time.Second})
	}}
}

// benchPath pushes batch messages per tick through the module path.
func benchPath(b *testing.B, spec supervisor.Spec, batch int) {
	tr := &countingTransport{reg: gamemsg.NewRegistry(), handlers: map[wire.MessageType]netstack.Handler{}}
	mgr := supervisor.NewManager(supervisor.Config{Transport: tr, Log: slog.New(slog.DiscardHandler), DataDir: b.TempDir(), InboxCapacity: 1 << 16,
		ClientMessagesPerTick: 1 << 20}) // one client sends the whole batch
	if _, err := mgr.Load(spec); err != nil {
		b.Fatal(err)
	}
	defer mgr.UnloadAll()
	mgr.ClientAdmitted(module.ClientInfo{ID: 1, Name: "bench"})
	h := tr.handlers[1200]
	hdr := &wire.Header{Type: 1200, Channel: wire.Reliable, SenderID: 1}
	msg := make([]byte, 8)
	now := time.Unix(0, 0)
	step := func() {
		now = now.Add(time.Millisecond)
		mgr.Step(module.Tick{Number: uint64(now.UnixMilli()), DT: time.Millisecond, Now: now}, time.Second)
	}
	step() // the admission
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		for i := range n {
			binary.LittleEndian.PutUint32(msg, uint32(done+i))
			h(1, hdr, msg)
		}
		step()
		done += n
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if tr.sent != b.N {
		b.Fatalf("the module sent %d replies for %d messages", tr.sent, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkPathGo: inbox → in-process Go handler → Send, 1000 messages a tick.
func BenchmarkPathGo(b *testing.B) { benchPath(b, testplugin.GoEcho(), 1000) }

// BenchmarkPathPlugin: inbox → one batch RPC a tick → plugin handler →
// actions → Send, 1000 messages a tick.
func BenchmarkPathPlugin(b *testing.B) { benchPath(b, pluginEchoSpec(b), 1000) }

// BenchmarkPathPlugin100: the same with 100 messages a tick.
func BenchmarkPathPlugin100(b *testing.B) { benchPath(b, pluginEchoSpec(b), 100) }

// BenchmarkEmptyTick: the round trip of one Step with no events.
func BenchmarkEmptyTick(b *testing.B) {
	m, err := pluginhost.New(pluginhost.Config{Path: testplugin.Build(b, "./examples/greeter"), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Load(newStubHost()); err != nil {
		b.Fatal(err)
	}
	defer m.Unload()
	b.ResetTimer()
	for i := range b.N {
		if err := m.Step(tick(uint64(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
}
