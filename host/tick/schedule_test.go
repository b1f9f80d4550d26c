package tick

import (
	"testing"
	"time"
)

func TestScheduleDueThrough(t *testing.T) {
	for _, rate := range []int64{1, 7, 60, 64, 128, 999, MaxRate} {
		s := schedule{anchor: epoch, rate: rate}
		if got := s.dueThrough(epoch.Add(-1)); got != -1 {
			t.Errorf("rate %d: dueThrough before the anchor = %d, want -1", rate, got)
		}
		for _, e := range []time.Duration{0, 1, time.Second/time.Duration(rate) - 1, time.Second / time.Duration(rate),
			time.Second - 1, time.Second, 3*time.Second + 333_333_333, 1000*time.Hour + 17} {
			now := epoch.Add(e)
			k := s.dueThrough(now)
			if s.at(k).After(now) || !s.at(k+1).After(now) {
				t.Errorf("rate %d, now +%v: dueThrough = %d at +%v, next at +%v", rate, e, k, s.at(k).Sub(epoch), s.at(k+1).Sub(epoch))
			}
		}
	}
}

func TestScheduleAdvanceKeepsSlots(t *testing.T) {
	s := schedule{anchor: epoch, rate: 60, next: 1}
	for n := int64(1); n <= 600; n++ {
		if got, want := s.at(s.next), slotAt(n, 60); !got.Equal(want) {
			t.Fatalf("slot %d at %v, want %v", n, got, want)
		}
		s.advance()
	}
	if s.next >= s.rate {
		t.Errorf("next %d not re-anchored", s.next)
	}
}
