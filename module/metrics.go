package module

import (
	"errors"
	"fmt"
)

// MetricKind says how a module metric behaves.
type MetricKind uint8

// Metric kinds.
const (
	MetricGauge   MetricKind = iota + 1 // a value that goes up and down
	MetricCounter                       // a count that only goes up (from 0 when the module restarts)
)

// String names the kind as Prometheus does.
func (k MetricKind) String() string {
	switch k {
	case MetricGauge:
		return "gauge"
	case MetricCounter:
		return "counter"
	}
	return "unknown"
}

// MaxMetrics bounds how many metrics one module may declare: each is a
// plain number without labels, so a module's share of the metrics endpoint
// is fixed by its manifest and can never grow per player.
const MaxMetrics = 32

// MetricSpec declares one metric a module reports. The server exports it as
// sparkhost_<module>_<name> (the module name with every character that is
// not a letter or a digit written as "_").
type MetricSpec struct {
	Name string // [a-z][a-z0-9_]*, at most 64 bytes; a counter's ends in _total
	Help string
	Kind MetricKind
}

// MetricValue is one metric with its current value.
type MetricValue struct {
	MetricSpec
	Value float64
}

// MetricsSource is the optional capability of a module that reports
// metrics; Metrics is called on the game thread and returns a copy.
type MetricsSource interface {
	Metrics() []MetricValue
}

// ErrBadMetric is wrapped by CheckMetrics for a declaration it refuses.
var ErrBadMetric = errors.New("bad metric declaration")

// CheckMetrics validates a manifest's metric declarations: at most
// MaxMetrics, well-formed unique names, a known kind, counters named _total.
func CheckMetrics(specs []MetricSpec) error {
	if len(specs) > MaxMetrics {
		return fmt.Errorf("%w: %d metrics, at most %d", ErrBadMetric, len(specs), MaxMetrics)
	}
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		if !validMetricName(s.Name) {
			return fmt.Errorf("%w: name %q must be [a-z][a-z0-9_]*, 1..64 bytes", ErrBadMetric, s.Name)
		}
		if seen[s.Name] {
			return fmt.Errorf("%w: %q declared twice", ErrBadMetric, s.Name)
		}
		seen[s.Name] = true
		switch {
		case s.Kind != MetricGauge && s.Kind != MetricCounter:
			return fmt.Errorf("%w: %q has no kind (gauge or counter)", ErrBadMetric, s.Name)
		case s.Kind == MetricCounter && !hasSuffix(s.Name, "_total"):
			return fmt.Errorf("%w: counter %q must end in _total", ErrBadMetric, s.Name)
		}
	}
	return nil
}

func validMetricName(n string) bool {
	if len(n) < 1 || len(n) > 64 || n[0] < 'a' || n[0] > 'z' {
		return false
	}
	for i := range len(n) {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}
