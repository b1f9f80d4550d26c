package netstack

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkColdTickFlush: the game thread's flush of one MMO tick — 333 of
// 2,000 sessions, each with one 500-byte reliable world update queued —
// with the sessions' memory cold, as it is in a server whose other work
// (and other processes) evicted it since the last tick that touched them.
// "ahead-N" touches the memory of the session N places on while flushing
// one (warm); "ahead-0" does not. ns/session is the flush's time per
// session; the sends, the eviction and the acks are outside the timer.
func BenchmarkColdTickFlush(b *testing.B) {
	const sessions, perTick = 2000, 333
	srv := make([]*peer, sessions)
	cli := make([]*session, sessions)
	for i := range srv {
		s, c := sessionPair(b)
		s.path.addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(10000+i))
		srv[i], cli[i] = &peer{session: s, state: slotConnected}, c
	}
	reg := gamemsg.NewRegistry()
	update := make([]byte, 500)
	evict := make([]byte, 64<<20)
	deliver := func(*wire.Header, []byte) {}
	for _, ahead := range []int{0, warmAhead} {
		b.Run(fmt.Sprintf("ahead-%d", ahead), func(b *testing.B) {
			sb := datagramBatch{deferSeal: true}
			var cb datagramBatch
			now, next := time.Now(), 0
			var flushed int
			tick := make([]*peer, 0, perTick)
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				now = now.Add(16 * time.Millisecond)
				tick = tick[:0]
				for range perTick {
					p := srv[next]
					next = (next + 1) % sessions
					_ = p.sendLocked(wire.FirstUserDefined, wire.ReliableOrdered, update, now)
					tick = append(tick, p)
				}
				for i := 0; i < len(evict); i += cacheLine {
					evict[i]++
				}
				b.StartTimer()
				flushPeers(tick, ahead, now, &sb, nil)
				b.StopTimer()
				flushed += len(tick)
				sb.sealPending()
				ackBack(reg, tick, cli, srv, &sb, &cb, now, deliver)
			}
			b.StartTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(flushed), "ns/session")
		})
	}
}

// ackBack delivers a flushed batch to the clients (a server session's
// address names its client: port 10000 + index) and their acks back.
func ackBack(reg *wire.Registry, tick []*peer, cli []*session, srv []*peer, sb, cb *datagramBatch, now time.Time, deliver func(*wire.Header, []byte)) {
	for _, sp := range sb.spans {
		cli[int(sp.to.Port())-10000].receiveLocked(reg, sb.buf[sp.start:sp.end], now, deliver, nil)
	}
	sb.reset()
	later := now.Add(5 * time.Millisecond)
	for _, p := range tick {
		i := int(p.path.addr.Port()) - 10000
		cli[i].flushLocked(later, cb)
		for _, sp := range cb.spans {
			srv[i].receiveLocked(reg, cb.buf[sp.start:sp.end], later, deliver, nil)
		}
		cb.reset()
	}
}
