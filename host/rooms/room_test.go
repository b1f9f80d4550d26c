package rooms

import (
	"testing"
	"time"
)

func TestClockStandsStillWhileTheRoomDoesNotRun(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var c clock
	c.advance(t0, true)
	c.advance(t0.Add(time.Second), true)
	c.advance(t0.Add(3*time.Second), false) // waiting or paused for 2 s
	if want := t0.Add(time.Second); !c.at.Equal(want) {
		t.Fatalf("after a pause the clock reads %v, want %v", c.at.Sub(t0), want.Sub(t0))
	}
	c.advance(t0.Add(4*time.Second), true)
	if want := t0.Add(2 * time.Second); !c.at.Equal(want) {
		t.Errorf("running again the clock reads %v, want %v", c.at.Sub(t0), want.Sub(t0))
	}
}
