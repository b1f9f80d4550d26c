package congestion

import "time"

// Defaults of Config.
const (
	// DefaultInitialRate is the pacing rate before the first sample, and
	// the least the pacer allows while the path shows no queue: 32 KiB/s
	// (256 kbit/s), three times what a 16-player deathmatch sends a client,
	// and no more than a poor link takes while the first samples arrive
	// (512 kbit/s filled a 256 kbit/s link's queue in the first seconds).
	DefaultInitialRate = 32 << 10
	// DefaultMinRate is the floor of the pacing rate: 4 KiB/s (32 kbit/s).
	DefaultMinRate = 4 << 10
	// DefaultMaxRate is the ceiling: 12.5 MB/s (100 Mbit/s).
	DefaultMaxRate = 12_500_000
	// ProbeInterval is how often a sending session sends a marker
	// (heartbeat probe) at most; markers also wait for half a round trip.
	ProbeInterval = 100 * time.Millisecond
	// markerSlots bounds the markers awaiting their echo, and the echoed
	// ones kept. Both rings start at minMarkerSlots and double, up to
	// markerSlots, only when a marker would take the place of one still
	// needed: an idle session's one marker a second keeps two of each.
	markerSlots    = 16
	minMarkerSlots = 2
	// bwBuckets split the bandwidth filter's window.
	bwBuckets = 8
	// minRTTWindow is how long a minimum round trip is believed.
	minRTTWindow = 30 * time.Second
	// sampleQueue (plus twice the queue target) is the longest queue a
	// marker may have waited in for its interval to give a rate sample: a
	// bottleneck near full drops, and then what was sent was not delivered.
	sampleQueue = 100 * time.Millisecond
	// cruiseGain is the share of the bandwidth estimate a congested path is
	// paced at between probes: less than all of it, so that a queue the
	// estimate's error builds drains (BBR's cruising, kept below one).
	cruiseGain = 0.9
	// probeGain is the pacing gain of a probing round, one in probeCycle.
	probeGain  = 1.25
	probeCycle = 6
	// queueBound is the longest queue InFlightAllows lets state build at
	// the bottleneck.
	queueBound = 60 * time.Millisecond
	// recentSamples is how many of the latest round trips the queue
	// estimate takes the smallest of (jitter only ever adds).
	recentSamples = 4
)

// Config bounds an Estimator; zero values mean the defaults above.
type Config struct {
	InitialRate float64 // bytes/s
	MinRate     float64 // bytes/s
	MaxRate     float64 // bytes/s
}

func (c Config) populate() Config {
	if c.InitialRate <= 0 {
		c.InitialRate = DefaultInitialRate
	}
	if c.MinRate <= 0 {
		c.MinRate = DefaultMinRate
	}
	if c.MaxRate <= 0 {
		c.MaxRate = DefaultMaxRate
	}
	c.MinRate = min(c.MinRate, c.MaxRate)
	c.InitialRate = min(max(c.InitialRate, c.MinRate), c.MaxRate)
	return c
}

// marker is a delivery marker: a probe that left at at, after sent bytes.
// Its times are nanoseconds since the estimator's epoch (0: none), not
// time.Time values: two rings of them live in every paced session, and
// offsets halve their size.
type marker struct {
	sent  uint64
	at    stamp
	ackAt stamp
	n     uint32 // its number among the markers (a gap is a lost one); 2³² at 10 a second is 13 years
	id    uint32
	apps  uint32 // the sender's flushes that had left nothing waiting when it left
	live  bool
}

// stamp is a time as nanoseconds since an Estimator's epoch, which lies
// before every time it holds; 0 is no time.
type stamp int64

// sub is the time from u to s.
func (s stamp) sub(u stamp) time.Duration { return time.Duration(s - u) }

