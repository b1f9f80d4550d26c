package congestion

import (
	"math/rand/v2"
	"testing"
	"time"
)

// link is a virtual bottleneck: a FIFO drained at rate bytes/s, then a
// fixed delay each way. A marker entering it behind queued bytes leaves
// when they have drained; its echo comes back delay later.
type link struct {
	rate          float64       // bytes/s
	delay         time.Duration // round trip without queue
	jitter        time.Duration // each echo's round trip spread uniformly over ±jitter/2
	rng           *rand.Rand
	loss          float64 // the share of markers (or their echoes) lost at random, after the queue
	queue         float64 // bytes waiting
	limit         float64 // bytes the queue holds; more are dropped
	at            time.Time
	echo          []pendingEcho
	maxQ          time.Duration // the longest wait seen
	qSum          time.Duration // waits of the bytes sent, summed per send
	sends         int
	sent, dropped float64
}

// meanQueue is the mean wait of what was sent since the last reset.
func (l *link) meanQueue() time.Duration { return l.qSum / time.Duration(max(l.sends, 1)) }

func (l *link) reset() { l.maxQ, l.qSum, l.sends, l.sent, l.dropped = 0, 0, 0, 0, 0 }

type pendingEcho struct {
	id uint32
	at time.Time
}

func (l *link) drain(now time.Time) {
	if !l.at.IsZero() {
		l.queue = max(0, l.queue-l.rate*now.Sub(l.at).Seconds())
	}
	l.at = now
}

// send puts n bytes in the queue; false when they were dropped.
func (l *link) send(n int, now time.Time) bool {
	l.drain(now)
	l.sent += float64(n)
	if l.limit > 0 && l.queue+float64(n) > l.limit {
		l.dropped += float64(n)
		return false
	}
	l.queue += float64(n)
	w := time.Duration(l.queue / l.rate * float64(time.Second))
	l.maxQ = max(l.maxQ, w)
	l.qSum += w
	l.sends++
	return true
}

func (l *link) mark(id uint32, now time.Time) {
	l.drain(now)
	if l.limit > 0 && l.queue+1200 > l.limit {
		return // the datagram that carries it is dropped
	}
	wait := time.Duration(l.queue / l.rate * float64(time.Second))
	if l.rng == nil {
		l.rng = rand.New(rand.NewPCG(1, 2))
	}
	if l.rng.Float64() < l.loss {
		return
	}
	if l.jitter > 0 {
		wait += time.Duration((l.rng.Float64() - 0.5) * float64(l.jitter))
	}
	l.echo = append(l.echo, pendingEcho{id, now.Add(wait + l.delay)})
}

// deliver hands e the echoes due by now.
func (l *link) deliver(e *Estimator, now time.Time) {
	keep := l.echo[:0]
	for _, p := range l.echo {
		if p.at.After(now) {
			keep = append(keep, p)
			continue
		}
		e.Echo(p.id, p.at)
	}
	l.echo = keep
}

// run drives a paced sender that wants want bytes/s through l for d in
// 10 ms flushes, as a session does, and returns what it sent per second.
func run(t *testing.T, e *Estimator, l *link, want float64, d time.Duration, start time.Time) (sentRate float64, end time.Time) {
	t.Helper()
	st := senders[e]
	if st == nil {
		st = &sender{}
		senders[e] = st
	}
	p, backlog, id := &st.p, &st.backlog, &st.id
	var sent float64
	now := start
	for ; now.Sub(start) < d; now = now.Add(10 * time.Millisecond) {
		l.deliver(e, now)
		p.Refill(now, e.Rate(now), 1200)
		*backlog = min(*backlog+want*0.01, want) // stale state is superseded: at most a second's worth waits
		for *backlog >= 1 && p.Allows(1) && e.InFlightAllows(now, int(min(*backlog, 1200))) {
			n := int(min(*backlog, 1200))
			p.Spend(n)
			e.Sent(n)
			l.send(n, now)
			*backlog -= float64(n)
			sent += float64(n)
		}
		e.SetAppLimited(*backlog < 1, now)
		st.steps++
		if *backlog >= 1 {
			st.held++
		}
		if e.ProbeDue(now) {
			*id++
			e.Mark(*id, now)
			l.mark(*id, now)
		}
	}
	return sent / d.Seconds(), now
}

var t0 = time.Unix(1000, 0)

// sender is a paced sender's state between runs of one Estimator.
type sender struct {
	p           Pacer
	backlog     float64
	id          uint32
	steps, held int // flushes, and those that left some waiting
}

var senders = map[*Estimator]*sender{}

