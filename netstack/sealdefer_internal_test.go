package netstack

import (
	"bytes"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestTickBatchSealedByItsWriter: a flush into the tick's batch (deferSeal)
// takes each datagram's sequence and writes its header but leaves the
// encryption to the batch's writer; a flush of the same session in
// between (the receive pass's) seals at once with the next sequence; once
// the writer sealed the tick's batch, the client opens every datagram of
// both, whatever order they arrive in, and a deferred one is the frame an
// immediate seal would have made.
func TestTickBatchSealedByItsWriter(t *testing.T) {
	srv, cli := sessionPair(t)
	now := time.Now()
	reg := gamemsg.NewRegistry()
	send := func(n int) {
		for i := range n {
			if err := srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, []byte{byte(i), 1, 0, 0}, now); err != nil {
				t.Fatal(err)
			}
			for k := range 10 {
				if err := srv.sendLocked(gamemsg.TypeEntityStateUpdate, wire.Unreliable, stateUpdate(uint32(k+1), byte(i)), now); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tick := datagramBatch{deferSeal: true}
	send(8) // several datagrams
	srv.flushLocked(now, &tick)
	if len(tick.spans) < 2 {
		t.Fatalf("%d datagrams in the tick's batch, want several", len(tick.spans))
	}
	for i, sp := range tick.spans {
		if !sp.pending.Pending() {
			t.Fatalf("datagram %d of the tick's batch was sealed by the flush, not left to its writer", i)
		}
	}
	plain := bytes.Clone(tick.buf)
	var rx datagramBatch // the receive pass's: sealed at once
	send(1)
	srv.flushLocked(now, &rx)
	if len(rx.spans) == 0 || rx.spans[0].pending.Pending() {
		t.Fatal("an immediate batch was not sealed by its flush")
	}
	got := 0
	deliver := func(*wire.Header, []byte) { got++ }
	for _, sp := range rx.spans { // the receive pass's datagram arrives first
		cli.receiveLocked(reg, rx.buf[sp.start:sp.end], now, deliver, nil)
	}
	tick.sealPending()
	for i, sp := range tick.spans {
		if sp.pending.Pending() {
			t.Fatalf("datagram %d still pending after sealPending", i)
		}
		if bytes.Equal(tick.buf[sp.start:sp.end], plain[sp.start:sp.end]) {
			t.Fatalf("datagram %d unchanged by sealing", i)
		}
		cli.receiveLocked(reg, tick.buf[sp.start:sp.end], now, deliver, nil)
	}
	if st := cli.ctr.snapshot(); got != 9*11 || st.PacketsDropped != 0 {
		t.Fatalf("the client took %d of 99 messages (counters %+v)", got, st)
	}
}

// TestOnlyTheTickBatchDefersSealing: the batches Flush packs into (the
// tick writer's) leave the encryption to their writer; the receive pass's
// and the service loop's seal in their flush.
func TestOnlyTheTickBatchDefersSealing(t *testing.T) {
	srv, _ := sinkServer(t, nil)
	if srv.rxFlush.b.deferSeal || srv.svcFlush.b.deferSeal {
		t.Fatal("the receive pass's or the service loop's batch defers its sealing")
	}
	for range tickFlushers {
		if f := <-srv.tickFree; !f.b.deferSeal {
			t.Fatal("a tick batch is sealed on the game thread")
		}
	}
}
