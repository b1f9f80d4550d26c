package plugin

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// MetricKind says how a module metric behaves.
type MetricKind uint8

// Metric kinds.
const (
	Gauge   MetricKind = 1 // a value that goes up and down (players in the mode)
	Counter MetricKind = 2 // a count that only goes up (kills); starts from 0 in a new process
)

// MetricSpec declares one metric of the module: Name is [a-z][a-z0-9_]*, at
// most 64 bytes, and a Counter's ends in _total (Prometheus conventions).
type MetricSpec struct {
	Name, Help string
	Kind       MetricKind
}

// ErrUnknownMetric is returned for a metric the manifest does not declare.
var ErrUnknownMetric = errors.New("unknown metric (declare it in Manifest.Metrics)")

// metrics holds the values of the manifest's metrics and which changed
// since the server last heard of them.
type metrics struct {
	specs  []MetricSpec
	index  map[string]int
	values []float64
	dirty  []bool
}

func newMetrics(specs []MetricSpec) (metrics, error) {
	m := metrics{specs: specs, index: make(map[string]int, len(specs)),
		values: make([]float64, len(specs)), dirty: make([]bool, len(specs))}
	for i, s := range specs {
		if _, dup := m.index[s.Name]; dup {
			return metrics{}, fmt.Errorf("metric %q declared twice", s.Name)
		}
		m.index[s.Name] = i
		m.dirty[i] = true // the first answer carries every value
	}
	return m, nil
}

func (r *runtime) SetMetric(name string, value float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	i, ok := r.metrics.index[name]
	if !ok {
		return fmt.Errorf("metric %q: %w", name, ErrUnknownMetric)
	}
	if r.metrics.specs[i].Kind == Counter && value < r.metrics.values[i] {
		return fmt.Errorf("metric %q is a counter: it cannot go down from %g to %g", name, r.metrics.values[i], value)
	}
	if r.metrics.values[i] != value {
		r.metrics.values[i], r.metrics.dirty[i] = value, true
	}
	return nil
}

func (r *runtime) AddMetric(name string, delta float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	i, ok := r.metrics.index[name]
	if !ok {
		return fmt.Errorf("metric %q: %w", name, ErrUnknownMetric)
	}
	return r.SetMetric(name, r.metrics.values[i]+delta)
}

// metricUpdates returns the values that changed since the last call.
func (r *runtime) metricUpdates() []*pluginv1.MetricValue {
	var out []*pluginv1.MetricValue
	for i, d := range r.metrics.dirty {
		if d {
			out = append(out, &pluginv1.MetricValue{Index: uint32(i), Value: r.metrics.values[i]})
			r.metrics.dirty[i] = false
		}
	}
	return out
}

func metricsToPB(specs []MetricSpec) []*pluginv1.MetricSpec {
	out := make([]*pluginv1.MetricSpec, len(specs))
	for i, s := range specs {
		out[i] = &pluginv1.MetricSpec{Name: s.Name, Help: s.Help, Kind: pluginv1.MetricKind(s.Kind)}
	}
	return out
}
