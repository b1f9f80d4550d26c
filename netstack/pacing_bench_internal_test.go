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
		for _, sp := range sb.spans {
			cli.receiveLocked(reg, sb.buf[sp.start:sp.end], now, deliver, nil)
		}
		sb.reset()
		cli.flushLocked(now.Add(5*time.Millisecond), &cb)
		for _, sp := range cb.spans {
			srv.receiveLocked(reg, cb.buf[sp.start:sp.end], now.Add(5*time.Millisecond), deliver, nil)
		}
		cb.reset()
	}
}
