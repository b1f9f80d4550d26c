package tick

import (
	"bytes"
	"runtime/trace"
	"testing"
)

// TestTicksAreTraceRegions: in an execution trace every tick is a region
// named RegionTick, so a trace shows where each tick began and ended.
func TestTicksAreTraceRegions(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("a trace is already running (go test -trace?): %v", err)
	}
	l := New(Config{Clock: newFakeClock()})
	ran := 0
	runUntil(t, l, func(Tick) bool { ran++; return ran == 3 }, nil)
	trace.Stop()
	if !bytes.Contains(buf.Bytes(), []byte(RegionTick)) {
		t.Fatalf("a trace of %d ticks has no region %q", ran, RegionTick)
	}
}
