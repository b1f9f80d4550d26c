package plugin

import (
	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// ErrUnknownMetric is returned for a metric the manifest does not declare.
var ErrUnknownMetric = metricset.ErrUnknown

func (r *runtime) SetMetric(name string, value float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	return r.metrics.Set(name, value)
}

func (r *runtime) AddMetric(name string, delta float64) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	return r.metrics.Add(name, delta)
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
