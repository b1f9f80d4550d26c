package ops

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
)

func TestHistoryKeepsTheNewest(t *testing.T) {
	h := NewHistory(3)
	if len(h.Samples()) != 0 {
		t.Fatal("a new history has samples")
	}
	for i := range 5 {
		h.Add(Sample{Players: i})
	}
	got := h.Samples()
	if len(got) != 3 || got[0].Players != 2 || got[2].Players != 4 {
		t.Errorf("samples %+v, want players 2, 3, 4", got)
	}
}

// fixedSource is a Source whose snapshot the test sets.
type fixedSource struct{ snap Snapshot }

func (f *fixedSource) Snapshot() Snapshot { return f.snap }

func netCounters(in, out, dropped uint64) []netstack.CounterSample {
	return []netstack.CounterSample{
		{Family: "bytes_received_total", Value: in}, {Family: "bytes_sent_total", Value: out},
		{Family: "datagrams_dropped_total", LabelName: "reason", LabelValue: "security", Value: dropped},
		{Family: "inbox_drops_total", Value: 1},
	}
}

func TestSamplerRates(t *testing.T) {
	src := &fixedSource{Snapshot{Players: 2, Net: netCounters(1000, 500, 0)}}
	rec := NewTickRecorder(16 * time.Millisecond)
	p := sampler{src: src, tick: rec, hist: NewHistory(10)}
	t0 := time.Unix(100, 0)
	p.sample(t0)
	if len(p.hist.Samples()) != 0 {
		t.Fatal("the first sample is only a baseline")
	}
	rec.Observe(t0, 2*time.Millisecond)
	rec.Observe(t0, 4*time.Millisecond)
	rec.Observe(t0, 20*time.Millisecond) // an overrun
	src.snap = Snapshot{Players: 3, Net: netCounters(3000, 1500, 4)}
	p.sample(t0.Add(2 * time.Second))
	s := p.hist.Samples()[0]
	if s.Players != 3 || s.BytesIn != 1000 || s.BytesOut != 500 || s.Drops != 2 {
		t.Errorf("sample %+v: want 3 players, 1000 B/s in, 500 out, 2 drops/s", s)
	}
	if s.TickAvgMS < 8.66 || s.TickAvgMS > 8.67 || s.TickPeakMS != 20 {
		t.Errorf("tick avg %v peak %v, want 8.67 and 20", s.TickAvgMS, s.TickPeakMS)
	}
	if rec.Overruns() != 1 {
		t.Errorf("overruns %d, want 1", rec.Overruns())
	}
	p.sample(t0.Add(3 * time.Second))
	if s := p.hist.Samples()[1]; s.TickPeakMS != 0 || s.TickAvgMS != 0 {
		t.Errorf("a second without ticks: %+v", s)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	src := &fixedSource{Snapshot{Serving: true, Modules: []Module{{Name: "mmo", State: StateRunning}}}}
	rec := NewTickRecorder(16 * time.Millisecond)
	start := time.Unix(1000, 0)
	s := &Server{cfg: Config{Source: src, Tick: rec, Stall: 5 * time.Second}, started: start}
	check := func(at time.Duration, wantHealthy, wantReady bool) {
		t.Helper()
		h, why := s.health(start.Add(at))
		r, rwhy := s.ready(start.Add(at))
		if h != wantHealthy || r != wantReady {
			t.Errorf("at %v: healthy %v (%s), ready %v (%s); want %v, %v", at, h, why, r, rwhy, wantHealthy, wantReady)
		}
	}
	check(time.Second, true, false) // starting: alive, not ready
	check(6*time.Second, false, false)
	rec.Observe(start.Add(6*time.Second), time.Millisecond)
	check(7*time.Second, true, true)
	check(11*time.Second+time.Millisecond, false, false) // stuck for more than 5 s
	rec.Observe(start.Add(12*time.Second), time.Millisecond)
	src.snap.Modules[0].State = StateRestarting
	check(12*time.Second, true, false)
	src.snap.Modules[0].State = StateRunning
	src.snap.Serving = false
	check(12*time.Second, false, false)
}

func TestModuleMetricName(t *testing.T) {
	for _, tc := range [][3]string{
		{"mmo", "logins_total", "sparkhost_mmo_logins_total"},
		{"capture-the-flag", "captures_total", "sparkhost_capture_the_flag_captures_total"},
		{"DM2", "kills_total", "sparkhost_dm2_kills_total"},
	} {
		if got := ModuleMetricName(tc[0], tc[1]); got != tc[2] {
			t.Errorf("ModuleMetricName(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestModuleMetricsNeverBreakTheScrape(t *testing.T) {
	src := &fixedSource{Snapshot{Modules: []Module{
		{Name: "a-b", State: StateRunning, Metrics: []ModuleMetric{{Name: "x_total", Counter: true, Value: 3}}},
		{Name: "a_b", State: StateRunning, Metrics: []ModuleMetric{{Name: "x_total", Counter: true, Value: 4}}},
		{Name: "module", State: StateRunning, Metrics: []ModuleMetric{{Name: "state", Value: 1}}},
		{Name: "ctf", State: StateRunning, Metrics: []ModuleMetric{{Name: "flags_held", Value: 2}}},
	}}}
	reg := newRegistry(src, NewTickRecorder(time.Millisecond), slog.New(slog.DiscardHandler))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 0 {
				got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	if got["sparkhost_a_b_x_total"] != 3 || got["sparkhost_ctf_flags_held"] != 2 {
		t.Errorf("module metrics %v", got)
	}
	for _, f := range fams {
		if f.GetName() == "sparkhost_module_state" {
			for _, m := range f.GetMetric() {
				if len(m.GetLabel()) == 0 {
					t.Error("a module's metric was exported under the server's sparkhost_module_state")
				}
			}
		}
	}
}