// Estimator estimates a path's round trip, its variation, the loss of
// probes and the bandwidth, and gives the pacing rate. The zero value is
// not ready: use New.
type Estimator struct {
	cfg Config

	srtt, rttvar, latest time.Duration
	jitter               time.Duration // smoothed variation between consecutive samples
	minRTT               time.Duration
	minRTTAt             time.Time
	recent               [recentSamples]time.Duration
	nrecent, samples     int

	sent       uint64    // bytes sent, cumulative
	epoch      time.Time // what the markers' stamps count from
	markers    []marker  // a ring of len(markers) slots (nil until the first Mark)
	next       int
	lastProbe  time.Time
	firstProbe time.Time
	lastEcho   time.Time
	prior      marker // the newest marker echoed: the end of what is known delivered
	// echoed are the latest markers echoed, a ring: a rate sample spans
	// from one of them long enough ago that round-trip spread is small
	// beside the span.
	echoed  []marker // a ring of len(echoed) slots, growing like markers
	nechoed int
	probes  uint64 // markers sent
	lost    uint64 // markers that were never echoed
	loss    float64

	bw       [bwBuckets]float64 // per-bucket maximum of the samples
	bwAt     time.Time          // start of the current bucket
	bwCur    int
	bwSample float64 // the latest sample
	lastBW   float64 // the last non-zero estimate

	rate       float64   // the pacing rate, bytes/s (0: not yet set)
	sentAtRate uint64    // sent when the rate was last adjusted
	rateAt     time.Time // when it was last adjusted
	// appLimited: the sender's last flush left nothing waiting for the
	// pacer (SetAppLimited).
	appLimited bool
	appSince   time.Time // when the sender's flushes began to leave nothing waiting
	apps       uint32    // flushes that left nothing waiting, cumulative
	// heldAt is when the latest rate sample was taken over an interval in
	// which every flush left state waiting: the estimate is then the
	// link's (or the pacer's), not the game's own rate.
	heldAt time.Time
	// congestedAt is when the rate was last adjusted in Hold or Drain: from
	// then on a free path the pacer limits cruises under the estimate and
	// probes above it one round in probeCycle.
	congestedAt time.Time
	rounds      uint64 // rate adjustments, which pick the probing round
	// fullBW is the estimate that the start last grew by a quarter to, and
	// fullRounds the rounds since (checkFull).
	fullBW     float64
	fullRounds int
}

// New returns an Estimator with cfg (zero values: the defaults).
func New(cfg Config) *Estimator {
	e := &Estimator{}
	e.Init(cfg)
	return e
}

// Init resets e in place with cfg.
func (e *Estimator) Init(cfg Config) { *e = Estimator{cfg: cfg.populate()} }

// Sent counts bytes that left for the peer (every datagram).
func (e *Estimator) Sent(bytes int) { e.sent += uint64(bytes) }

// ProbeDue reports whether a marker should leave now: a session that is
// sending sends one every ProbeInterval, and no sooner than half a round
// trip after the last.
func (e *Estimator) ProbeDue(now time.Time) bool {
	return e.lastProbe.IsZero() || now.Sub(e.lastProbe) >= max(ProbeInterval, e.srtt/2)
}

// Mark records that the probe id left at now, after every byte counted by
// Sent so far. A marker still awaiting its echo in the slot it takes is
// counted lost.
func (e *Estimator) Mark(id uint32, now time.Time) {
	if len(e.markers) == 0 || e.markers[e.next].live && len(e.markers) < markerSlots {
		e.growMarkers()
	}
	m := &e.markers[e.next]
	if m.live {
		e.lostProbe()
	}
	*m = marker{n: uint32(e.probes), id: id, at: e.stamp(now), sent: e.sent, apps: e.apps, live: true}
	e.next = (e.next + 1) % len(e.markers)
	e.lastProbe = now
	if e.firstProbe.IsZero() {
		e.firstProbe = now
	}
	e.probes++
}

// stamp is now as an offset from the epoch, which the first call sets a
// second before now (so that no stamp is 0).
func (e *Estimator) stamp(now time.Time) stamp {
	if e.epoch.IsZero() {
		e.epoch = now.Add(-time.Second)
	}
	return stamp(now.Sub(e.epoch))
}

func (e *Estimator) lostProbe() {
	e.lost++
	e.loss += (1 - e.loss) / 16
}

// Echo handles the echo of probe id at now: a round-trip sample and, with
// the previous echoed marker, a delivery-rate sample. It reports whether
// id was a marker awaiting its echo.
func (e *Estimator) Echo(id uint32, now time.Time) bool {
	for i := range e.markers {
		m := &e.markers[i]
		if !m.live || m.id != id {
			continue
		}
		m.live = false
		e.lastEcho = now
		e.loss -= e.loss / 16
		m.ackAt = e.stamp(now)
		e.RTT(m.ackAt.sub(m.at), now)
		e.deliverySample(*m, now)
		return true
	}
	return false
}

