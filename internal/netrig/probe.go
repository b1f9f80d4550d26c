package netrig

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"
)

// ProbeConfig says how to probe an echo server.
type ProbeConfig struct {
	// Count is the number of probes; 0 means 100.
	Count int
	// Interval is the time between probes; 0 means 10 ms.
	Interval time.Duration
	// Size is each probe's UDP payload in bytes; 0 (or less than the 40-byte
	// header) means 64.
	Size int
	// Wait is how long to wait for the last echoes after the last probe;
	// 0 means 2 s.
	Wait time.Duration
}

func (c *ProbeConfig) populate() {
	if c.Count <= 0 {
		c.Count = 100
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Millisecond
	}
	if c.Size < echoHeader {
		c.Size = 64
	}
	if c.Wait <= 0 {
		c.Wait = 2 * time.Second
	}
}

// ProbeResult is what a probe measured.
type ProbeResult struct {
	Start time.Time // when the first probe went out
	Sent  int       // probes sent
	// SentAt is each probe's send time, from Start.
	SentAt []time.Duration
	// RTT is each probe's round-trip time, -1 where no echo came back.
	RTT []time.Duration
	// Up and Down split each echoed probe's round trip at the moment the
	// echo server received it (-1 where no echo came back).
	Up, Down []time.Duration
	// SeenAs is the source address the server saw each probe from (zero
	// where no echo came back).
	SeenAs []netip.AddrPort
	Echoed int // probes whose echo came back
	// ServerReceived is the echo server's count of this probe's datagrams
	// (duplicates included), or -1 when no stats answer came back.
	ServerReceived int
	Duplicates     int // echoes received more than once
	Reordered      int // echoes that arrived after a later probe's echo
}

// RTTs are the round-trip times of the echoed probes, in probe order.
func (r *ProbeResult) RTTs() []time.Duration { return echoed(r.RTT) }

// Ups are the one-way times to the server of the echoed probes.
func (r *ProbeResult) Ups() []time.Duration { return echoed(r.Up) }

// Downs are the one-way times back of the echoed probes.
func (r *ProbeResult) Downs() []time.Duration { return echoed(r.Down) }

func echoed(all []time.Duration) []time.Duration {
	var ds []time.Duration
	for _, d := range all {
		if d >= 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// Seen are the distinct source addresses the server saw the socket at, in
// the order of the probes that first showed them.
func (r *ProbeResult) Seen() []netip.AddrPort {
	var seen []netip.AddrPort
	for i, a := range r.SeenAs {
		if r.RTT[i] >= 0 && !slices.Contains(seen, a) {
			seen = append(seen, a)
		}
	}
	return seen
}

// LossUp is the share of probes that did not reach the server.
func (r *ProbeResult) LossUp() float64 {
	if r.Sent == 0 || r.ServerReceived < 0 {
		return math.NaN()
	}
	return 1 - float64(min(r.ServerReceived, r.Sent))/float64(r.Sent)
}

// LossDown is the share of echoes the server sent that did not come back.
func (r *ProbeResult) LossDown() float64 {
	if r.ServerReceived <= 0 {
		return math.NaN()
	}
	return 1 - float64(min(r.Echoed, r.ServerReceived))/float64(min(r.ServerReceived, r.Sent))
}

// LossRoundTrip is the share of probes whose echo never came back.
func (r *ProbeResult) LossRoundTrip() float64 {
	if r.Sent == 0 {
		return math.NaN()
	}
	return 1 - float64(r.Echoed)/float64(r.Sent)
}

// Summary is a distribution's figures.
type Summary struct {
	N                                  int
	Min, Mean, P50, P95, P99, Max, Std time.Duration
}

// Summarize sums durations up.
func Summarize(ds []time.Duration) Summary {
	s := Summary{N: len(ds)}
	if len(ds) == 0 {
		return s
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var sum, sq float64
	for _, d := range sorted {
		sum += float64(d)
	}
	mean := sum / float64(len(sorted))
	for _, d := range sorted {
		sq += (float64(d) - mean) * (float64(d) - mean)
	}
	at := func(q float64) time.Duration { return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))] }
	s.Min, s.Max, s.Mean = sorted[0], sorted[len(sorted)-1], time.Duration(mean)
	s.P50, s.P95, s.P99 = at(0.50), at(0.95), at(0.99)
	s.Std = time.Duration(math.Sqrt(sq / float64(len(sorted))))
	return s
}

