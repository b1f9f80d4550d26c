package ratelimit

import (
	"errors"
	"testing"
	"time"
)

func TestBucketBurstAndRefill(t *testing.T) {
	b := NewBucket(BucketConfig{Burst: 5, RefillPerSecond: 10})
	got := 0
	for range 20 {
		if b.Allow(t0) {
			got++
		}
	}
	if got != 5 {
		t.Fatalf("burst 5 at one instant: %d allowed", got)
	}
	if b.Allow(t0.Add(ms(99))) {
		t.Fatal("a token came back before 100 ms at 10/s")
	}
	if !b.Allow(t0.Add(ms(100))) {
		t.Fatal("no token after 100 ms at 10/s")
	}
	if b.Allow(t0.Add(-time.Hour)) {
		t.Fatal("an earlier time refilled the bucket")
	}
	got = 0
	for range 20 {
		if b.Allow(t0.Add(time.Hour)) {
			got++
		}
	}
	if got != 5 {
		t.Fatalf("after an idle hour: %d allowed, want the burst of 5", got)
	}
}

func TestBucketValidate(t *testing.T) {
	for _, c := range []BucketConfig{{0, 1}, {1, 0}, {1 << 21, 1}, {1, 2e9}} {
		if err := c.Validate(); !errors.Is(err, ErrBucketConfig) {
			t.Errorf("%+v: %v, want ErrBucketConfig", c, err)
		}
	}
	if err := (BucketConfig{Burst: 1000, RefillPerSecond: 1000}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestBucketAllowDoesNotAllocate(t *testing.T) {
	b := NewBucket(BucketConfig{Burst: 10, RefillPerSecond: 1e6})
	now := t0
	if n := testing.AllocsPerRun(1000, func() { now = now.Add(time.Microsecond); b.Allow(now) }); n != 0 {
		t.Fatalf("Bucket.Allow allocates %v times", n)
	}
}

// 64-bit keys above 2^32 are sources of their own: they never share a bucket
// with the IPv4 address that has the same low 32 bits.
func TestAllowKeyWideKeys(t *testing.T) {
	l := New(Config{Burst: 2, RefillPerSecond: minRefill})
	ip := [4]byte{10, 0, 0, 1}
	wide := uint64(1)<<63 | uint64(10)<<24 | 1
	for i := range 2 {
		if !l.Allow(ip, t0) || !l.AllowKey(wide, t0) {
			t.Fatalf("datagram %d refused", i)
		}
	}
	if l.Allow(ip, t0) || l.AllowKey(wide, t0) {
		t.Fatal("a bucket exceeded its burst")
	}
	if !l.AllowKey(uint64(10)<<24|1|1<<40, t0) {
		t.Fatal("a third key shares a bucket")
	}
}
