package congestion

import (
	"testing"
	"time"
	"unsafe"
)

// TestEstimatorIsSmall: every paced session holds an Estimator, so it
// keeps its marker rings out of line, grown only as its markers need.
func TestEstimatorIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(Estimator{}); n > 768 {
		t.Fatalf("an Estimator is %d bytes; want at most 768", n)
	}
}

// TestIdleEstimatorKeepsFewMarkers: a session that only answers its
// client's heartbeats sends a marker a second; its rings stay at two
// slots each, and its estimates are still taken.
func TestIdleEstimatorKeepsFewMarkers(t *testing.T) {
	e := New(Config{})
	now := time.Unix(1000, 0)
	for i := range 60 {
		e.Sent(60)
		e.Mark(uint32(i+1), now)
		now = now.Add(40 * time.Millisecond)
		if !e.Echo(uint32(i+1), now) {
			t.Fatalf("marker %d not taken back", i+1)
		}
		now = now.Add(960 * time.Millisecond)
	}
	if len(e.markers) > minMarkerSlots || len(e.echoed) > minMarkerSlots {
		t.Fatalf("rings of %d and %d markers for a marker a second", len(e.markers), len(e.echoed))
	}
	if e.SRTT() != 40*time.Millisecond {
		t.Fatalf("SRTT %v, want 40ms", e.SRTT())
	}
	if e.bwSample == 0 {
		t.Fatal("no rate sample from markers a second apart")
	}
}

// TestBusyEstimatorGrowsItsRings: markers every 100 ms on a 350 ms round
// trip keep four awaiting their echo, and a rate sample may span a
// second: the rings grow to hold them, and no marker counts lost.
func TestBusyEstimatorGrowsItsRings(t *testing.T) {
	e := New(Config{})
	now := time.Unix(1000, 0)
	const rtt = 350 * time.Millisecond
	var pending []uint32
	var sentAt []time.Time
	for i := range 100 {
		e.Sent(1200)
		e.Mark(uint32(i+1), now)
		pending, sentAt = append(pending, uint32(i+1)), append(sentAt, now)
		now = now.Add(ProbeInterval)
		for len(pending) > 0 && now.Sub(sentAt[0]) >= rtt {
			if !e.Echo(pending[0], sentAt[0].Add(rtt)) {
				t.Fatalf("marker %d not taken back", pending[0])
			}
			pending, sentAt = pending[1:], sentAt[1:]
		}
	}
	if e.lost != 0 {
		t.Fatalf("%d markers counted lost", e.lost)
	}
	if len(e.markers) != 4 || len(e.echoed) != markerSlots {
		t.Fatalf("rings of %d and %d markers, want 4 and %d", len(e.markers), len(e.echoed), markerSlots)
	}
	if bw := e.Bandwidth(now); bw < 11000 || bw > 13000 {
		t.Fatalf("bandwidth %.0f B/s, want about 12,000", bw)
	}
}
