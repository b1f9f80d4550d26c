package netstack

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Resumption while the server drains or is full (docs/protocol.md §3.14,
// §3.15): a held seat is not a new admission, so its player comes back to
// it; a new player is still refused, with the drain's (or capacity's)
// reason and detail. Real UDP through the dark-able relay.

const seatDrainDetail = "the server is restarting; connect to another server"

func TestResumeWhileDraining(t *testing.T) {
	r := newSeatRig(t, resumeHoldOK)
	testResumeDespiteRefusal(t, r, func() { r.srv.SetDraining(seatDrainDetail) },
		wire.DisconnectServerDraining, seatDrainDetail)
	if got := r.srv.Counters().AdmissionDrainRefused.Load(); got != 1 {
		t.Fatalf("refusals at admission for the drain: %d, want 1", got)
	}
}

// A held seat keeps its slot, so a server that is full with it must still
// let its player back.
func TestResumeWhileFull(t *testing.T) {
	r := newSeatRig(t, resumeHoldOK, func(c *ServerConfig) { c.MaxClients = 1 })
	testResumeDespiteRefusal(t, r, func() {}, wire.DisconnectServerFull, "server is full; try again later")
	if got := r.srv.Counters().AdmissionFullRefused.Load(); got != 1 {
		t.Fatalf("refusals at admission for capacity: %d, want 1", got)
	}
	// With no seat held, a full server refuses at the hello, as before.
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	_, err := Dial(ctx, r.clientConfig("later"))
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != HandshakeRejected || he.Reason != wire.RejectServerFull {
		t.Fatalf("a new player, no seat held: %v, want ConnectRejected ServerFull", err)
	}
}

// testResumeDespiteRefusal: a client's seat is held; refuse() makes the
// server refuse newcomers; a message is sent to the held seat; a new
// player is refused (reason, detail) and the held one resumes its seat
// and gets the message, the game told "resumed" and nothing else.
func testResumeDespiteRefusal(t *testing.T, r *seatRig, refuse func(), reason wire.DisconnectReason, detail string) {
	c := r.dial(t, "ann")
	id := c.ID()
	r.goDark(t, c)
	refuse()
	if err := r.srv.Send(id, lineType, wire.ReliableOrdered, []byte("handoff")); err != nil {
		t.Fatalf("send to the held seat: %v", err)
	}
	r.link.SetDark(false)

	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	_, err := Dial(ctx, r.clientConfig("newcomer"))
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != HandshakeRefusedName || he.Disconnect != reason || he.Detail != detail {
		t.Fatalf("a new player: %v, want refused at admission %v %q", err, reason, detail)
	}
	nc, err := c.Resume(ctx)
	if err != nil {
		t.Fatalf("resuming a held seat: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	if nc.ID() != id {
		t.Fatalf("resumed as %d, want %d", nc.ID(), id)
	}
	if got := lines(t, nc, 1); !slices.Equal(got, []string{"handoff"}) {
		t.Fatalf("after the resumption: %v", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Equal(r.admitted, []uint32{id}) || len(r.resumed) != 1 || len(r.left) != 0 {
		t.Fatalf("admitted %v, resumed %v, left %v: want ann admitted once, resumed once, never left",
			r.admitted, r.resumed, r.left)
	}
}
