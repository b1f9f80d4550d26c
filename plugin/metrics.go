package plugin

import (
	"fmt"

	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// ErrUnknownMetric is returned for a metric the manifest does not declare.
var ErrUnknownMetric = metricset.ErrUnknown

// Metrics of a plugin that serves many rooms (ServeRooms) are the
// process's, summed over its rooms as the server sums the instances of a
// module that runs one per room: each room keeps its own share of every
// metric — what it set, or added — and the process reports the sum. A
// room that closes takes its gauges' shares with it; a counter keeps what
// the room counted (counters never go down). A plugin served with Serve
// has one room, whose share is the whole.

func (r *runtime) SetMetric(name string, value float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	i, err := r.metricIndex(name)
	if err != nil {
		return err
	}
	delta := value - r.shares[i]
	if delta < 0 && r.manifest.Metrics[i].Kind == module.MetricCounter {
		return fmt.Errorf("metric %q is a counter: it cannot go down from %g to %g", name, r.shares[i], value)
	}
	if err := r.metrics.Add(name, delta); err != nil {
		return err
	}
	r.shares[i] = value
	return nil
}

func (r *runtime) AddMetric(name string, delta float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	i, err := r.metricIndex(name)
	if err != nil {
		return err
	}
	return r.SetMetric(name, r.shares[i]+delta)
}

// metricIndex is the manifest index of a declared metric; it makes the
// room's shares on first use.
func (r *runtime) metricIndex(name string) (int, error) {
	for i, m := range r.manifest.Metrics {
		if m.Name == name {
			if r.shares == nil {
				r.shares = make([]float64, len(r.manifest.Metrics))
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("metric %q: %w", name, ErrUnknownMetric)
}

// dropGauges takes a closing room's gauges out of the process's sums.
func (r *runtime) dropGauges() {
	for i, v := range r.shares {
		if m := r.manifest.Metrics[i]; m.Kind == module.MetricGauge && v != 0 {
			_ = r.metrics.Add(m.Name, -v) // a gauge: any value is allowed
			r.shares[i] = 0
		}
	}
}

// metricUpdates returns the values that changed since the last call.
func (r *shared) metricUpdates() []*pluginv1.MetricValue {
	var out []*pluginv1.MetricValue
	r.metrics.Changed(func(i int, v float64) {
		out = append(out, &pluginv1.MetricValue{Index: uint32(i), Value: v})
	})
	return out
}

func metricsToPB(specs []module.MetricSpec) []*pluginv1.MetricSpec {
	out := make([]*pluginv1.MetricSpec, len(specs))
	for i, s := range specs {
		out[i] = &pluginv1.MetricSpec{Name: s.Name, Help: s.Help, Kind: pluginv1.MetricKind(s.Kind)}
	}
	return out
}
