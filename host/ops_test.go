package host_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// withOps turns the ops listener on, on a free loopback port.
func withOps(c *config.Config) { c.Ops.Listen = "127.0.0.1:0"; c.Ops.StallSeconds = 1 }

func opsURL(t *testing.T, srv *host.Server, path string) string {
	t.Helper()
	var addr string
	eventually(t, "the ops listener", func() bool {
		if a := srv.OpsAddr(); a != nil {
			addr = a.String()
			return true
		}
		return false
	})
	return "http://" + addr + path
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape fetches /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, srv *host.Server) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, opsURL(t, srv, "/metrics"))
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// value is the value of the family's series whose labels include want
// ("k=v" pairs); it fails the test if there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric family %s", name)
	}
series:
	for _, m := range f.GetMetric() {
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			found := false
			for _, l := range m.GetLabel() {
				found = found || l.GetName() == k && l.GetValue() == v
			}
			if !found {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

var echoSchema = wire.Schema{ID: 1500, Name: "Echo", Direction: wire.BothDirections, Channel: wire.Reliable,
	MinLen: 1, MaxLen: 64, StringFieldOffset: wire.NoStringFields}

func echoRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	reg.Register("echo", echoSchema)
	return reg
}

// echoSpec is an in-process module that answers each message with its
// payload: traffic both ways for the counters.
func echoSpec(stall *atomic.Pointer[chan struct{}]) supervisor.Spec {
	return supervisor.Spec{Source: "echo", Kind: "go", New: func() (module.Module, error) {
		return &supervisor.Funcs{
			Manifest: module.Manifest{Name: "echo", Version: "1", Messages: []wire.Schema{echoSchema}},
			OnEvent: func(h module.Host, ev *module.Event) {
				if ev.Kind == module.EventMessage {
					h.Send(ev.Client, ev.Type, ev.Payload)
				}
			},
			OnTick: func(module.Host, module.Tick) {
				if stall == nil {
					return
				}
				if ch := stall.Load(); ch != nil {
					<-*ch // the game thread is stuck here until the test lets go
				}
			},
		}, nil
	}}
}

func TestMetricsWhileClientsPlay(t *testing.T) {
	var stall atomic.Pointer[chan struct{}]
	srv, _ := startHost(t, withOps, echoSpec(&stall))
	alice := dialAs(t, srv, "alice", echoRegistry())
	bob := dialAs(t, srv, "bob", echoRegistry())
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	eventually(t, "the modules published", func() bool { return len(srv.Snapshot().Modules) == 1 })

	before := scrape(t, srv)
	for i := range 20 {
		for _, c := range []interface {
			Send(wire.MessageType, wire.Channel, []byte) error
		}{alice, bob} {
			if err := c.Send(1500, wire.Reliable, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, alice, 1500)
		waitFor(t, bob, 1500)
	}
	var after map[string]*dto.MetricFamily
	eventually(t, "the traffic counted", func() bool {
		after = scrape(t, srv)
		return value(t, after, "sparkhost_net_datagrams_received_total") >= value(t, before, "sparkhost_net_datagrams_received_total")+40
	})
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sparkhost_players", nil, 2},
		{"sparkhost_player_slots", nil, 32},
		{"sparkhost_connections_admitted_total", nil, 2},
		{"sparkhost_net_handshakes_total", nil, 2},
		{"sparkhost_serving", nil, 1},
		{"sparkhost_module_state", []string{"module=echo", "state=running"}, 1},
		{"sparkhost_module_state", []string{"module=echo", "state=failed"}, 0},
		{"sparkhost_module_inbox_capacity", []string{"module=echo"}, 4096},
		{"sparkhost_module_faults_total", []string{"module=echo"}, 0},
		{"sparkhost_net_handshake_refusals_total", []string{"reason=server_full"}, 0},
		{"sparkhost_net_datagrams_dropped_total", []string{"reason=malformed"}, 0},
	} {
		if got := value(t, after, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, name := range []string{"sparkhost_net_bytes_received_total", "sparkhost_net_bytes_sent_total",
		"sparkhost_net_datagrams_sent_total", "sparkhost_ticks_total", "sparkhost_tick_duration_seconds", "sparkhost_module_tick_seconds_total"} {
		if b, a := value(t, before, name), value(t, after, name); !(a > b) {
			t.Errorf("%s did not grow while clients played: %v then %v", name, b, a)
		}
	}
	if h := after["sparkhost_tick_duration_seconds"]; h.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("sparkhost_tick_duration_seconds is a %v, want a histogram", h.GetType())
	}
	// Bounded cardinality: no label carries a player's name or address.
	for name, f := range after {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); v == "alice" || v == "bob" || strings.Contains(v, "127.0.0.1") {
					t.Errorf("%s has a per-player label %s=%q", name, l.GetName(), v)
				}
			}
		}
	}
	if code, body := get(t, opsURL(t, srv, "/readyz")); code != http.StatusOK {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
}

