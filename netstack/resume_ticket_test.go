package netstack

import (
	"testing"
	"time"
)

// A ticket opens under the key that sealed it for one more lifetime after
// that key is replaced, and never after that; a long pause forgets every
// old key.
func TestTicketJarRotation(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	j := newTicketJar(time.Hour, t0)
	c := ticketClaims{clientID: 9, generation: 1, expires: t0.Add(time.Hour).Unix(), name: "ann"}
	tk := j.seal(&c, t0.Add(59*time.Minute))
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {59 * time.Minute, true}, {61 * time.Minute, true}, {119 * time.Minute, true}, {121 * time.Minute, false}} {
		if _, err := j.open(tk, t0.Add(tc.at)); (err == nil) != tc.want {
			t.Errorf("at +%v: opened %v, want %v", tc.at, err == nil, tc.want)
		}
	}
	j2 := newTicketJar(time.Hour, t0)
	tk2 := j2.seal(&c, t0)
	if _, err := j2.open(tk2, t0.Add(10*time.Hour)); err == nil {
		t.Error("a ticket opened after a long pause")
	}
	if _, err := j2.open(tk2[:len(tk2)-1], t0); err == nil {
		t.Error("a truncated ticket opened")
	}
}

// A seat whose ticket passed half its lifetime is sent a fresh one.
func TestTicketReissued(t *testing.T) {
	r := newSeatRig(t, resumeHoldOK)
	c := r.dial(t, "fay")
	c.sess.mu.Lock()
	first := string(c.rt.ticket)
	c.sess.mu.Unlock()
	p := r.srv.admitted(c.ID())
	p.mu.Lock()
	r.srv.resumeServiceLocked(p, time.Now().Add(DefaultTicketLifetime/2-time.Minute))
	early := r.srv.Counters().ResumeTicketsIssued.Load()
	r.srv.resumeServiceLocked(p, time.Now().Add(DefaultTicketLifetime/2+time.Second))
	p.mu.Unlock()
	r.srv.Flush()
	if early != 1 || r.srv.Counters().ResumeTicketsIssued.Load() != 2 {
		t.Fatalf("tickets issued: %d before half the lifetime, %d after; want 1, 2", early, r.srv.Counters().ResumeTicketsIssued.Load())
	}
	waitFor(t, "the fresh ticket", func() bool {
		c.sess.mu.Lock()
		defer c.sess.mu.Unlock()
		return string(c.rt.ticket) != first
	})
}
