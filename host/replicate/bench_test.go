package replicate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// sealedOverhead is what the transport adds to a payload on the wire: the
// sealed frame (1 + 10 header bytes, 16 tag bytes) around the packet header
// (23 bytes, 27 on the ordered channel). IP and UDP headers are not counted.
func sealedOverhead(ch wire.Channel) int {
	if ch == wire.ReliableOrdered {
		return 27 + 27
	}
	return 27 + 23
}

// BenchmarkTick64x64 is one server tick at 60 Hz with replication at 20 Hz
// (a frame every third tick), 64 clients and 64 player entities within
// interest of everyone, every entity moving every tick and changing one
// other field every tenth tick; the default recovery (3 repeats, 1 s
// refresh). It reports ns per tick (averaged over frame and non-frame
// ticks) and the bytes each client receives per second on the wire.
func BenchmarkTick64x64(b *testing.B) {
	var wireBytes, packets int
	r, err := New(Config{
		TickRate: 60, Rate: 20, InterestRadius: 1000,
		Send: func(_ uint32, _ wire.MessageType, ch wire.Channel, p []byte) error {
			wireBytes += len(p) + sealedOverhead(ch)
			packets++
			return nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	blk, _ := r.ReserveBlock()
	if err := r.SetTypes(blk, "bench", []module.EntityType{playerSchema()}); err != nil {
		b.Fatal(err)
	}
	const clients = 64
	ids := make([]uint32, clients)
	rng := rand.New(rand.NewPCG(1, 1))
	for c := range clients {
		r.AddClient(uint32(c+1), 1)
		ids[c], err = r.Spawn(blk, module.Spawn{Type: playerType, Owner: uint32(c + 1), Position: wire.Vec3{X: rng.Float32() * 100, Z: rng.Float32() * 100}})
		if err != nil {
			b.Fatal(err)
		}
	}
	var now time.Duration
	tick := func(n int) {
		now += time.Second / 60
		r.BeginTick(now)
		for i, id := range ids {
			e := r.byID[id]
			r.SetPosition(blk, id, wire.Vec3{X: e.pos.X + 0.1, Y: 0, Z: e.pos.Z - 0.05}, false)
			if (n+i)%10 == 0 {
				r.SetFields(blk, id, gamemsg.FieldValue{Index: fHealth, Kind: gamemsg.KindInt32, Int: int32(n)})
			}
		}
		r.Tick(now)
	}
	for n := range 120 { // warm up: every client knows every entity
		tick(n)
	}
	wireBytes, packets = 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		tick(n)
	}
	b.StopTimer()
	seconds := float64(b.N) / 60
	b.ReportMetric(float64(wireBytes)/clients/seconds, "B/client/s")
	b.ReportMetric(float64(packets)/clients/seconds, "pkts/client/s")
}
