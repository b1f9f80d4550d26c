package main

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
)

// bottleneck samples the rig's down-link queues (kernel tbf on the
// router's d<i> TUNs: what the server sends each client waits there) every
// 200 ms, as the time each backlog takes to drain at its link's rate.
type bottleneck struct {
	mu      sync.Mutex
	samples map[int64][]time.Duration // by the link's rate, bit/s
	drops   map[string]int64          // by device: what tbf dropped (its queue full)
	rates   map[string]int64
	errs    int
}

// sampleBottleneck samples rig's down links from after until ctx is done.
func sampleBottleneck(ctx context.Context, rig *netrig.Rig, after time.Duration) *bottleneck {
	b := &bottleneck{samples: map[int64][]time.Duration{}, drops: map[string]int64{}, rates: map[string]int64{}}
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(after):
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			out, err := exec.CommandContext(ctx, "tc", "-n", rig.Router.Name, "-s", "qdisc", "show").Output()
			b.mu.Lock()
			if err != nil {
				b.errs++
			} else {
				b.take(string(out))
			}
			b.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return b
}

// take reads one `tc -s qdisc show`: a "qdisc tbf … dev dN … rate R …"
// line, then its " Sent … (dropped D, …)" and " backlog Bb Pp …" lines.
func (b *bottleneck) take(out string) {
	var dev string
	var rate int64
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 4 && f[0] == "qdisc" && f[1] == "tbf":
			dev, rate = "", 0
			if i := slices.Index(f, "dev"); i >= 0 && i+1 < len(f) && strings.HasPrefix(f[i+1], "d") {
				dev = f[i+1]
			}
			if i := slices.Index(f, "rate"); i >= 0 && i+1 < len(f) {
				rate = parseBits(f[i+1])
			}
		case dev != "" && len(f) > 4 && f[0] == "Sent":
			if i := slices.Index(f, "(dropped"); i >= 0 && i+1 < len(f) {
				d, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				b.drops[dev], b.rates[dev] = d, rate
			}
		case dev != "" && rate > 0 && len(f) > 1 && f[0] == "backlog":
			n, err := strconv.ParseInt(strings.TrimSuffix(f[1], "b"), 10, 64)
			if err == nil {
				b.samples[rate] = append(b.samples[rate], time.Duration(float64(n*8)/float64(rate)*float64(time.Second)))
			}
			dev = ""
		}
	}
}

// parseBits reads tc's rate: 256Kbit, 20Mbit, 1000bit.
func parseBits(s string) int64 {
	mult := int64(1)
	for suf, m := range map[string]int64{"Kbit": 1e3, "Mbit": 1e6, "Gbit": 1e9} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			s, mult = v, m
			break
		}
	}
	s = strings.TrimSuffix(s, "bit")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return int64(v * float64(mult))
}

// log reports each link rate's queue: p50 / p99 / max and the share of
// samples over 100 ms, and what tbf dropped.
func (b *bottleneck) log(t *testing.T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for rate, s := range b.samples {
		over := 0
		for _, d := range s {
			if d > 100*time.Millisecond {
				over++
			}
		}
		var drops int64
		for dev, d := range b.drops {
			if b.rates[dev] == rate {
				drops += d
			}
		}
		t.Logf("bottleneck queue at %d kbit/s (tbf backlog, %d samples every 200 ms): p50 %v, p99 %v, max %v; %.1f%% over 100 ms; %d packets dropped full",
			rate/1000, len(s), ms(pct(s, 50)), ms(pct(s, 99)), ms(pct(s, 100)), 100*float64(over)/float64(max(len(s), 1)), drops)
	}
	if b.errs > 0 {
		t.Logf("bottleneck: %d samples failed", b.errs)
	}
}