// deliverySample takes a rate sample ending at m: what was sent since an
// earlier echoed marker, over the longer of their send and echo spacings
// (the bottleneck cannot have delivered it faster than either). The
// earlier marker is the newest one at least sampleSpan before m: over a
// short span the round trips' spread (jitter) shortens an echo spacing
// as much as a queue lengthens it, and the largest sample would then be
// the sender's rate, not the link's.
func (e *Estimator) deliverySample(m marker, now time.Time) {
	if e.prior.at == 0 || m.at > e.prior.at {
		e.prior = m
	}
	p, ok := e.sampleStart(m)
	if e.echoedFull(m) {
		e.growEchoed()
	}
	e.echoed[e.nechoed%len(e.echoed)] = m
	e.nechoed++
	if !ok {
		return
	}
	interval := max(m.at.sub(p.at), m.ackAt.sub(p.ackAt))
	// What was sent is what was delivered only if the bottleneck dropped
	// nothing: a queue long enough to drop at either end, and the
	// interval gives no sample.
	limit := 2*e.queueTarget() + sampleQueue
	if interval < 5*time.Millisecond || m.ackAt.sub(m.at)-e.minRTT > limit || p.ackAt.sub(p.at)-e.minRTT > limit {
		return
	}
	rate := float64(m.sent-p.sent) / interval.Seconds()
	e.bwSample = rate
	if m.apps == p.apps {
		e.heldAt = now
	}
	e.addBandwidth(rate, now)
}

// sampleSpan is how long before a marker its rate sample starts: sixteen
// times the jitter, at least ProbeInterval, at most a second.
func (e *Estimator) sampleSpan() time.Duration {
	return min(max(16*e.jitter, ProbeInterval), maxSampleSpan)
}

// maxSampleSpan is the longest sampleSpan.
const maxSampleSpan = time.Second

// sampleStart finds the newest echoed marker sent at least sampleSpan
// before m; before any estimate, the oldest one sent before m will do.
// Every marker between the two must have been echoed: a full bottleneck
// drops the datagrams that carry markers too, and then what was sent was
// not delivered.
func (e *Estimator) sampleStart(m marker) (marker, bool) {
	span := e.sampleSpan()
	var oldest marker
	for i := 1; i <= min(e.nechoed, len(e.echoed)); i++ {
		p := e.echoed[(e.nechoed-i)%len(e.echoed)]
		if p.n >= m.n {
			continue
		}
		if m.at.sub(p.at) >= span {
			return p, e.echoedBetween(p.n, m.n)
		}
		oldest = p
	}
	ok := oldest.at != 0 && e.lastBW == 0 && e.bwEmpty() && e.echoedBetween(oldest.n, m.n)
	return oldest, ok
}

// echoedBetween reports whether every marker numbered between a and b
// was echoed.
func (e *Estimator) echoedBetween(a, b uint32) bool {
	var n uint32
	for i := range min(e.nechoed, len(e.echoed)) {
		if q := e.echoed[i].n; q > a && q < b {
			n++
		}
	}
	return n == b-a-1
}

// growMarkers doubles the ring of markers awaiting their echo (makes it,
// the first time), oldest first, the next slot the first new one.
func (e *Estimator) growMarkers() {
	n := len(e.markers)
	grown := make([]marker, max(2*n, minMarkerSlots))
	for i := range n {
		grown[i] = e.markers[(e.next+i)%n]
	}
	e.markers, e.next = grown, n
}

// echoedFull reports whether the ring of echoed markers must grow before
// m joins it: it is not made yet, or the slot m takes holds the oldest
// echoed marker, and the one after it is not yet as long before m as a
// rate sample may span (so that the oldest may still start one).
func (e *Estimator) echoedFull(m marker) bool {
	n := len(e.echoed)
	if n == 0 {
		return true
	}
	if n >= markerSlots || e.nechoed < n {
		return false
	}
	second := e.echoed[(e.nechoed+1)%n]
	return m.at.sub(second.at) < maxSampleSpan
}

// growEchoed doubles the ring of echoed markers (makes it, the first
// time), keeping every marker at the same distance from the newest.
func (e *Estimator) growEchoed() {
	n := len(e.echoed)
	grown := make([]marker, max(2*n, minMarkerSlots))
	for i := 1; i <= min(e.nechoed, n); i++ {
		grown[(e.nechoed-i)%len(grown)] = e.echoed[(e.nechoed-i)%n]
	}
	e.echoed = grown
}

