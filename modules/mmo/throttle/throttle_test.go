package throttle_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/throttle"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestLockoutAfterMaxFailures(t *testing.T) {
	l := throttle.New(throttle.Config{})
	now := t0
	for i := 1; i < throttle.DefaultMaxFailures; i++ {
		if _, locked := l.Failure("alice", now); locked {
			t.Fatalf("locked after %d failures", i)
		}
		if _, ok := l.Check("alice", now); !ok {
			t.Fatalf("refused after %d failures", i)
		}
		now = now.Add(time.Second)
	}
	retry, locked := l.Failure("alice", now)
	if !locked || retry != throttle.DefaultLockout {
		t.Fatalf("fifth failure: locked=%v retry=%v", locked, retry)
	}
	if retry, ok := l.Check("alice", now.Add(10*time.Second)); ok || retry != 20*time.Second {
		t.Fatalf("during lockout: ok=%v retry=%v", ok, retry)
	}
	if _, ok := l.Check("bob", now); !ok {
		t.Fatal("another key is locked too")
	}
	if _, ok := l.Check("alice", now.Add(throttle.DefaultLockout)); !ok {
		t.Fatal("still locked when the lockout ended")
	}
	// After the lockout the count starts again from zero.
	if _, locked := l.Failure("alice", now.Add(throttle.DefaultLockout)); locked {
		t.Fatal("one failure after a lockout locks again")
	}
}

func TestFailuresOutsideTheWindowDoNotAccumulate(t *testing.T) {
	l := throttle.New(throttle.Config{MaxFailures: 3, Window: 10 * time.Second})
	now := t0
	for i := 0; i < 10; i++ {
		// Two failures per window never reach three.
		if _, locked := l.Failure("k", now); locked {
			t.Fatalf("locked at failure %d", i)
		}
		if i%2 == 1 {
			now = now.Add(10 * time.Second)
		}
	}
	now = now.Add(time.Hour)
	l.Failure("k", now)
	l.Failure("k", now.Add(time.Second))
	if _, locked := l.Failure("k", now.Add(2*time.Second)); !locked {
		t.Fatal("three failures within the window did not lock")
	}
}

func TestFailureWhileLockedDoesNotExtend(t *testing.T) {
	l := throttle.New(throttle.Config{MaxFailures: 1, Lockout: 30 * time.Second})
	l.Failure("k", t0)
	retry, locked := l.Failure("k", t0.Add(10*time.Second))
	if !locked || retry != 20*time.Second {
		t.Fatalf("locked=%v retry=%v", locked, retry)
	}
}

func TestSuccessClears(t *testing.T) {
	l := throttle.New(throttle.Config{MaxFailures: 2})
	l.Failure("k", t0)
	l.Success("k")
	if _, locked := l.Failure("k", t0); locked {
		t.Fatal("a success did not clear the count")
	}
	if l.Len() != 1 {
		t.Fatalf("Len = %d", l.Len())
	}
	l.Success("k")
	l.Success("never seen")
	if l.Len() != 0 {
		t.Fatalf("Len = %d after Success", l.Len())
	}
}

func TestMemoryIsBounded(t *testing.T) {
	l := throttle.New(throttle.Config{MaxKeys: 100, MaxFailures: 2})
	// The oldest key is locked, then 1000 other keys fail once each.
	l.Failure("victim", t0)
	l.Failure("victim", t0)
	for i := 0; i < 1000; i++ {
		l.Failure(strconv.Itoa(i), t0.Add(time.Duration(i)*time.Millisecond))
		if l.Len() > 100 {
			t.Fatalf("Len %d above MaxKeys", l.Len())
		}
	}
	if l.Evictions() != 901 {
		t.Fatalf("evictions = %d, want 901", l.Evictions())
	}
	// The most recent keys are still counted.
	if _, locked := l.Failure("999", t0.Add(time.Second)); !locked {
		t.Fatal("a recent key was forgotten")
	}
	// A recently touched key survives eviction of older ones.
	l2 := throttle.New(throttle.Config{MaxKeys: 2, MaxFailures: 2})
	l2.Failure("a", t0)
	l2.Failure("b", t0)
	l2.Failure("a", t0) // a is now the most recent (and locked)
	l2.Failure("c", t0) // evicts b
	if _, ok := l2.Check("a", t0); ok {
		t.Fatal("the most recently failed key was evicted")
	}
}

func TestZeroConfigDefaults(t *testing.T) {
	c := throttle.New(throttle.Config{}).Config()
	if c.MaxFailures != 5 || c.Window != time.Minute || c.Lockout != 30*time.Second || c.MaxKeys != 10000 {
		t.Fatalf("defaults %+v", c)
	}
}
