package congestion

import (
	"testing"
	"unsafe"
)

// TestEstimatorIsSmall: every paced session holds an Estimator, so its
// marker rings are kept compact (send and echo times as offsets, not
// time.Time values): it stays under 2 KiB.
func TestEstimatorIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(Estimator{}); n > 2048 {
		t.Fatalf("an Estimator is %d bytes; want at most 2048", n)
	}
}