// TestEstimateFollowsAnApplicationLimitedSender: a game sending 10 KB/s
// over a 1 MB/s link sees no queue, and the pacer leaves it room.
func TestEstimateFollowsAnApplicationLimitedSender(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 1e6, delay: 150 * time.Millisecond}
	got, now := run(t, e, l, 10_000, 10*time.Second, t0)
	if got < 9_500 {
		t.Errorf("sent %.0f B/s; the pacer held back a sender far below the link", got)
	}
	if s := e.State(); s != Free {
		t.Errorf("state %v; want free (no queue)", s)
	}
	if bw := e.Bandwidth(now); bw < 8_000 || bw > 20_000 {
		t.Errorf("bandwidth %.0f B/s; want about the 10 kB/s sent (application-limited samples)", bw)
	}
	if r := e.Rate(now); r < DefaultInitialRate {
		t.Errorf("rate %.0f; want at least the initial rate while free", r)
	}
	if d := e.Snapshot(now).SRTT; d < 145*time.Millisecond || d > 170*time.Millisecond {
		t.Errorf("srtt %v; want about 150ms", d)
	}
}

// TestPacingFitsANarrowLink: a sender wanting 40 kB/s over a 12 kB/s link
// (a 96 kbit/s phone link) is paced to the link: the estimate converges on
// the link's rate and the bottleneck queue stays short.
func TestPacingFitsANarrowLink(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 12_000, delay: 300 * time.Millisecond, limit: 12_000 * 0.4}
	_, now := run(t, e, l, 40_000, 10*time.Second, t0) // converge
	l.reset()
	got, now := run(t, e, l, 40_000, 20*time.Second, now)
	if bw := e.Bandwidth(now); bw < 0.8*12_000 || bw > 1.3*12_000 {
		t.Errorf("bandwidth %.0f B/s; want the link's 12000 (±20%%)", bw)
	}
	if got < 0.75*12_000 || got > 1.1*12_000 {
		t.Errorf("sent %.0f B/s into a 12000 B/s link; want about the link's rate (%+v)", got, e.Snapshot(now))
	}
	// One 1200-byte datagram is 100 ms of this link: the queue is never
	// much below that while the sender has more to send.
	if q := l.meanQueue(); q > 200*time.Millisecond {
		t.Errorf("bottleneck queue %v on average (at most %v); want ≤ 200ms once paced", q, l.maxQ)
	}
	if d := l.dropped / l.sent; d > 0.05 {
		t.Errorf("the bottleneck dropped %.1f%% of what was sent; want ≤ 5%% once paced", 100*d)
	}
}

// TestPacingKeepsAJitteryLinksQueueShort: a game wanting twice what a
// 256 kbit/s link with 300±80 ms round trips carries keeps the
// bottleneck's queue short: round-trip spread must not pass for
// bandwidth (the samples span long enough), and the steady rate stays
// under the estimate. 15% of the markers are lost at random (8% each
// way), as on the rig's bad link.
func TestPacingKeepsAJitteryLinksQueueShort(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 32_000, delay: 300 * time.Millisecond, jitter: 160 * time.Millisecond, limit: 32_000 * 0.4, loss: 0.15}
	_, now := run(t, e, l, 64_000, 10*time.Second, t0) // converge
	l.reset()
	got, now := run(t, e, l, 64_000, 60*time.Second, now)
	if bw := e.Bandwidth(now); bw > 1.15*32_000 {
		t.Errorf("bandwidth %.0f B/s; want at most the link's 32000 (+15%%)", bw)
	}
	if got < 0.7*32_000 {
		t.Errorf("sent %.0f B/s into a 32000 B/s link; want at least 70%% of it", got)
	}
	if q := l.meanQueue(); q > 60*time.Millisecond || l.maxQ > 250*time.Millisecond {
		t.Errorf("bottleneck queue %v on average, at most %v; want ≤ 60ms and ≤ 250ms", q, l.maxQ)
	}
	if d := l.dropped / l.sent; d > 0.01 {
		t.Errorf("the bottleneck dropped %.1f%% of what was sent; want ≤ 1%%", 100*d)
	}
}

// TestUnpacedOverloadIsSeen: a sender that ignores the pacer fills the
// queue, and the estimator says drain.
func TestUnpacedOverloadIsSeen(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 12_000, delay: 300 * time.Millisecond}
	now := t0
	var id uint32
	for i := 0; i < 300; i++ {
		l.deliver(e, now)
		e.Sent(240)
		l.send(240, now) // 24 kB/s, twice the link
		if e.ProbeDue(now) {
			id++
			e.Mark(id, now)
			l.mark(id, now)
		}
		now = now.Add(10 * time.Millisecond)
	}
	if s := e.State(); s != Drain {
		t.Errorf("state %v with a queue of %v; want drain", s, e.QueueDelay())
	}
	if bw := e.Bandwidth(now); bw > 1.3*12_000 {
		t.Errorf("bandwidth %.0f; the samples must not exceed the link's 12000 by much", bw)
	}
	if r := e.Rate(now); r >= 12_000 {
		t.Errorf("rate %.0f; want below the link's rate to drain", r)
	}
}

// TestJitterIsNotAQueue: round trips spread ±80 ms around 300 ms, without a
// queue, leave the path free.
func TestJitterIsNotAQueue(t *testing.T) {
	e := New(Config{})
	now := t0
	spread := []time.Duration{-80, 40, -10, 70, -60, 20, 80, -30, 0, 50, -70, 10}
	for i := range 200 {
		e.RTT(300*time.Millisecond+spread[i%len(spread)]*time.Millisecond, now)
		now = now.Add(100 * time.Millisecond)
	}
	if s := e.State(); s != Free {
		t.Errorf("state %v (queue %v, target %v); jitter alone is no queue", s, e.QueueDelay(), e.queueTarget())
	}
}

