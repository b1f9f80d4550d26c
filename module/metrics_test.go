package module_test

import (
	"testing"

	"github.com/sparkhost/sparkhost/module"
)

func TestCheckMetrics(t *testing.T) {
	for _, tc := range []struct {
		specs []module.MetricSpec
		ok    bool
	}{
		{[]module.MetricSpec{{Name: "logins_total", Kind: module.MetricCounter}, {Name: "players", Kind: module.MetricGauge}}, true},
		{[]module.MetricSpec{{Name: "logins", Kind: module.MetricCounter}}, false},
		{[]module.MetricSpec{{Name: "Players", Kind: module.MetricGauge}}, false},
		{[]module.MetricSpec{{Name: "a-b", Kind: module.MetricGauge}}, false},
		{[]module.MetricSpec{{Name: "x", Kind: 0}}, false},
		{[]module.MetricSpec{{Name: "x", Kind: module.MetricGauge}, {Name: "x", Kind: module.MetricGauge}}, false},
		{make([]module.MetricSpec, module.MaxMetrics+1), false},
	} {
		if err := module.CheckMetrics(tc.specs); (err == nil) != tc.ok {
			t.Errorf("CheckMetrics(%v) = %v, want ok %v", tc.specs, err, tc.ok)
		}
	}
}
