package plugin

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/sparkhost/sparkhost/module"
)

type metricsModule struct{ Base }

func (metricsModule) Manifest() module.Manifest {
	return module.Manifest{Name: "m", Version: "1", Metrics: []module.MetricSpec{
		{Name: "kills_total", Kind: module.MetricCounter}, {Name: "players", Kind: module.MetricGauge},
	}}
}

func TestMetrics(t *testing.T) {
	r, err := newRuntime(metricsModule{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetMetric("players", 1); !errors.Is(err, ErrOutsideCallback) {
		t.Errorf("outside a callback: %v", err)
	}
	r.inCall.Store(true)
	if err := r.AddMetric("kills_total", 2); err != nil {
		t.Fatal(err)
	}
	if err := r.SetMetric("kills_total", 1); err == nil {
		t.Error("a counter went down")
	}
	if err := r.SetMetric("deaths_total", 1); !errors.Is(err, ErrUnknownMetric) {
		t.Errorf("undeclared metric: %v", err)
	}
	first := r.metricUpdates()
	if len(first) != 2 || first[0].GetValue() != 2 || first[1].GetValue() != 0 {
		t.Errorf("first answer carries %v, want every metric", first)
	}
	if more := r.metricUpdates(); len(more) != 0 {
		t.Errorf("unchanged metrics sent again: %v", more)
	}
	r.SetMetric("players", 3)
	r.SetMetric("players", 3)
	if upd := r.metricUpdates(); len(upd) != 1 || upd[0].GetIndex() != 1 || upd[0].GetValue() != 3 {
		t.Errorf("changed metric: %v", upd)
	}
	if _, err := newRuntime(dupMetrics{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a metric declared twice was accepted")
	}
}

type dupMetrics struct{ Base }

func (dupMetrics) Manifest() module.Manifest {
	return module.Manifest{Name: "d", Metrics: []module.MetricSpec{{Name: "x", Kind: module.MetricGauge}, {Name: "x", Kind: module.MetricGauge}}}
}