// String is one line of milliseconds.
func (s Summary) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return fmt.Sprintf("n=%d min %.2f mean %.2f p50 %.2f p95 %.2f p99 %.2f max %.2f sd %.2f ms",
		s.N, ms(s.Min), ms(s.Mean), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max), ms(s.Std))
}

// Probe sends cfg.Count probes from conn to an echo server, one every
// cfg.Interval, collects the echoes, then asks the server how many probes
// it received. conn must not be read by anyone else meanwhile.
func Probe(ctx context.Context, conn *net.UDPConn, server netip.AddrPort, cfg ProbeConfig) (*ProbeResult, error) {
	cfg.populate()
	flow := rand.Uint32()
	start := time.Now()
	rec := newProbeRecorder(cfg.Count)
	sentAt := make([]time.Duration, 0, cfg.Count)
	done := make(chan error, 1)
	go func() { done <- rec.read(conn, flow) }()
	send := func(p echoPacket, size int) error {
		b := make([]byte, size)
		p.flow = flow
		p.put(b)
		_, err := conn.WriteToUDPAddrPort(b, server)
		return err
	}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var err error
	sent := 0
	for ; sent < cfg.Count && err == nil; sent++ {
		if sent > 0 {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-tick.C:
			}
		}
		if err == nil {
			sentAt = append(sentAt, time.Since(start))
			err = send(echoPacket{kind: kindProbe, seq: uint64(sent), sent: monotonic()}, cfg.Size)
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				break
			}
			err = nil // a refused or unroutable datagram is a lost probe
		}
	}
	if err == nil {
		err = sleepCtx(ctx, cfg.Wait)
	}
	// Ask for the count until it comes back; a stats answer is not a probe.
	for i := 0; i < 40 && err == nil && !rec.haveStats(); i++ {
		send(echoPacket{kind: kindStats, seq: uint64(i)}, echoHeader)
		err = sleepCtx(ctx, 50*time.Millisecond)
	}
	conn.SetReadDeadline(time.Now())
	readErr := <-done
	conn.SetReadDeadline(time.Time{})
	res := rec.result(sent)
	res.Start, res.SentAt = start, sentAt
	return res, errors.Join(err, readErr)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// probeRecorder collects echoes on the reading goroutine.
type probeRecorder struct {
	mu        sync.Mutex
	rtt       []time.Duration // by seq; -1 not echoed
	up, down  []time.Duration
	seen      []netip.AddrPort
	dups      int
	reordered int
	highest   int64
	stats     int64 // -1 until the stats answer
}

func newProbeRecorder(n int) *probeRecorder {
	r := &probeRecorder{rtt: make([]time.Duration, n), up: make([]time.Duration, n), down: make([]time.Duration, n),
		seen: make([]netip.AddrPort, n), highest: -1, stats: -1}
	for i := range r.rtt {
		r.rtt[i], r.up[i], r.down[i] = -1, -1, -1
	}
	return r
}

func (r *probeRecorder) read(conn *net.UDPConn, flow uint32) error {
	buf := make([]byte, 65536)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			// ECONNREFUSED and the like: a lost datagram; do not spin.
			time.Sleep(time.Millisecond)
			continue
		}
		now := monotonic()
		p, err := parseEcho(buf[:n])
		if err != nil || p.flow != flow || p.kind&kindReply == 0 {
			continue
		}
		r.record(p, now)
	}
}

func (r *probeRecorder) record(p echoPacket, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch p.kind &^ kindReply {
	case kindStats:
		r.stats = max(r.stats, int64(p.received))
	case kindProbe:
		if p.seq >= uint64(len(r.rtt)) {
			return
		}
		i := int(p.seq)
		if r.rtt[i] >= 0 {
			r.dups++
			return
		}
		r.rtt[i] = time.Duration(now - p.sent)
		r.up[i] = time.Duration(p.arrived - p.sent)
		r.down[i] = time.Duration(now - p.arrived)
		r.seen[i] = p.seen
		if int64(i) < r.highest {
			r.reordered++
		}
		r.highest = max(r.highest, int64(i))
	}
}

func (r *probeRecorder) haveStats() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats >= 0
}

func (r *probeRecorder) result(sent int) *ProbeResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &ProbeResult{Sent: sent, ServerReceived: int(r.stats), Duplicates: r.dups, Reordered: r.reordered,
		RTT: slices.Clone(r.rtt[:sent]), Up: slices.Clone(r.up[:sent]), Down: slices.Clone(r.down[:sent]),
		SeenAs: slices.Clone(r.seen[:sent])}
	for _, d := range res.RTT {
		if d >= 0 {
			res.Echoed++
		}
	}
	return res
}
