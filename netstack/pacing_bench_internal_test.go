package netstack

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkPackedTick: one tick's flush to one client — 20 unreliable
// entity updates and a reliable message queued, packed, sealed, received,
// and the acks returned — the packed path that pacing sits in.
func BenchmarkPackedTick(b *testing.B) {
	srv, cli := sessionPair(b)
	reg := gamemsg.NewRegistry()
	update := []byte{5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40}
	destroy := []byte{9, 0, 0, 0}
	var sb, cb datagramBatch
	deliver := func(*wire.Header, []byte) {}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(16 * time.Millisecond)
		for range 20 {
			_ = srv.sendLocked(gamemsg.TypeEntityStateUpdate, wire.Unreliable, update, now)
		}
		_ = srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, destroy, now)
		srv.flushLocked(now, &sb)
		deliverBatch(cli, &sb, reg, now, deliver)
		cli.flushLocked(now.Add(5*time.Millisecond), &cb)
		deliverBatch(srv, &cb, reg, now.Add(5*time.Millisecond), deliver)
	}
}

// BenchmarkTickFlushGameThread: what the game thread spends per session in
// the tick's flush of one MMO-sized reliable message (a 500-byte world
// update): packed and sealed in the flush ("sealed-in-flush", the batch
// of a receive pass or the service loop), or packed with its encryption
// left to the tick writer ("sealed-by-writer", the tick's batch); the
// writer's share is timed apart. The acks go back outside the timer.
func BenchmarkTickFlushGameThread(b *testing.B) {
	for _, mode := range []struct {
		name  string
		later bool
	}{{"sealed-in-flush", false}, {"sealed-by-writer", true}} {
		b.Run(mode.name, func(b *testing.B) {
			srv, cli := sessionPair(b)
			reg := gamemsg.NewRegistry()
			update := make([]byte, 500)
			sb := datagramBatch{deferSeal: mode.later}
			var cb datagramBatch
			deliver := func(*wire.Header, []byte) {}
			now := time.Now()
			var writer time.Duration
			for b.Loop() {
				now = now.Add(16 * time.Millisecond)
				_ = srv.sendLocked(wire.FirstUserDefined, wire.ReliableOrdered, update, now)
				srv.flushLocked(now, &sb)
				b.StopTimer()
				w := time.Now()
				sb.sealPending()
				writer += time.Since(w)
				deliverBatch(cli, &sb, reg, now, deliver)
				cli.flushLocked(now.Add(5*time.Millisecond), &cb)
				deliverBatch(srv, &cb, reg, now.Add(5*time.Millisecond), deliver)
				b.StartTimer()
			}
			b.ReportMetric(float64(writer.Nanoseconds())/float64(b.N), "writer-ns/op")
		})
	}
}
