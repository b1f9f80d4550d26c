package pluginhost

import (
	"fmt"
	"slices"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

var _ module.MetricsSource = (*Module)(nil)

// metricsFromPB reads and checks the manifest's metric declarations.
func metricsFromPB(p *pluginv1.Manifest) ([]module.MetricValue, error) {
	specs := make([]module.MetricSpec, 0, len(p.GetMetrics()))
	for _, pm := range p.GetMetrics() {
		specs = append(specs, module.MetricSpec{Name: pm.GetName(), Help: pm.GetHelp(), Kind: module.MetricKind(pm.GetKind())})
	}
	if err := module.CheckMetrics(specs); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	vals := make([]module.MetricValue, len(specs))
	for i, s := range specs {
		vals[i].MetricSpec = s
	}
	return vals, nil
}

// applyMetrics takes the values a Step response carries; an index outside
// the manifest's declarations is ignored (the SDK never sends one).
func (m *Module) applyMetrics(vals []*pluginv1.MetricValue) {
	for _, v := range vals {
		if i := int(v.GetIndex()); i < len(m.metrics) {
			m.metrics[i].Value = v.GetValue()
		}
	}
}

// Metrics returns the module's declared metrics with their latest values
// (game thread).
func (m *Module) Metrics() []module.MetricValue { return slices.Clone(m.metrics) }
