package netstack_test

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestQueueFlushSendsWhatIsQueued: what was queued before QueueFlush
// leaves with it — packed by the tick writer — though the service loop
// would not flush it for an hour and no heartbeat is due for as long. (An
// unreliable message: a reliable one is the reliability engine's to send
// when due, which the service loop does too.)
func TestQueueFlushSendsWhatIsQueued(t *testing.T) {
	srv := newTestServer(t, func(c *netstack.ServerConfig) {
		c.FlushDelay, c.HeartbeatInterval, c.Timeout = time.Hour, time.Hour, 2*time.Hour
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "queued", Pin: srv.Pin(),
		HeartbeatInterval: time.Hour, Timeout: 2 * time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	// Let the admission's Acks go first: a flush they cause would take
	// the update along (this wait can only make the test pass wrongly,
	// never fail).
	time.Sleep(300 * time.Millisecond)
	for i := range 3 {
		update := []byte{byte(i), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		if err := srv.Send(cli.ID(), gamemsg.TypeEntityStateUpdate, wire.Unreliable, update); err != nil {
			t.Fatal(err)
		}
	}
	srv.QueueFlush()
	for got := 0; got < 3; {
		m, err := cli.Receive(ctx)
		if err != nil {
			t.Fatalf("%d of the 3 updates queued before QueueFlush arrived: %v", got, err)
		}
		if m.Header.Type == gamemsg.TypeEntityStateUpdate {
			got++
		}
	}
}

// TestQueueFlushAfterCloseIsANoOp: a QueueFlush after Close neither blocks
// nor panics (the host's last tick may race its shutdown).
func TestQueueFlushAfterCloseIsANoOp(t *testing.T) {
	srv := newTestServer(t, nil)
	srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 { // more than the flushers that may wait for the writer
			srv.QueueFlush()
		}
		srv.Flush()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("QueueFlush after Close blocked")
	}
}
