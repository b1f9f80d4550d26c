package netrig

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestShaperLossRate(t *testing.T) {
	for _, p := range []float64{0, 0.005, 0.03, 0.08, 1} {
		s := newShaper(direction{loss: p}, 7)
		const n = 200_000
		lost := 0
		for i := range n {
			if v, _, _, _ := s.admit(t0.Add(time.Duration(i) * time.Millisecond)); v == lostByProfile {
				lost++
			}
		}
		// 5 standard deviations of a binomial, plus a little.
		got := float64(lost) / n
		if d := got - p; d > 0.002 || d < -0.002 {
			t.Errorf("loss %v: dropped %.4f of %d packets", p, got, n)
		}
	}
}

func TestShaperDelayIsUniformAndInOrder(t *testing.T) {
	d := direction{delay: 75 * time.Millisecond, jitter: 15 * time.Millisecond}
	t.Run("sparse", func(t *testing.T) {
		// Packets further apart than the jitter's span are never held back
		// by the one before: their delays are the profile's own.
		s := newShaper(d, 3)
		var delays []time.Duration
		for i := range 20_000 {
			at := t0.Add(time.Duration(i) * 31 * time.Millisecond)
			_, due, _, _ := s.admit(at)
			delays = append(delays, due.Sub(at))
		}
		sum := Summarize(delays)
		ms := time.Millisecond
		if sum.Min < 60*ms || sum.Max > 90*ms {
			t.Errorf("delays outside 75±15 ms: %s", sum)
		}
		if sum.Mean < 74*ms || sum.Mean > 76*ms || sum.P50 < 74*ms || sum.P50 > 76*ms {
			t.Errorf("delays not centred on 75 ms: %s", sum)
		}
		// A uniform spread of ±15 ms has a standard deviation of 15/√3 ms.
		if sum.Std < 8*ms || sum.Std > 9*ms+500*time.Microsecond {
			t.Errorf("delays not spread uniformly over ±15 ms: %s", sum)
		}
	})
	t.Run("dense", func(t *testing.T) {
		s := newShaper(d, 3)
		var last time.Time
		for i := range 20_000 {
			at := t0.Add(time.Duration(i) * time.Millisecond)
			_, due, _, _ := s.admit(at)
			if due.Before(last) {
				t.Fatalf("packet %d due %v before the one ahead of it (%v)", i, due, last)
			}
			if w := due.Sub(at); w < 60*time.Millisecond || w > 90*time.Millisecond {
				t.Fatalf("packet %d held %v, outside 75±15 ms", i, w)
			}
			last = due
		}
	})
}

func TestShaperReorderLetsLaterPacketsOvertake(t *testing.T) {
	s := newShaper(direction{delay: 10 * time.Millisecond, reorder: 0.1, reorderDelay: 20 * time.Millisecond}, 5)
	type sent struct {
		due       time.Time
		reordered bool
	}
	var all []sent
	for i := range 10_000 {
		_, due, _, r := s.admit(t0.Add(time.Duration(i) * time.Millisecond))
		all = append(all, sent{due, r})
	}
	reordered, overtaken := 0, 0
	for i, p := range all {
		if !p.reordered {
			continue
		}
		reordered++
		if i+1 < len(all) && !all[i+1].reordered && all[i+1].due.Before(p.due) {
			overtaken++
		}
	}
	if got := float64(reordered) / float64(len(all)); got < 0.09 || got > 0.11 {
		t.Errorf("reordered %.3f of packets, want 0.1", got)
	}
	if overtaken < reordered*8/10 {
		t.Errorf("only %d of %d reordered packets were overtaken by the next one", overtaken, reordered)
	}
}

func TestShaperDuplicates(t *testing.T) {
	s := newShaper(direction{duplicate: 0.05}, 9)
	dups := 0
	for i := range 100_000 {
		if _, _, dup, _ := s.admit(t0.Add(time.Duration(i))); dup {
			dups++
		}
	}
	if got := float64(dups) / 100_000; got < 0.048 || got > 0.052 {
		t.Errorf("duplicated %.4f of packets, want 0.05", got)
	}
}

func TestShaperOutage(t *testing.T) {
	s := newShaper(direction{}, 1)
	s.outageUntil = t0.Add(time.Second)
	if v, _, _, _ := s.admit(t0.Add(999 * time.Millisecond)); v != lostByOutage {
		t.Errorf("a packet inside the outage got verdict %d", v)
	}
	if v, _, _, _ := s.admit(t0.Add(time.Second)); v != pass {
		t.Errorf("a packet after the outage got verdict %d", v)
	}
}

func TestShaperIsSeeded(t *testing.T) {
	run := func(seed uint64) []verdict {
		s := newShaper(Mobile.oneWay(), seed)
		var vs []verdict
		for i := range 1000 {
			v, _, _, _ := s.admit(t0.Add(time.Duration(i) * time.Millisecond))
			vs = append(vs, v)
		}
		return vs
	}
	if !slices.Equal(run(11), run(11)) {
		t.Error("the same seed gave different drops")
	}
	if slices.Equal(run(11), run(12)) {
		t.Error("different seeds gave the same drops")
	}
}

func TestProfilesAreValidAndSayWhatTheyAre(t *testing.T) {
	want := map[string]string{
		"none":   "none: 0s RTT, 0% loss, uncapped",
		"home":   "home: 40ms RTT, 0.5% loss, 20 Mbit/s each way (queue 50ms)",
		"mobile": "mobile: 150ms±30ms RTT, 3% loss, 1 Mbit/s each way (queue 200ms)",
		"bad":    "bad: 300ms±80ms RTT, 8% loss, 256 kbit/s each way (queue 400ms)",
	}
	for name, line := range want {
		p, err := ProfileByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		if p.String() != line {
			t.Errorf("%s is %q, want %q", name, p.String(), line)
		}
	}
	if _, err := ProfileByName("lan"); err == nil {
		t.Error("an unknown profile name was accepted")
	}
	for _, bad := range []Profile{{Loss: 1.5}, {Loss: -0.1}, {Delay: 10, Jitter: 20}, {Rate: 100}, {Delay: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
}