func (e *Estimator) bwEmpty() bool {
	for _, v := range e.bw {
		if v > 0 {
			return false
		}
	}
	return true
}

// bwWindow is the bandwidth filter's window: ten round trips, 2 to 10 s.
func (e *Estimator) bwWindow() time.Duration {
	return min(max(10*e.srtt, 2*time.Second), 10*time.Second)
}

func (e *Estimator) addBandwidth(rate float64, now time.Time) {
	e.rotateBandwidth(now)
	e.bw[e.bwCur] = max(e.bw[e.bwCur], rate)
}

// rotateBandwidth starts new buckets for the time passed, forgetting the
// oldest.
func (e *Estimator) rotateBandwidth(now time.Time) {
	if e.bwAt.IsZero() {
		e.bwAt = now
		return
	}
	step := e.bwWindow() / bwBuckets
	for i := 0; now.Sub(e.bwAt) >= step && i <= bwBuckets; i++ {
		e.bwCur = (e.bwCur + 1) % bwBuckets
		e.bw[e.bwCur] = 0
		e.bwAt = e.bwAt.Add(step)
	}
	if now.Sub(e.bwAt) >= step { // idle past the whole window
		e.bwAt = now
	}
}

// RTT feeds one round-trip sample taken at now (a marker's echo, or any
// other probe the session times).
func (e *Estimator) RTT(rtt time.Duration, now time.Time) {
	if rtt <= 0 {
		return
	}
	if e.samples > 0 {
		// Jitter as RFC 3550 has it: the variation between consecutive
		// samples, which a queue's slow growth hardly adds to.
		d := rtt - e.latest
		if d < 0 {
			d = -d
		}
		e.jitter += (d - e.jitter) / 8
	}
	e.latest = rtt
	if e.samples == 0 {
		e.srtt, e.rttvar = rtt, rtt/2
	} else {
		d := e.srtt - rtt
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + rtt) / 8
	}
	e.samples++
	if e.minRTT == 0 || rtt <= e.minRTT || now.Sub(e.minRTTAt) > minRTTWindow {
		e.minRTT, e.minRTTAt = rtt, now
	}
	e.recent[e.nrecent%recentSamples] = rtt
	e.nrecent++
}

// starved reports whether markers go unanswered: none echoed for two round
// trips (at least two seconds: a peer starved of CPU answers late too)
// while they were sent. A bottleneck that drops everything answers
// nothing, and that is the strongest sign of all.
func (e *Estimator) starved(now time.Time) bool {
	since := e.lastEcho
	if since.IsZero() {
		since = e.firstProbe
	}
	return !since.IsZero() && e.lastProbe.After(since) && now.Sub(since) > max(2*e.srtt, 2*time.Second)
}

// SetAppLimited tells whether the sender's last flush sent everything it
// had (true) or left some waiting for the pacer (false). A free path whose
// sender is application-limited gets room to grow even after a queue: its
// estimate measures the game, not the link.
// It counts once the sender has sent all it had for a round trip (at least
// 100 ms): a sender held by the pacer now and then, as one that wants more
// than the link is, stays paced and bounded between its backlogs.
// It does not count while the bandwidth filter's window holds a rate
// sample taken over an interval in which every flush left state waiting:
// that estimate is the link's, and a game that wants more than its link has spells of
// sending all it has between its backlogs (its module sends less while
// told it is backlogged), after which its next burst would go into the
// bottleneck's queue unbounded.
func (e *Estimator) SetAppLimited(v bool, now time.Time) {
	if v && !e.appLimited {
		e.appSince = now
	}
	if v {
		e.apps++
	}
	e.appLimited = v
}

// appLimitedAt reports whether the sender has sent all it had for a round
// trip (at least 100 ms) at now, and its estimate is not the link's (no
// sample within the bandwidth window was taken while the pacer held it).
func (e *Estimator) appLimitedAt(now time.Time) bool {
	round := max(e.srtt, 100*time.Millisecond)
	if !e.heldAt.IsZero() && now.Sub(e.heldAt) < e.bwWindow() {
		return false
	}
	return e.appLimited && now.Sub(e.appSince) >= round
}

