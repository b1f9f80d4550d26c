package netrig

import (
	"context"
	"math"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"
)

var heldProfiles = []Profile{Home, Mobile, Bad}

// TestRigHoldsProfiles sends UDP probes through each named profile and
// checks what came out against what the profile claims.
//
// Delay: 200 probes spaced further apart than the profile's jitter, so that
// the queue discipline (no reordering) barely touches them. The round trip
// is Delay plus two uniform spreads of ±Jitter/2: never below Delay−Jitter
// (a held packet is never released early), mean Delay, standard deviation
// Jitter/√6. Loss: 2000 probes, each direction against the profile's rate
// within four standard deviations, and every loss the probe saw is one the
// forwarder decided (nothing else on the path drops).
func TestRigHoldsProfiles(t *testing.T) {
	n := len(heldProfiles)
	r := New(t, Config{Clients: 2 * n, NAT: true})
	startEcho(t, r)
	for i, p := range heldProfiles {
		for _, c := range []int{i, n + i} {
			if err := r.SetProfile(c, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("all", func(t *testing.T) {
		for i, p := range heldProfiles {
			t.Run(p.Name+"/delay", func(t *testing.T) {
				t.Parallel()
				checkDelay(t, r, i, p)
			})
			t.Run(p.Name+"/loss", func(t *testing.T) {
				t.Parallel()
				checkLoss(t, r, n+i, p)
			})
		}
	})
}

func checkDelay(t *testing.T, r *Rig, client int, p Profile) {
	const probes = 200
	interval := max(10*time.Millisecond, p.Jitter+5*time.Millisecond)
	res := probeFrom(t, r, clientConn(t, r, client), ProbeConfig{Count: probes, Interval: interval})
	rtts := res.RTTs()
	s := Summarize(rtts)
	q10, q90 := quantile(rtts, 0.10), quantile(rtts, 0.90)
	t.Logf("%s: RTT %s, p10 %.2f p90 %.2f ms (claimed %v±%v); %d of %d echoed; forwarder lateness up %v down %v",
		p.Name, s, float64(q10)/1e6, float64(q90)/1e6, p.Delay, p.Jitter, res.Echoed, res.Sent,
		r.Stats(client).Up.Late, r.Stats(client).Down.Late)
	t.Logf("%s: one way up %s; down %s", p.Name, Summarize(res.Ups()), Summarize(res.Downs()))
	if s.N < probes/2 {
		t.Fatalf("only %d of %d probes came back", s.N, probes)
	}
	for dir, ds := range map[string][]time.Duration{"up": res.Ups(), "down": res.Downs()} {
		if floor := (p.Delay - p.Jitter) / 2; Summarize(ds).Min < floor {
			t.Errorf("a one-way time %s of %v, below the profile's floor %v", dir, Summarize(ds).Min, floor)
		}
	}
	// A held packet is never released early: no round trip is shorter than
	// the profile's floor, however loaded the machine.
	if s.Min < p.Delay-p.Jitter {
		t.Errorf("a round trip of %v, below the profile's floor %v", s.Min, p.Delay-p.Jitter)
	}
	// The round trip is Delay plus a triangular spread over ±Jitter (two
	// uniform ±Jitter/2): its 10th, 50th and 90th percentiles are Delay −
	// 0.553·Jitter, Delay and Delay + 0.553·Jitter, with standard errors
	// 0.67·Jitter/√n, 0.5·Jitter/√n, 0.67·Jitter/√n. A busy machine only
	// ever makes a packet later (a late timer, a descheduled process), so
	// the checks allow four standard errors below and four plus slack above.
	//
	// Lateness is the machine's, not the rig's, when other work shares the
	// two cores (CI runs two packages at once, some of them heavy): the
	// upper-side checks fail the test only with SPARK_RIG_STRICT=1 (a quiet
	// machine: docs/netrig.md's fidelity figures); otherwise they are
	// logged. The lower side — never early — always holds.
	const slack = 10 * time.Millisecond
	rootN := math.Sqrt(float64(s.N))
	late := t.Logf
	if os.Getenv("SPARK_RIG_STRICT") == "1" {
		late = t.Errorf
	}
	check := func(name string, got time.Duration, at, se float64) {
		want := p.Delay + time.Duration(at*float64(p.Jitter))
		tol := time.Duration(4 * se * float64(p.Jitter) / rootN)
		switch {
		case got < want-tol:
			t.Errorf("%s round trip %v, want %v (−%v, +%v)", name, got, want, tol, tol+slack)
		case got > want+tol+slack:
			late("%s round trip %v, want %v (−%v, +%v) (late: a loaded machine, or the rig)", name, got, want, tol, tol+slack)
		}
	}
	check("10th percentile", q10, -0.553, 0.67)
	check("median", s.P50, 0, 0.5)
	check("90th percentile", q90, 0.553, 0.67)
	// A loaded machine may delay a few packets a lot; more than one in ten
	// far past the profile's ceiling is the rig's fault.
	ceiling, over := p.Delay+p.Jitter+25*time.Millisecond, 0
	for _, d := range rtts {
		if d > ceiling {
			over++
		}
	}
	if over > s.N/10 {
		late("%d of %d round trips over %v", over, s.N, ceiling)
	}
}

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func checkLoss(t *testing.T, r *Rig, client int, p Profile) {
	const probes = 2000
	// Dense, but well under the profile's rate: 92-byte packets.
	interval := 2 * time.Millisecond
	if p.Rate < 1_000_000 {
		interval = 5 * time.Millisecond
	}
	res := probeFrom(t, r, clientConn(t, r, client), ProbeConfig{Count: probes, Interval: interval})
	st := r.Stats(client)
	up, down := res.LossUp(), res.LossDown()
	tol := 4*math.Sqrt(p.Loss*(1-p.Loss)/probes) + 0.003
	t.Logf("%s: loss up %.2f%% down %.2f%% (claimed %.1f%% each way, tolerance ±%.2f%%); forwarder dropped %d up, %d down",
		p.Name, up*100, down*100, p.Loss*100, tol*100, st.Up.Lost, st.Down.Lost)
	if res.ServerReceived < 0 {
		t.Fatal("the echo server's count never came back")
	}
	if math.Abs(up-p.Loss) > tol || math.Abs(down-p.Loss) > tol {
		t.Errorf("loss up %.4f, down %.4f; the profile claims %.4f ± %.4f", up, down, p.Loss, tol)
	}
	// The stats queries may be lost too: a few losses more in the rig's
	// counts than in the probe's.
	lostUp, lostDown := res.Sent-res.ServerReceived, res.ServerReceived-res.Echoed
	if d := int(st.Up.Lost) - lostUp; d < 0 || d > 5 {
		t.Errorf("the probe lost %d going up, the forwarder dropped %d: something else drops", lostUp, st.Up.Lost)
	}
	if d := int(st.Down.Lost) - lostDown; d < 0 || d > 5 {
		t.Errorf("the probe lost %d coming down, the forwarder dropped %d: something else drops", lostDown, st.Down.Lost)
	}
}

// TestRigHoldsRate loads each direction of each profile's link at twice
// its rate: what gets through is the rate (the tbf queue, drained after
// the load, included) less the profile's loss, within 10%.
func TestRigHoldsRate(t *testing.T) {
	n := len(heldProfiles)
	r := New(t, Config{Clients: n})
	startEcho(t, r)
	server, err := r.Server.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	for i, p := range heldProfiles {
		if err := r.SetProfile(i, p); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Client(i).StartEcho(echoPort); err != nil {
			t.Fatal(err)
		}
	}
	const load = 3 * time.Second
	t.Run("up", func(t *testing.T) {
		for i, p := range heldProfiles {
			t.Run(p.Name, func(t *testing.T) {
				t.Parallel()
				checkRate(t, "up", p, func(cfg BlastConfig) (BlastResult, error) {
					return Blast(context.Background(), clientConn(t, r, i), netip.AddrPortFrom(r.Server.Addr, echoPort), cfg)
				})
			})
		}
	})
	// Down: the server loads each client in turn from one socket.
	t.Run("down", func(t *testing.T) {
		for i, p := range heldProfiles {
			checkRate(t, "down", p, func(cfg BlastConfig) (BlastResult, error) {
				return Blast(context.Background(), server, netip.AddrPortFrom(r.Client(i).Addr, echoPort), cfg)
			})
		}
	})
}

func checkRate(t *testing.T, dir string, p Profile, blast func(BlastConfig) (BlastResult, error)) {
	t.Helper()
	res, err := blast(BlastConfig{Size: 1000, Rate: 2 * p.Rate, Duration: 3 * time.Second, Wait: p.queue() + time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Received < 0 {
		t.Fatal("the echo server's count never came back")
	}
	passed := float64(p.Rate)*(res.Elapsed+p.queue()).Seconds() + float64(8*tbfBurst(p.Rate))
	want := passed * (1 - p.Loss) / res.Elapsed.Seconds()
	got := res.ReceivedRate()
	t.Logf("%s %s: offered %.3f Mbit/s, received %.3f Mbit/s, expected %.3f (rate %.3f, queue %v, loss %g%%)",
		p.Name, dir, res.SentRate()/1e6, got/1e6, want/1e6, float64(p.Rate)/1e6, p.queue(), p.Loss*100)
	if res.SentRate() < 1.5*float64(p.Rate) {
		t.Fatalf("offered only %.3f Mbit/s: the link was not loaded", res.SentRate()/1e6)
	}
	if got < 0.9*want || got > 1.1*want {
		t.Errorf("%s %s: %.3f Mbit/s got through, want %.3f ± 10%%", p.Name, dir, got/1e6, want/1e6)
	}
}
