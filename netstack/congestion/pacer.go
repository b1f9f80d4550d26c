package congestion

import "time"

// burstTime is how much sending a Pacer lets out at once: 10 ms at its
// rate (and at least two full datagrams), as the rig's tbf bucket and a
// home router's queue take it.
const burstTime = 10 * time.Millisecond

// Pacer is a token bucket of bytes: Refill adds rate × time passed, up to
// a burst; what a session sends is Spent. Sending that must go (acks,
// reliable messages, a game's latency-critical unreliable messages) may
// overdraw it, which holds back what can wait (superseded state) until
// the debt is paid. The zero value starts empty and is ready to use.
type Pacer struct {
	tokens float64
	at     time.Time
}

// Refill adds what rate (bytes/s) earned since the last call, up to the
// burst allowed for datagrams of up to datagram bytes.
func (p *Pacer) Refill(now time.Time, rate float64, datagram int) {
	burst := max(rate*burstTime.Seconds(), 2*float64(datagram))
	if p.at.IsZero() {
		p.tokens, p.at = burst, now
		return
	}
	if dt := now.Sub(p.at); dt > 0 {
		p.tokens = min(p.tokens+rate*dt.Seconds(), burst)
		p.at = now
	}
}

// Spend takes n bytes from the bucket (it may go below zero).
func (p *Pacer) Spend(n int) { p.tokens -= float64(n) }

// Allows reports whether n more bytes may leave now.
func (p *Pacer) Allows(n int) bool { return p.tokens >= float64(n) }

// Tokens is the bucket's content in bytes (negative: debt).
func (p *Pacer) Tokens() float64 { return p.tokens }

// Wait is how long until the bucket holds n bytes at rate.
func (p *Pacer) Wait(n int, rate float64) time.Duration {
	if p.tokens >= float64(n) || rate <= 0 {
		return 0
	}
	return time.Duration((float64(n) - p.tokens) / rate * float64(time.Second))
}