// InFlightAllows reports whether n more bytes may leave without the
// bottleneck's queue passing queueBound at the estimated bandwidth. The
// queue is estimated from the newest echoed marker: what was sent since it
// left, less what the bandwidth carried since, plus the queue it met (its
// round trip beyond the minimum and twice the jitter). Send times carry
// no jitter, so the bound holds on a path whose round trips spread widely.
// Before an estimate, and while the sender sends all it has (its last
// flush left no state waiting: a game's tick is a burst, and its estimate
// is its own rate), anything goes.
func (e *Estimator) InFlightAllows(now time.Time, n int) bool {
	bw := e.lastBW
	if bw == 0 || e.appLimitedAt(now) || e.prior.ackAt == 0 || e.minRTT == 0 {
		return true
	}
	met := e.prior.ackAt.sub(e.prior.at) - e.minRTT - 2*e.jitter
	queued := float64(e.sent-e.prior.sent) - bw*e.stamp(now).sub(e.prior.at).Seconds() + bw*max(met, 0).Seconds()
	return queued+float64(n) <= max(bw*queueBound.Seconds(), 2*float64(n))
}

// Latest is the latest round-trip sample.
func (e *Estimator) Latest() time.Duration { return e.latest }

// Bandwidth is the estimate in bytes/s: the largest delivery rate sampled
// within the window, or the last estimate when the window holds no sample
// (0 before the first sample).
func (e *Estimator) Bandwidth(now time.Time) float64 {
	e.rotateBandwidth(now)
	var b float64
	for _, v := range e.bw {
		b = max(b, v)
	}
	if b == 0 {
		return e.lastBW
	}
	e.lastBW = b
	return b
}

// QueueDelay estimates how long data waits at the bottleneck: the smallest
// of the latest round trips less the path's minimum.
func (e *Estimator) QueueDelay() time.Duration {
	n := min(e.nrecent, recentSamples)
	if n == 0 {
		return 0
	}
	least := e.recent[0]
	for _, v := range e.recent[1:n] {
		least = min(least, v)
	}
	return max(0, least-e.minRTT)
}

// queueTarget is the queue delay taken for congestion: more than the
// path's own variation (jitter only adds), at least 25 ms, at most 100 ms.
func (e *Estimator) queueTarget() time.Duration {
	return min(max(16*e.jitter, 25*time.Millisecond), 150*time.Millisecond)
}

// State says how the pacer treats the path.
type State uint8

const (
	// Free: no queue seen; the pacer allows twice the estimate until a
	// queue was first seen, then cruises and probes (Rate).
	Free State = iota
	// Hold: a short queue; the pacer cruises and probes as in Free.
	Hold
	// Drain: a long queue; the pacer cuts the rate to drain it.
	Drain
)

func (s State) String() string {
	switch s {
	case Hold:
		return "hold"
	case Drain:
		return "drain"
	}
	return "free"
}

// State is the path's state from its queue delay.
func (e *Estimator) State() State {
	q, t := e.QueueDelay(), e.queueTarget()
	switch {
	case e.samples == 0 || q <= t:
		return Free
	case q <= 2*t:
		return Hold
	}
	return Drain
}

