// Package metricset holds the values of a module's declared metrics
// (module.Manifest.Metrics) behind Host.SetMetric and Host.AddMetric, for the
// server's module host and the plugin SDK alike: one set of rules (declared
// names only, counters never go down) and a record of what changed.
package metricset

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/module"
)

// ErrUnknown is returned for a metric the manifest does not declare.
var ErrUnknown = errors.New("unknown metric (declare it in Manifest.Metrics)")

// Set is one module's metric values. It is not safe for concurrent use.
type Set struct {
	specs  []module.MetricSpec
	index  map[string]int
	values []float64
	dirty  []bool
}

// New checks the declarations (module.CheckMetrics) and returns a Set with
// every value 0 and marked changed.
func New(specs []module.MetricSpec) (*Set, error) {
	if err := module.CheckMetrics(specs); err != nil {
		return nil, err
	}
	s := &Set{specs: specs, index: make(map[string]int, len(specs)),
		values: make([]float64, len(specs)), dirty: make([]bool, len(specs))}
	for i, sp := range specs {
		s.index[sp.Name] = i
		s.dirty[i] = true // the first report carries every value
	}
	return s, nil
}

// Set sets a metric; a counter cannot go down.
func (s *Set) Set(name string, value float64) error {
	i, ok := s.index[name]
	if !ok {
		return fmt.Errorf("metric %q: %w", name, ErrUnknown)
	}
	if s.specs[i].Kind == module.MetricCounter && value < s.values[i] {
		return fmt.Errorf("metric %q is a counter: it cannot go down from %g to %g", name, s.values[i], value)
	}
	if s.values[i] != value {
		s.values[i], s.dirty[i] = value, true
	}
	return nil
}

// Add adds delta to a metric.
func (s *Set) Add(name string, delta float64) error {
	i, ok := s.index[name]
	if !ok {
		return fmt.Errorf("metric %q: %w", name, ErrUnknown)
	}
	return s.Set(name, s.values[i]+delta)
}

// Changed calls fn for every metric changed since the last call, in
// declaration order, and clears the marks.
func (s *Set) Changed(fn func(index int, value float64)) {
	for i, d := range s.dirty {
		if d {
			fn(i, s.values[i])
			s.dirty[i] = false
		}
	}
}

// Values returns every metric with its value.
func (s *Set) Values() []module.MetricValue {
	out := make([]module.MetricValue, len(s.specs))
	for i, sp := range s.specs {
		out[i] = module.MetricValue{MetricSpec: sp, Value: s.values[i]}
	}
	return out
}