func TestHealthzTurnsUnhealthyWhenTheTickLoopIsBlocked(t *testing.T) {
	var stall atomic.Pointer[chan struct{}]
	srv, _ := startHost(t, withOps, echoSpec(&stall))
	release := make(chan struct{})
	var once atomic.Bool
	let := func() {
		if once.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(let) // runs before the server's cleanup: the game thread must be free to stop
	healthz, readyz := opsURL(t, srv, "/healthz"), opsURL(t, srv, "/readyz")
	eventually(t, "healthy and ready", func() bool {
		c1, _ := get(t, healthz)
		c2, _ := get(t, readyz)
		return c1 == http.StatusOK && c2 == http.StatusOK
	})

	stall.Store(&release) // the next tick blocks in the module
	var body string
	eventually(t, "/healthz to fail", func() bool {
		var code int
		code, body = get(t, healthz)
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "tick loop is stuck") {
		t.Errorf("/healthz said %q", body)
	}
	if code, _ := get(t, readyz); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d while the tick loop is stuck, want 503", code)
	}
	// Metrics still answer while the game thread is stuck: reading them
	// never waits for it.
	done := make(chan struct{})
	go func() { defer close(done); scrape(t, srv) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("/metrics blocked while the game thread was stuck")
	}

	stall.Store(nil)
	let()
	eventually(t, "/healthz to recover", func() bool { code, _ := get(t, healthz); return code == http.StatusOK })
}

// crashingModule crashes at its first tick, as a plugin whose process died
// would: the manager detaches it and restarts it after a backoff.
type crashingModule struct{}

func (crashingModule) Load(module.Host) (module.Manifest, error) {
	return module.Manifest{Name: "crashy", Version: "1"}, nil
}
func (crashingModule) Step(module.Tick, []module.Event) error {
	return fmt.Errorf("process exited: %w", module.ErrCrashed)
}
func (crashingModule) Command(string, []string) (string, error) { return "", nil }
func (crashingModule) Unload() error                            { return nil }

func TestReadyzWaitsForModules(t *testing.T) {
	srv, _ := startHost(t, func(c *config.Config) { withOps(c); c.Modules.RestartBackoff = 60; c.Modules.RestartBackoffMax = 60 },
		supervisor.Spec{Source: "crashy", Kind: "go", New: func() (module.Module, error) { return crashingModule{}, nil }})
	readyz := opsURL(t, srv, "/readyz")
	var body string
	eventually(t, "/readyz to report the module", func() bool {
		var code int
		code, body = get(t, readyz)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "module crashy is restarting")
	})
	if code, _ := get(t, opsURL(t, srv, "/healthz")); code != http.StatusOK {
		t.Errorf("/healthz = %d while a module restarts, want 200: the process is alive", code)
	}
	fams := scrape(t, srv)
	if v := value(t, fams, "sparkhost_module_state", "module=crashy", "state=restarting"); v != 1 {
		t.Errorf("module_state{restarting} = %v", v)
	}
}