// Rate is the pacing rate in bytes/s at now, adjusted at most once a
// round trip (in drain, once half a round trip). Free: twice the estimate
// (at least the initial rate) while the sender sends all it has and no
// queue was ever seen, or it sends under half the estimate; otherwise,
// while it sends all it has, five percent more a round trip, at most a
// tenth over the estimate. A sender with more than the pacer lets out
// starts at a quarter over the estimate a round (until the estimate stops
// growing: checkFull), then, free or in hold, cruises at nine tenths of
// the estimate (so that a queue the estimate's error builds empties) and
// probes at 1.25 times it one round in six (a sender held under the
// estimate samples only its own rate). Drain: nine tenths of the estimate
// less the share that drains the queue beyond the target within a round
// trip (at most half). Markers unanswered (starved): half the last rate.
// Such a sender's state also waits while the bottleneck's queue would pass
// the bound of InFlightAllows, which keeps a probe's queue short.
func (e *Estimator) Rate(now time.Time) float64 {
	round := max(e.srtt, 50*time.Millisecond)
	// A long queue cuts the rate at once (after half a round trip, which
	// the last cut needs to show), not a round trip later.
	wait := round
	if e.State() == Drain {
		wait = round / 2
	}
	if e.rate > 0 && now.Sub(e.rateAt) < wait {
		return e.rate
	}
	bw := e.Bandwidth(now)
	r := e.rate
	var sending float64 // what the sender sent per second since the last adjustment
	if !e.rateAt.IsZero() && now.After(e.rateAt) {
		sending = float64(e.sent-e.sentAtRate) / now.Sub(e.rateAt).Seconds()
	}
	e.sentAtRate = e.sent
	state, starved := e.State(), e.starved(now)
	if starved {
		state = Drain
	}
	e.rounds++
	app := e.appLimitedAt(now)
	e.checkFull(bw, app, now)
	switch {
	case state == Free && app && (e.congestedAt.IsZero() || sending <= bw/2):
		// The sender sends all it has, and no queue was ever seen or it
		// sends far less than the estimate: room to grow.
		r = max(2*bw, e.cfg.InitialRate)
	case state == Free && e.congestedAt.IsZero():
		// The start with more to send than the pacer lets out: a quarter
		// more a round trip (the samples follow), until the estimate stops
		// growing (checkFull) or a queue shows. Twice the estimate here
		// filled a 400 ms queue within a second.
		r = max(probeGain*bw, e.cfg.InitialRate)
	case state == Free && app && bw > 0:
		// The sender sends all it has, near the estimate (which is then
		// its own rate): five percent more a round trip, at most a tenth
		// over the estimate, so that its bursts are not held.
		r = min(max(r, bw)*1.05, 1.1*bw)
	case state != Drain && bw > 0:
		// After a queue, or with a short one: cruise under the estimate,
		// so that a queue its error builds empties, and probe above it one
		// round in probeCycle whatever the queue (a sender held under the
		// estimate samples only its own rate: without probes the estimate
		// would only ever fall). The bound on bytes in flight keeps a
		// probe's queue short.
		if state == Hold {
			e.congestedAt = now
		}
		r = cruiseGain * bw
		if e.rounds%probeCycle == 0 {
			r = probeGain * bw
		}
	case state != Free:
		// Drain (or no estimate yet): the cruise rate less what drains the
		// queue beyond the target within a round trip, at most half.
		// Starved: half the last rate.
		e.congestedAt = now
		if bw == 0 {
			bw = max(r, e.cfg.InitialRate)
		}
		excess := float64(e.QueueDelay()-e.queueTarget()) / float64(round)
		r = cruiseGain * bw * min(max(1-excess, 0.5), 1)
		if starved {
			r = min(e.rate, bw) / 2
		}
	}
	e.rate, e.rateAt = min(max(r, e.cfg.MinRate), e.cfg.MaxRate), now
	return e.rate
}

// checkFull ends the start (twice the estimate) once the pipe is full, as
// BBR's startup ends: the sender had more to send than the pacer let out,
// and the estimate grew by less than a quarter in three rounds. Sessions
// that start together (a match) would otherwise fill the bottleneck's
// queue together before a queue shows in their round trips.
func (e *Estimator) checkFull(bw float64, app bool, now time.Time) {
	if !e.congestedAt.IsZero() || app || bw == 0 {
		e.fullBW, e.fullRounds = 0, 0
		return
	}
	if bw >= 1.25*e.fullBW {
		e.fullBW, e.fullRounds = bw, 0
		return
	}
	if e.fullRounds++; e.fullRounds >= 3 {
		e.congestedAt = now
	}
}

// Snapshot is what an Estimator knows, for statistics.
type Snapshot struct {
	SRTT, RTTVar, MinRTT time.Duration
	QueueDelay           time.Duration // at the bottleneck (QueueDelay)
	ProbeLoss            float64       // share of markers not echoed (smoothed, gain 1/16)
	Bandwidth            float64       // bytes/s
	Rate                 float64       // the pacing rate, bytes/s
	State                State
	Probes, ProbesLost   uint64
}

// Snapshot returns the estimates at now; Rate is the rate as last
// adjusted (taking a snapshot adjusts nothing).
func (e *Estimator) Snapshot(now time.Time) Snapshot {
	return Snapshot{SRTT: e.srtt, RTTVar: e.rttvar, MinRTT: e.minRTT, QueueDelay: e.QueueDelay(),
		ProbeLoss: e.loss, Bandwidth: e.Bandwidth(now), Rate: e.rate, State: e.State(),
		Probes: e.probes, ProbesLost: e.lost}
}

// SRTT is the smoothed round trip (0 before a sample).
func (e *Estimator) SRTT() time.Duration { return e.srtt }
