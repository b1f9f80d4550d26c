package netstack_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestMessagesForAFailedModuleAreRefusedAtOnce: a module that failed for
// good (Registry.Abandon) is not coming back by itself, so a client's
// reliable message of its types is refused NotLoaded at once — not held
// for the hold time — and one held while it was restarting is refused as
// soon as it fails. A client with DeliverRefusals receives the notices.
func TestMessagesForAFailedModuleAreRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, creg := gamemsg.NewRegistry(), gamemsg.NewRegistry()
		schema := wire.Schema{ID: 1400, Name: "Req", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered,
			MinLen: 1, MaxLen: 16, StringFieldOffset: wire.NoStringFields}
		for _, r := range []*wire.Registry{reg, creg} {
			if err := r.Register("mod", schema); err != nil {
				t.Fatal(err)
			}
		}
		srv, cli := memPair(t, memlink.Link{Latency: 5 * time.Millisecond}, netstack.ServerConfig{Registry: reg, HoldNotLoaded: time.Hour},
			netstack.ClientConfig{Registry: creg, DeliverRefusals: true})

		reg.UnregisterOwner("mod") // it crashed and restarts: held
		if err := cli.Send(1400, wire.ReliableOrdered, []byte{1}); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		time.Sleep(time.Second)
		if st := srv.Stats(); st.HeldNotLoaded != 1 || st.RefusedBy[wire.RefusedNotLoaded] != 0 {
			t.Fatalf("held %d, refused %v; want the message held", st.HeldNotLoaded, st.RefusedBy)
		}

		reg.Abandon("mod") // its restarts failed: failed for good
		if err := cli.Send(1400, wire.ReliableOrdered, []byte{2}); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		time.Sleep(time.Second) // far below the hour's hold
		if st := srv.Stats(); st.RefusedBy[wire.RefusedNotLoaded] != 2 || st.HeldDelivered != 0 {
			t.Fatalf("refused %v, delivered %d; want both refused NotLoaded at once", st.RefusedBy, st.HeldDelivered)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for notices := 0; notices < 2; {
			m, err := cli.Receive(ctx)
			if err != nil {
				t.Fatalf("the client received %d MessageRefused, want 2: %v", notices, err)
			}
			if m.Header.Type != wire.TypeMessageRefused {
				continue // the welcome
			}
			notices++
			n, err := wire.ParseMessageRefused(m.Payload)
			if err != nil || n.Type != 1400 || n.Reason != wire.RefusedNotLoaded {
				t.Fatalf("received %+v %v", n, err)
			}
		}

		if err := reg.Register("mod", schema); err != nil { // an operator loads it again
			t.Fatal(err)
		}
		got := make(chan byte, 1)
		srv.Handle(1400, func(_ uint32, _ *wire.Header, p []byte) { got <- p[0] })
		if err := cli.Send(1400, wire.ReliableOrdered, []byte{3}); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		select {
		case b := <-got:
			if b != 3 {
				t.Fatalf("delivered %d", b)
			}
		case <-time.After(time.Second):
			t.Fatal("a message of a module loaded again was not delivered")
		}
	})
}
