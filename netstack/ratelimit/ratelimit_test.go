package ratelimit

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is an arbitrary virtual instant; every test moves time by hand.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func ipOf(n uint32) [4]byte { return [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

func countAllowed(l *Limiter, ip [4]byte, now time.Time, n int) int {
	allowed := 0
	for range n {
		if l.Allow(ip, now) {
			allowed++
		}
	}
	return allowed
}

func TestBurstAtOneInstant(t *testing.T) {
	l := New(Config{})
	if got := countAllowed(l, [4]byte{127, 0, 0, 1}, t0, 40); got != 16 {
		t.Fatalf("40 Connects at one instant: %d allowed, want 16", got)
	}
}

func TestRefillOverVirtualTime(t *testing.T) {
	l := New(Config{})
	ip := [4]byte{192, 168, 1, 7}
	countAllowed(l, ip, t0, 16)
	steps := []struct {
		at   time.Duration // since t0
		try  int
		want int
	}{
		{ms(0), 5, 0},             // empty
		{ms(249), 5, 0},           // a token takes 250 ms at 4/s
		{ms(250), 5, 1},           // exactly one token back
		{ms(1250), 10, 4},         // one more second: four more
		{ms(1500), 1, 1},          // 250 ms later: one
		{ms(1500 + 4000), 40, 16}, // long idle: full again, never more than burst
		{ms(100_000), 40, 16},
	}
	for _, s := range steps {
		if got := countAllowed(l, ip, t0.Add(s.at), s.try); got != s.want {
			t.Errorf("at +%v: %d of %d allowed, want %d", s.at, got, s.try, s.want)
		}
	}
}

func TestSourcesAreIndependent(t *testing.T) {
	l := New(Config{})
	a, b := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	if got := countAllowed(l, a, t0, 40); got != 16 {
		t.Fatalf("a: %d allowed, want 16", got)
	}
	if got := countAllowed(l, b, t0, 40); got != 16 {
		t.Fatalf("b after a exhausted: %d allowed, want 16", got)
	}
}

// The budget is keyed by the address alone: Connects from one address on
// different ports share one bucket, which the API enforces by taking no port.
func TestSameAddressDifferentPortsShareBucket(t *testing.T) {
	l := New(Config{})
	allowed := 0
	for port := 40000; port < 40040; port++ {
		_ = port // a caller passes only the address, whatever the port
		if l.Allow([4]byte{192, 168, 1, 9}, t0) {
			allowed++
		}
	}
	if allowed != 16 {
		t.Fatalf("%d allowed across ports, want 16", allowed)
	}
}

func TestCustomConfig(t *testing.T) {
	l := New(Config{Burst: 3, RefillPerSecond: 0.5})
	ip := [4]byte{127, 0, 0, 2}
	if got := countAllowed(l, ip, t0, 10); got != 3 {
		t.Fatalf("burst 3: %d allowed", got)
	}
	if got := countAllowed(l, ip, t0.Add(ms(1999)), 10); got != 0 {
		t.Fatalf("before 2 s at 0.5/s: %d allowed", got)
	}
	if got := countAllowed(l, ip, t0.Add(ms(2000)), 10); got != 1 {
		t.Fatalf("at 2 s at 0.5/s: %d allowed", got)
	}
}

func TestTimeGoingBackwardsRefillsNothing(t *testing.T) {
	l := New(Config{})
	ip := [4]byte{127, 0, 0, 3}
	countAllowed(l, ip, t0, 16)
	if got := countAllowed(l, ip, t0.Add(-time.Hour), 5); got != 0 {
		t.Fatalf("an earlier time granted %d", got)
	}
	if got := countAllowed(l, ip, t0.Add(ms(250)), 5); got != 1 {
		t.Fatalf("after the backwards step, +250 ms granted %d, want 1", got)
	}
}

// Offsets are clamped to ±2^62 ns (about 146 years) from the first time seen.
// Beyond that time stops advancing for the limiter: it refills nothing (fail
// closed) and never wraps around into a huge grant.
func TestExtremeTimesFailClosed(t *testing.T) {
	l := New(Config{})
	ip := [4]byte{127, 0, 0, 4}
	l.Allow(ip, time.Time{})
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := countAllowed(l, ip, far, 40); got != 16 {
		t.Fatalf("far future: %d allowed, want 16", got)
	}
	if got := countAllowed(l, ip, far.Add(time.Hour), 40); got != 0 {
		t.Fatalf("far future + 1h, past the clamp: %d allowed, want 0", got)
	}
	if got := countAllowed(l, ip, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour), 40); got != 0 {
		t.Fatalf("far past: %d allowed, want 0", got)
	}
	if got := countAllowed(l, [4]byte{127, 0, 0, 5}, far.Add(time.Hour), 40); got != 16 {
		t.Fatalf("new source past the clamp: %d allowed, want 16", got)
	}
}

func TestTableBoundUnderMillionSources(t *testing.T) {
	const max = 4096
	l := New(Config{MaxSources: max})
	now := t0
	for i := range uint32(1_000_000) {
		now = now.Add(time.Microsecond) // 1e6 spoofed sources within one virtual second
		l.Allow(ipOf(0x0A000000+i), now)
		if i%4096 == 0 && l.Len() > max {
			t.Fatalf("after %d sources: Len %d > %d", i+1, l.Len(), max)
		}
	}
	if l.Len() != max || cap(l.entries) != max || len(l.index) != 2*max {
		t.Fatalf("Len %d, slab cap %d, index %d: table grew", l.Len(), cap(l.entries), len(l.index))
	}
}

// When every slot holds a partly spent bucket, a new source is still
// admitted (the least spent bucket makes room), and a tracked source that
// keeps sending keeps its own spent budget.
func TestFullTableAdmitsNewSources(t *testing.T) {
	l := New(Config{MaxSources: 64})
	for i := range uint32(64) {
		if !l.Allow(ipOf(i+1), t0) {
			t.Fatalf("source %d refused while the table had room", i)
		}
	}
	if got := countAllowed(l, ipOf(1), t0, 40); got != 15 { // source 1: spent
		t.Fatalf("tracked source got %d more, want 15", got)
	}
	for i := range uint32(200) {
		if !l.Allow(ipOf(1000+i), t0.Add(time.Duration(i)*time.Microsecond)) {
			t.Fatalf("new source %d refused by a full table", i)
		}
	}
	if l.Len() != 64 || l.SpentEvictions() == 0 {
		t.Fatalf("Len %d, spent evictions %d", l.Len(), l.SpentEvictions())
	}
	if l.Allow(ipOf(1), t0.Add(time.Millisecond)) {
		t.Fatal("the spent source was reset by the newcomers: the least spent buckets should go first")
	}
}

// TestSpoofedFloodBeyondTheTableLocksNobodyOut: more distinct sources than
// the table holds (the default 65,536), each sending once within a
// quarter second so that no bucket refills, and then a real player: it is
// admitted with its full burst.
func TestSpoofedFloodBeyondTheTableLocksNobodyOut(t *testing.T) {
	l := New(Config{})
	now := t0
	for i := range uint32(3 * DefaultMaxSources) {
		now = now.Add(time.Microsecond) // 196,608 sources in 0.2 s
		l.Allow([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}, now)
	}
	player := [4]byte{192, 168, 7, 7}
	if got := countAllowed(l, player, now, 40); got != DefaultBurst {
		t.Fatalf("a real player after the flood got %d of its burst of %d", got, DefaultBurst)
	}
	if l.Len() != DefaultMaxSources {
		t.Fatalf("Len %d", l.Len())
	}
}

// The central safety claim: no matter how many spoofed sources churn through
// the table, a real source is admitted at most Burst + d·Refill times in d seconds.
func TestFloodCannotResetVictim(t *testing.T) {
	const max = 256
	l := New(Config{MaxSources: max})
	victim := [4]byte{192, 168, 1, 50}
	granted := 0
	now := t0
	const steps = 1_000_000
	const step = 5 * time.Microsecond // 5 virtual seconds in all
	for i := range uint32(steps) {
		now = now.Add(step)
		l.Allow(ipOf(0x0B000000+i), now) // spoofed, never repeated
		if i%100 == 0 && l.Allow(victim, now) {
			granted++
		}
	}
	elapsed := now.Sub(t0).Seconds()
	limit := DefaultBurst + int(elapsed*DefaultRefillPerSecond) + 1
	if granted > limit {
		t.Fatalf("victim granted %d in %.1f s, budget allows %d", granted, elapsed, limit)
	}
	if granted < DefaultBurst {
		t.Fatalf("victim granted only %d: the flood starved a tracked source", granted)
	}
}

// A full bucket may be evicted; coming back it gets exactly a full burst, as a
// bucket that was never evicted would.
func TestEvictedFullBucketIsEquivalentToFresh(t *testing.T) {
	l := New(Config{MaxSources: 8})
	victim := ipOf(1)
	l.Allow(victim, t0)
	later := t0.Add(10 * time.Second) // victim's bucket is full again
	for i := range uint32(64) {
		l.Allow(ipOf(100+i), later) // churn evicts the full bucket
	}
	for _, e := range l.entries {
		if e.key == 1 {
			t.Fatal("victim's full bucket was not evicted by the churn")
		}
	}
	// One second on, the churn's buckets are full too, so the victim finds a slot.
	if got := countAllowed(l, victim, later.Add(time.Second), 40); got != 16 {
		t.Fatalf("victim after eviction: %d allowed, want 16", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	l := New(Config{MaxSources: 128})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if l.Allow([4]byte{127, 0, 0, 1}, t0) {
					allowed.Add(1)
				}
				l.Allow(ipOf(uint32(g*1000+i)), t0.Add(time.Duration(i)*time.Millisecond))
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 16 {
		t.Fatalf("one address at one instant from 8 goroutines: %d allowed, want 16", allowed.Load())
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l := New(Config{MaxSources: 1024})
	now := t0
	i := uint32(0)
	allocs := testing.AllocsPerRun(10000, func() {
		now = now.Add(time.Microsecond)
		i++
		l.Allow(ipOf(i), now) // new sources, then eviction once full
		l.Allow(ipOf(i%16), now)
	})
	if allocs != 0 {
		t.Fatalf("Allow allocates %v times per run", allocs)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Burst: -1},
		{Burst: maxBurst + 1},
		{RefillPerSecond: -1},
		{RefillPerSecond: 1e-4},
		{RefillPerSecond: 2e9},
		{MaxSources: -5},
		{MaxSources: maxMaxSources + 1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate() = %v, want ErrConfig", c, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted an invalid Config")
		}
	}()
	New(Config{Burst: -1})
}

func BenchmarkAllow(b *testing.B) {
	l := New(Config{})
	now := t0
	i := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		i++
		if i&1023 == 0 {
			now = now.Add(time.Millisecond)
		}
		l.Allow(ipOf(0x0A000000+i&1023), now) // 1024 steady sources
	}
}

// BenchmarkAllowFlood is the spoofed-source case: every datagram a new address,
// the table full, each one paying for an eviction scan.
func BenchmarkAllowFlood(b *testing.B) {
	l := New(Config{})
	now := t0
	i := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		i++
		now = now.Add(time.Microsecond)
		l.Allow(ipOf(i), now)
	}
}
