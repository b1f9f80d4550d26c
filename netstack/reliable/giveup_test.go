package reliable

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Protocol v4's give-up rule (Config.RetryUntilTimeout), on virtual time:
// a sender retries until the connection timeout, whatever the RTO, with
// every wait capped at MaxRetransmitWait, and gives up only after the wait
// of a transmission made a connection timeout after the first.

// transmissions polls e at each NextDeadline before end and returns when
// sequence s was (re)transmitted; it fails the test on a delivery failure.
func transmissions(t *testing.T, e *Endpoint, s uint32, end time.Duration) []time.Duration {
	t.Helper()
	var at []time.Duration
	for n := 0; n < 10000; n++ {
		d := e.NextDeadline().Sub(t0)
		if d >= end {
			return at
		}
		for _, p := range poll(t, e, d) {
			if p.h.Sequence == s {
				at = append(at, d)
			}
		}
	}
	t.Fatal("NextDeadline does not advance")
	return nil
}

// A peer dark for 9 s, far past ten retransmissions' waits at the 50 ms
// RTO (3.55 s), but within the 10 s connection timeout: the packet is
// retried throughout, at most a second apart, and is acknowledged.
func TestRetryUntilTimeoutOutlivesTenRetransmissions(t *testing.T) {
	e := New(Config{RetryUntilTimeout: true}, t0) // 10 s
	mustSend(t, e, wire.Reliable, "warm", 0)
	poll(t, e, 0)
	e.OnAck(Ack{Ack: 1}, at(ms)) // a loopback-sized sample: RTO 50 ms
	if rto := e.Stats().RTO; rto != MinRTO {
		t.Fatalf("RTO %v after a 1 ms sample, want %v", rto, MinRTO)
	}
	mustSend(t, e, wire.Reliable, "into the dark", 10*ms)
	poll(t, e, 10*ms)
	tx := transmissions(t, e, 2, 9*time.Second)
	if len(tx) <= DefaultMaxRetransmissions {
		t.Fatalf("%d retransmissions in a 9 s outage, want more than %d", len(tx), DefaultMaxRetransmissions)
	}
	prev := 10 * ms
	for i, d := range tx {
		if d-prev > MaxRetransmitWait {
			t.Fatalf("retransmission %d waited %v, more than %v", i+1, d-prev, MaxRetransmitWait)
		}
		prev = d
	}
	e.OnAck(Ack{Ack: 2}, at(9*time.Second)) // the peer is back
	if err := e.Poll(at(20*time.Second), (&recorder{}).emit); err != nil || !e.Settled() {
		t.Fatalf("after the ack: %v, settled %v", err, e.Settled())
	}
}

// A peer that never answers: the packets are retried, two probes a round,
// each wait at most a second (initial RTO 500 ms: 0.5 s, then 1 s, never
// v3's 2 s, 4 s); the oldest is given up at the end of the wait of its
// first transmission made 10 s or more after its first — at 11.5 s — and
// not a moment before.
func TestRetryUntilTimeoutGivesUpAfterALastTry(t *testing.T) {
	e := New(Config{RetryUntilTimeout: true}, t0)
	for range 5 {
		mustSend(t, e, wire.Reliable, "m", 0)
	}
	poll(t, e, 0)
	tx := transmissions(t, e, 1, 11500*ms)
	want := []time.Duration{500 * ms}
	for d := 1500 * ms; d <= 10500*ms; d += time.Second {
		want = append(want, d)
	}
	if !slices.Equal(tx, want) {
		t.Fatalf("sequence 1 retransmitted at %v, want %v", tx, want)
	}
	if d := e.NextDeadline(); !d.Equal(at(11500 * ms)) {
		t.Fatalf("failure deadline %v, want 11.5s", d.Sub(t0))
	}
	if err := e.Poll(at(11500*ms-time.Nanosecond), (&recorder{}).emit); err != nil {
		t.Fatalf("failed early: %v", err)
	}
	if err := e.Poll(at(11500*ms), (&recorder{}).emit); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("Poll at the end of the last try's wait: %v, want ErrDeliveryFailed", err)
	}
}

// The wait is capped at MaxRetransmitWait also when the RTO is at its
// 1 s maximum: a slow path's peer back from an outage is retried within a
// second, not after v3's 8 s.
func TestRetryUntilTimeoutCapsTheWait(t *testing.T) {
	e := New(Config{RetryUntilTimeout: true, ConnectionTimeout: time.Hour}, t0)
	mustSend(t, e, wire.Reliable, "slow path", 0)
	poll(t, e, 0)
	e.OnAck(Ack{Ack: 1}, at(3*time.Second)) // RTO clamped to 1 s
	mustSend(t, e, wire.Reliable, "m", 3*time.Second)
	poll(t, e, 3*time.Second)
	tx := transmissions(t, e, 2, 12*time.Second)
	want := []time.Duration{4 * time.Second, 5 * time.Second, 6 * time.Second, 7 * time.Second, 8 * time.Second,
		9 * time.Second, 10 * time.Second, 11 * time.Second}
	if !slices.Equal(tx, want) {
		t.Fatalf("retransmitted at %v, want every second: %v", tx, want)
	}
}

// A packet on its last try is retried afresh when its session resumes.
func TestResumeForgetsTheLastTry(t *testing.T) {
	e := New(Config{RetryUntilTimeout: true}, t0)
	mustSend(t, e, wire.Reliable, "m", 0)
	poll(t, e, 0)
	transmissions(t, e, 1, 11*time.Second) // the last try went at 10.5 s
	if err := e.Resume(at(11 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if tx := transmissions(t, e, 1, 20*time.Second); len(tx) < 9 {
		t.Fatalf("after the resumption retransmitted at %v only", tx)
	}
}
