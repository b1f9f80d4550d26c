package throttle_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/throttle"
)

func TestBackoffGrows(t *testing.T) {
	b := throttle.NewBackoff(throttle.BackoffConfig{Free: 3, Base: time.Second, Max: 8 * time.Second})
	now := t0
	var delays []time.Duration
	for range 8 {
		if _, ok := b.Check("k", now); !ok {
			t.Fatalf("refused at %v after delays %v", now, delays)
		}
		d := b.Failure("k", now)
		delays = append(delays, d)
		if d > 0 {
			if retry, ok := b.Check("k", now.Add(d/2)); ok || retry != d-d/2 {
				t.Fatalf("half way through a %v delay: ok=%v retry=%v", d, ok, retry)
			}
		}
		now = now.Add(d)
	}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	// Never a hard lock: once the delay passed, the key may try.
	if _, ok := b.Check("k", now); !ok {
		t.Fatal("refused after the delay passed")
	}
	b.Success("k")
	if d := b.Failure("k", now); d != 0 {
		t.Fatalf("a success did not clear: %v", d)
	}
}

func TestBackoffForgets(t *testing.T) {
	b := throttle.NewBackoff(throttle.BackoffConfig{Free: 1, Forget: time.Minute})
	b.Failure("k", t0)
	if d := b.Failure("k", t0); d != time.Second {
		t.Fatalf("second failure: %v", d)
	}
	if d := b.Failure("k", t0.Add(2*time.Minute)); d != 0 {
		t.Fatalf("after Forget the count did not restart: %v", d)
	}
}

func TestBackoffMemoryIsBounded(t *testing.T) {
	b := throttle.NewBackoff(throttle.BackoffConfig{MaxKeys: 50})
	for i := range 500 {
		b.Failure(strconv.Itoa(i), t0)
		if b.Len() > 50 {
			t.Fatalf("Len %d", b.Len())
		}
	}
	if b.Evictions() != 450 {
		t.Fatalf("evictions %d", b.Evictions())
	}
}

func TestBackoffDelayHuge(t *testing.T) {
	c := throttle.NewBackoff(throttle.BackoffConfig{Base: time.Second, Max: time.Hour}).Config()
	if d := c.Delay(1 << 30); d != time.Hour {
		t.Fatalf("Delay(huge) = %v", d)
	}
}

func TestRate(t *testing.T) {
	r := throttle.NewRate(throttle.RateConfig{Burst: 3, Per: 30 * time.Second})
	for i := range 3 {
		if _, ok := r.Allow("a", t0); !ok {
			t.Fatalf("event %d refused", i)
		}
	}
	retry, ok := r.Allow("a", t0)
	if ok || retry != 10*time.Second {
		t.Fatalf("fourth: ok=%v retry=%v", ok, retry)
	}
	if _, ok := r.Allow("b", t0); !ok {
		t.Fatal("another key is limited")
	}
	if _, ok := r.Allow("a", t0.Add(10*time.Second)); !ok {
		t.Fatal("no token after one refill period")
	}
	if _, ok := r.Allow("a", t0.Add(10*time.Second)); ok {
		t.Fatal("two tokens after one refill period")
	}
	small := throttle.NewRate(throttle.RateConfig{MaxKeys: 10})
	for i := range 100 {
		small.Allow(strconv.Itoa(i), t0)
	}
	if small.Len() != 10 {
		t.Fatalf("Len %d", small.Len())
	}
}

// TestStrangersCannotLockOutTheOwner: wrong guesses from address A slow A
// down with growing delays, and never stop the owner's login from B.
func TestStrangersCannotLockOutTheOwner(t *testing.T) {
	g := throttle.NewLoginGate(throttle.GateConfig{
		Pairs:     throttle.BackoffConfig{Free: 3},
		Addresses: throttle.BackoffConfig{Free: 10},
		Accounts:  throttle.WindowConfig{Max: 100},
	})
	now := t0
	var last time.Duration
	for i := range 40 {
		if retry, ok := g.Begin("alice", "10.0.0.1", now); !ok {
			t.Fatalf("guess %d refused with %v to wait, after waiting the delay", i, retry)
		}
		d := g.Failure("alice", "10.0.0.1", now)
		if d < last {
			t.Fatalf("guess %d: delay %v shrank from %v", i, d, last)
		}
		if i >= 3 && d == 0 {
			t.Fatalf("guess %d is still free", i)
		}
		if _, ok := g.Begin("alice", "10.0.0.2", now); !ok {
			t.Fatalf("after %d guesses from A the owner cannot log in from B", i+1)
		}
		last = d
		now = now.Add(d)
	}
	if last != throttle.DefaultMax {
		t.Fatalf("delay capped at %v, want %v", last, throttle.DefaultMax)
	}
	if _, ok := g.Begin("alice", "10.0.0.1", now.Add(-time.Second)); ok {
		t.Fatal("A may guess before its delay passed")
	}
	// The owner logs in from B; A's pair is still delayed.
	g.Success("alice", "10.0.0.2", now)
	if _, ok := g.Begin("alice", "10.0.0.1", now.Add(-time.Second)); ok {
		t.Fatal("the owner's success cleared the stranger's delay")
	}
}

// TestStrangersShareOneBudget: addresses without a recent login of an
// account share at most Max attempts at it per Per, however many they
// are; the address the owner logged in from keeps its own allowance.
func TestStrangersShareOneBudget(t *testing.T) {
	g := throttle.NewLoginGate(throttle.GateConfig{
		Pairs:     throttle.BackoffConfig{Free: 3},
		Addresses: throttle.BackoffConfig{Free: 10},
		Accounts:  throttle.WindowConfig{Max: 10, Per: time.Minute},
	})
	g.Success("alice", "10.9.9.9", t0.Add(-time.Hour)) // her usual address
	attempts := 0
	for now := t0; now.Before(t0.Add(10 * time.Minute)); now = now.Add(100 * time.Millisecond) {
		// A new address every time: only the shared budget holds them.
		addr := "10.1." + strconv.Itoa(attempts/250) + "." + strconv.Itoa(attempts%250)
		if _, ok := g.Begin("alice", addr, now); ok {
			attempts++
			g.Failure("alice", addr, now)
		}
		if _, ok := g.Begin("alice", "10.9.9.9", now); !ok {
			t.Fatalf("the owner's address is refused at %v", now.Sub(t0))
		}
	}
	if attempts != 100 {
		t.Fatalf("%d stranger attempts in ten minutes, want 100 (10 a minute)", attempts)
	}
	// Any other name keeps its own budget: one account's does not spill.
	if _, ok := g.Begin("bob", "10.2.0.1", t0.Add(10*time.Minute)); !ok {
		t.Fatal("another account is refused")
	}
	// One address spraying one guess at many names is delayed after 10.
	for i := range 10 {
		if d := g.Failure("acct"+strconv.Itoa(i), "10.0.0.1", t0); d != 0 {
			t.Fatalf("spray %d delayed %v", i, d)
		}
	}
	if d := g.Failure("acct10", "10.0.0.1", t0); d != time.Second {
		t.Fatalf("eleventh spray: %v", d)
	}
	if _, ok := g.Begin("fresh", "10.0.0.1", t0); ok {
		t.Fatal("the spraying address may try a fresh name at once")
	}
	// A success clears the pair, not the address.
	g.Success("acct0", "10.0.0.1", t0)
	if _, ok := g.Begin("acct0", "10.0.0.1", t0); ok {
		t.Fatal("a success reset the address")
	}
}