// TestProbeLoss: markers never echoed count as lost.
func TestProbeLoss(t *testing.T) {
	e := New(Config{})
	now := t0
	for i := range uint32(200) {
		e.Mark(i+1, now)
		if i%4 != 0 { // one in four lost
			e.Echo(i+1, now.Add(50*time.Millisecond))
		}
		now = now.Add(100 * time.Millisecond)
	}
	if l := e.Snapshot(now).ProbeLoss; l < 0.15 || l > 0.35 {
		t.Errorf("probe loss %.2f; want about 0.25", l)
	}
	if e.Echo(9999, now) {
		t.Error("an unknown probe was taken for a marker")
	}
}

// TestPacer: the bucket starts with a burst, earns rate × time, never
// holds more than the burst, and may be overdrawn.
func TestPacer(t *testing.T) {
	var p Pacer
	p.Refill(t0, 100_000, 1200)
	if p.Tokens() != 2400 { // 10 ms at 100 kB/s is 1000: two datagrams
		t.Fatalf("first burst %v; want 2400", p.Tokens())
	}
	p.Spend(5000)
	if p.Allows(1) {
		t.Fatal("allows with a debt")
	}
	if w := p.Wait(1200, 100_000); w != 38*time.Millisecond {
		t.Errorf("wait %v; want 38ms", w)
	}
	p.Refill(t0.Add(time.Second), 100_000, 1200)
	if p.Tokens() != 2400 {
		t.Errorf("after a second %v; want the burst 2400", p.Tokens())
	}
}

// TestAnApplicationLimitedSenderIsNotHeldAfterAQueue: once a queue was
// seen, a free path is probed gently while the pacer limits the sender,
// but a sender that sends all it has gets room again (its estimate is its
// own rate, not the link's).
func TestAnApplicationLimitedSenderIsNotHeldAfterAQueue(t *testing.T) {
	e := New(Config{})
	now := t0
	for i := range 40 { // a queue builds: 300 ms, then 300 + 10 ms per sample
		e.RTT(300*time.Millisecond+time.Duration(max(0, i-10))*10*time.Millisecond, now)
		e.Rate(now)
		now = now.Add(100 * time.Millisecond)
	}
	if e.congestedAt.IsZero() {
		t.Fatalf("no queue seen (queue %v, target %v)", e.QueueDelay(), e.queueTarget())
	}
	for range 20 { // the queue is gone
		e.RTT(300*time.Millisecond, now)
		now = now.Add(100 * time.Millisecond)
	}
	e.SetAppLimited(false, now)
	now = now.Add(time.Second)
	held := e.Rate(now)
	e.SetAppLimited(true, now)
	now = now.Add(time.Second)
	if free := e.Rate(now); free < DefaultInitialRate || free <= held {
		t.Errorf("rate %.0f application-limited, %.0f pacer-limited; want the first at least the initial rate", free, held)
	}
}

// TestStartEndsBeforeTheQueueFills: a sender that wants twice a jittery
// link from its first second ends its start (twice the estimate) when the
// estimate stops growing, before the bottleneck's queue fills: a match's
// sessions start together and would fill it together.
func TestStartEndsBeforeTheQueueFills(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 32_000, delay: 300 * time.Millisecond, jitter: 160 * time.Millisecond, limit: 32_000 * 0.4, loss: 0.15}
	run(t, e, l, 64_000, 10*time.Second, t0)
	// The first second, before any estimate, goes at the initial rate,
	// which is this link's: some queue is unavoidable, a full one is not.
	if l.maxQ > 350*time.Millisecond || l.dropped > 0 {
		t.Errorf("bottleneck queue reached %v, %.0f bytes dropped in the first 10 s; want ≤ 350ms and none", l.maxQ, l.dropped)
	}
}

// TestAGameUnderItsLinkIsNotHeldAfterAQueue: a game that once wanted more
// than a jittery mobile link (a queue was seen) and then sends far less
// is not held to its own rate: its flushes leave nothing waiting.
func TestAGameUnderItsLinkIsNotHeldAfterAQueue(t *testing.T) {
	e := New(Config{})
	l := &link{rate: 125_000, delay: 150 * time.Millisecond, jitter: 30 * time.Millisecond, limit: 125_000 * 0.2, loss: 0.06}
	_, now := run(t, e, l, 300_000, 5*time.Second, t0) // a queue, then pacing
	_, now = run(t, e, l, 10_000, 5*time.Second, now)
	st := senders[e]
	st.steps, st.held = 0, 0
	got, _ := run(t, e, l, 10_000, 30*time.Second, now)
	if held := float64(st.held) / float64(st.steps); held > 0.02 || got < 0.98*10_000 {
		t.Errorf("sent %.0f B/s of 10000, %.1f%% of flushes left state waiting; want all of it, ≤ 2%%", got, 100*held)
	}
}
