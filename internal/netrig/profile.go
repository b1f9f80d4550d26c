package netrig

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Profile describes one client's link. Delay and Jitter are round-trip
// figures, split evenly between the two directions; Loss, Duplicate and
// Reorder apply to every packet in each direction independently; Rate caps
// each direction. The zero value is None: no impairment at all (packets
// still pass the forwarder, so None measures what the rig itself adds).
type Profile struct {
	// Name is what the profile table and logs call it.
	Name string
	// Delay is the round-trip time the rig adds: Delay/2 each way.
	Delay time.Duration
	// Jitter spreads each direction's delay uniformly over ±Jitter/2, so the
	// added round-trip time stays within Delay±Jitter. Jitter alone never
	// reorders: a packet is not delivered before one that entered the same
	// direction before it (a queue, not a scatter).
	Jitter time.Duration
	// Loss is the probability (0..1) that a packet is dropped, per direction.
	Loss float64
	// Duplicate is the probability (0..1) that a packet is delivered twice.
	Duplicate float64
	// Reorder is the probability (0..1) that a packet is held back a further
	// ReorderDelay, so packets sent after it overtake it.
	Reorder float64
	// ReorderDelay is how long a reordered packet is held back; 0 means
	// 10 ms or Jitter, whichever is longer.
	ReorderDelay time.Duration
	// Rate caps each direction, in bits per second (kernel tbf on the
	// router's TUN); 0 means uncapped.
	Rate int64
	// Queue is the bottleneck's buffer, as the time it takes to drain at
	// Rate (tbf's latency): a packet that would wait longer is dropped.
	// 0 means 100 ms. Unused without Rate.
	Queue time.Duration
}

// The named profiles. Home, Mobile and Bad are the table of docs/netrig.md.
var (
	// None adds nothing: the forwarder passes every packet at once.
	None = Profile{Name: "none"}
	// Home is a good home connection: 40 ms, 0.5% loss, 20 Mbit/s.
	Home = Profile{Name: "home", Delay: 40 * time.Millisecond, Loss: 0.005,
		Rate: 20_000_000, Queue: 50 * time.Millisecond}
	// Mobile is a phone on a fair cellular link: 150±30 ms, 3% loss, 1 Mbit/s.
	Mobile = Profile{Name: "mobile", Delay: 150 * time.Millisecond, Jitter: 30 * time.Millisecond,
		Loss: 0.03, Rate: 1_000_000, Queue: 200 * time.Millisecond}
	// Bad is a poor link: 300±80 ms, 8% loss, 256 kbit/s.
	Bad = Profile{Name: "bad", Delay: 300 * time.Millisecond, Jitter: 80 * time.Millisecond,
		Loss: 0.08, Rate: 256_000, Queue: 400 * time.Millisecond}
)

// Profiles are the named profiles, by name.
var Profiles = map[string]Profile{"none": None, "home": Home, "mobile": Mobile, "bad": Bad}

// ProfileByName returns the named profile, or an error listing the names.
func ProfileByName(name string) (Profile, error) {
	if p, ok := Profiles[name]; ok {
		return p, nil
	}
	names := make([]string, 0, len(Profiles))
	for n := range Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("netrig: no profile %q (have %s)", name, strings.Join(names, ", "))
}

// Validate reports a profile that cannot be applied.
func (p Profile) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"loss", p.Loss}, {"duplicate", p.Duplicate}, {"reorder", p.Reorder}} {
		if f.v < 0 || f.v > 1 || f.v != f.v {
			return fmt.Errorf("netrig: profile %s: %s %v is not a probability in [0, 1]", p.Name, f.name, f.v)
		}
	}
	switch {
	case p.Delay < 0 || p.Jitter < 0 || p.ReorderDelay < 0 || p.Queue < 0:
		return fmt.Errorf("netrig: profile %s: negative duration", p.Name)
	case p.Jitter > p.Delay:
		return fmt.Errorf("netrig: profile %s: jitter %v exceeds delay %v", p.Name, p.Jitter, p.Delay)
	case p.Rate < 0 || (p.Rate > 0 && p.Rate < 8_000):
		return fmt.Errorf("netrig: profile %s: rate %d bit/s is below 8 kbit/s", p.Name, p.Rate)
	case p.Delay > time.Minute || p.Queue > time.Minute:
		return fmt.Errorf("netrig: profile %s: delays over a minute are not a link", p.Name)
	}
	return nil
}

// String is one line: "mobile: 150±30 ms, 3% loss, 1 Mbit/s".
func (p Profile) String() string {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "custom"
	}
	fmt.Fprintf(&b, "%s: ", name)
	if p.Jitter > 0 {
		fmt.Fprintf(&b, "%v±%v RTT", p.Delay, p.Jitter)
	} else {
		fmt.Fprintf(&b, "%v RTT", p.Delay)
	}
	fmt.Fprintf(&b, ", %g%% loss", p.Loss*100)
	if p.Duplicate > 0 {
		fmt.Fprintf(&b, ", %g%% duplicated", p.Duplicate*100)
	}
	if p.Reorder > 0 {
		fmt.Fprintf(&b, ", %g%% reordered by %v", p.Reorder*100, p.reorderDelay())
	}
	if p.Rate > 0 {
		fmt.Fprintf(&b, ", %s each way (queue %v)", rateString(p.Rate), p.queue())
	} else {
		b.WriteString(", uncapped")
	}
	return b.String()
}

func (p Profile) queue() time.Duration {
	if p.Queue == 0 {
		return 100 * time.Millisecond
	}
	return p.Queue
}

func (p Profile) reorderDelay() time.Duration {
	if p.ReorderDelay > 0 {
		return p.ReorderDelay
	}
	return max(10*time.Millisecond, p.Jitter)
}

// oneWay is the profile as one direction's forwarder applies it.
func (p Profile) oneWay() direction {
	return direction{
		delay:        p.Delay / 2,
		jitter:       p.Jitter / 2,
		loss:         p.Loss,
		duplicate:    p.Duplicate,
		reorder:      p.Reorder,
		reorderDelay: p.reorderDelay(),
	}
}

func rateString(bps int64) string {
	switch {
	case bps >= 1_000_000 && bps%100_000 == 0:
		return fmt.Sprintf("%g Mbit/s", float64(bps)/1e6)
	case bps >= 1_000 && bps%1_000 == 0:
		return fmt.Sprintf("%d kbit/s", bps/1000)
	}
	return fmt.Sprintf("%d bit/s", bps)
}
