package netstack_test

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// tickFlushClients is how many sessions a benchmark tick sends to.
const tickFlushClients = 64

// benchTickFlush times the game thread's part of a tick's sends and
// flush: one 500-byte reliable update to each of 64 real clients, then
// flush (Flush packs on the caller; QueueFlush leaves it to the tick
// writer). Between ticks, outside the timer, it waits until the tick's
// datagrams are packed, so that each tick starts with the writer idle.
func benchTickFlush(b *testing.B, flush func(*netstack.Server)) {
	srv := newTestServerTB(b, func(c *netstack.ServerConfig) { c.FlushDelay, c.MaxClients = time.Hour, tickFlushClients })
	ids := make([]uint32, 0, tickFlushClients)
	for range tickFlushClients {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "bench", Pin: srv.Pin()}))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		go func() { // receive (and so acknowledge) until closed
			for {
				if _, err := c.Receive(context.Background()); err != nil {
					return
				}
			}
		}()
		ids = append(ids, c.ID())
	}
	update := make([]byte, 500)
	for b.Loop() {
		sent := srv.Stats().MessagesSent
		for _, id := range ids {
			if err := srv.Send(id, gamemsg.TypeEntityStateUpdate, wire.ReliableOrdered, update); err != nil {
				b.Fatal(err)
			}
		}
		flush(srv)
		b.StopTimer()
		for deadline := time.Now().Add(10 * time.Second); srv.Stats().MessagesSent < sent+tickFlushClients; {
			if time.Now().After(deadline) {
				b.Fatal("the tick's updates were not packed in 10 s")
			}
			time.Sleep(50 * time.Microsecond)
		}
		time.Sleep(5 * time.Millisecond) // the clients' Acks
		b.StartTimer()
	}
}

// BenchmarkTickFlushCaller is the caller's (the game thread's) time for a
// tick of 64 sends and the flush, with Flush and with QueueFlush. Run it
// with -test.cpu 1 (one P, as the MMO load benchmark's server): with more,
// the clients' goroutines and the tick writer run beside the timed part.
func BenchmarkTickFlushCaller(b *testing.B) {
	b.Run("Flush", func(b *testing.B) { benchTickFlush(b, (*netstack.Server).Flush) })
	b.Run("QueueFlush", func(b *testing.B) { benchTickFlush(b, (*netstack.Server).QueueFlush) })
}
