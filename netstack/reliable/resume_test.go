package reliable

import (
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// An Endpoint whose peer went silent past its connection timeout fails;
// resumed on a new path it retransmits everything unacknowledged at once,
// and the receiver delivers each message once, in order.
func TestResumeAfterDeliveryFailure(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := Config{ConnectionTimeout: time.Second}
	a, b := New(cfg, t0), New(cfg, t0)
	for i := range 5 {
		if err := a.Send(wire.MessageType(1000+i), wire.ReliableOrdered, []byte{byte(i)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	var lost int
	if err := a.Poll(t0, func(*wire.Header, []byte) { lost++ }); err != nil || lost != 5 {
		t.Fatalf("first poll: %d sent, %v", lost, err)
	}
	later := t0.Add(3 * time.Second)
	if err := a.Poll(later, func(*wire.Header, []byte) {}); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("after the outage: %v, want ErrDeliveryFailed", err)
	}
	if err := a.Resume(later); err != nil {
		t.Fatal(err)
	}
	var got []byte
	deliver := func(h *wire.Header, p []byte) { got = append(got, p...) }
	resent := 0
	err := a.Poll(later, func(h *wire.Header, p []byte) {
		resent++
		b.Receive(h, p, later, deliver)
		b.Receive(h, p, later, deliver) // a duplicate: not delivered again
	})
	if err != nil || resent != 5 {
		t.Fatalf("resumed poll: %d resent, %v", resent, err)
	}
	if string(got) != "\x00\x01\x02\x03\x04" {
		t.Fatalf("delivered % x, want 00..04 once each", got)
	}
	a.Close()
	if err := a.Resume(later); err != ErrClosed {
		t.Fatalf("closed endpoint resumed: %v", err)
	}
}
