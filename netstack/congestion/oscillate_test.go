package congestion

import (
	"testing"
	"time"
)

// TestAGameBetweenBacklogsKeepsTheQueueShort: a game that wants more than
// a jittery 256 kbit/s link and sends less while it is told it is
// backlogged (as the deathmatch module thins what it sends) has spells
// of sending all it has between its backlogs. Its estimate is the link's,
// measured while it was held: those spells must not let its next burst
// fill the bottleneck's queue.
func TestAGameBetweenBacklogsKeepsTheQueueShort(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 32_000, delay: 300 * time.Millisecond, jitter: 160 * time.Millisecond, limit: 32_000 * 0.45, loss: 0.15}
	_, now := run(t, e, l, 43_000, 10*time.Second, t0) // converge
	l.reset()
	var sent float64
	for range 20 {
		var got float64
		got, now = run(t, e, l, 43_000, 1500*time.Millisecond, now)
		sent += got * 1.5
		got, now = run(t, e, l, 20_000, 1500*time.Millisecond, now)
		sent += got * 1.5
	}
	if q := l.meanQueue(); q > 60*time.Millisecond || l.maxQ > 250*time.Millisecond {
		t.Errorf("bottleneck queue %v on average, at most %v; want ≤ 60ms and ≤ 250ms", q, l.maxQ)
	}
	if rate := sent / 60; rate < 0.7*(43_000+20_000)/2 {
		t.Errorf("sent %.0f B/s; the game's spells below the link must pass", rate)
	}
}

// TestAHeldEstimateStaysPacedBetweenBacklogs: a sender whose estimate
// was measured while the pacer held it (it wanted more than the link) and
// that then sends all it has for a round trip or two is still paced as one
// with more to send (cruising under the estimate): its estimate is the
// link's, not its own rate, and twice it would let the game's next burst
// into the bottleneck's queue.
func TestAHeldEstimateStaysPacedBetweenBacklogs(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 32_000, delay: 300 * time.Millisecond, jitter: 160 * time.Millisecond, limit: 32_000 * 0.45, loss: 0.15}
	_, now := run(t, e, l, 43_000, 15*time.Second, t0) // held: it wants more than the link
	_, now = run(t, e, l, 8_000, time.Second, now)
	bw := e.Bandwidth(now)
	if !e.appLimited || now.Sub(e.appSince) < e.srtt {
		t.Fatalf("the sender sent all it had for only %v (srtt %v); want over a round trip", now.Sub(e.appSince), e.srtt)
	}
	if r := e.Rate(now); r > probeGain*bw {
		t.Errorf("rate %.0f B/s over the estimate %.0f B/s measured while held; want the cruise (0.9) or a probe (1.25) only one round in six", r, bw)
	}
}
