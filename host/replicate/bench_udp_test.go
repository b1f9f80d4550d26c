package replicate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkTick64x64Loopback is BenchmarkTick64x64 with the real transport:
// every message is sealed and written to one of 64 real clients on
// 127.0.0.1, which read and open it on their own goroutines (on the same
// CPUs). ns/op is the game thread's time per tick, sends included;
// peak-ms/tick the longest tick.
func BenchmarkTick64x64Loopback(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	var r *replicate.Replicator
	gss := func(c uint32, dst []byte) []byte {
		_, types := r.Schemas()
		return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{ClientID: c, TickRate: 60, ReplicationRate: 20, Types: types})
	}
	srv, err := netstack.NewServer(netstack.ServerConfig{Bind: "127.0.0.1", Identity: priv, MaxClients: 64,
		Logger: slog.New(slog.DiscardHandler), Registry: gamemsg.NewRegistry(), Welcome: gamemsg.Welcome(gss)})
	if err != nil {
		b.Fatal(err)
	}
	srv.Start()
	defer srv.Close()
	r, err = replicate.New(replicate.Config{TickRate: 60, Rate: 20, InterestRadius: 1000, Send: srv.Send, GameStateSync: gss})
	if err != nil {
		b.Fatal(err)
	}
	blk, _ := r.ReserveBlock()
	typ := module.EntityType{ID: 1, Name: "player", PositionField: "pos", Fields: []gamemsg.FieldSchema{
		{Name: "pos", Kind: gamemsg.KindVec3}, {Name: "hp", Kind: gamemsg.KindInt32},
		{Name: "ammo", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
	}}
	if err := r.SetTypes(blk, "bench", []module.EntityType{typ}); err != nil {
		b.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 1))
	var ids []uint32
	for range 64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Pin: srv.Pin(), Name: "bot"})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go func() {
			for {
				if _, err := c.Receive(context.Background()); err != nil {
					return
				}
			}
		}()
		version, _ := r.Schemas()
		r.AddClient(c.ID(), version)
		id, _ := r.Spawn(blk, module.Spawn{Type: 1, Owner: c.ID(), Position: wire.Vec3{X: rng.Float32() * 100, Z: rng.Float32() * 100}})
		ids = append(ids, id)
	}
	var now time.Duration
	tick := func(n int) {
		now += time.Second / 60
		r.BeginTick(now)
		for i, id := range ids {
			info, _ := r.Entity(id)
			r.SetPosition(blk, id, wire.Vec3{X: info.Position.X + 0.1, Z: info.Position.Z - 0.05}, false)
			if (n+i)%10 == 0 {
				r.SetFields(blk, id, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: int32(n)})
			}
		}
		r.Tick(now)
	}
	for n := range 120 {
		tick(n)
	}
	sent0 := srv.Stats().BytesSent
	var peak time.Duration
	b.ResetTimer()
	for n := range b.N {
		t0 := time.Now()
		tick(n)
		peak = max(peak, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(peak)/float64(time.Millisecond), "peak-ms/tick")
	b.ReportMetric(float64(srv.Stats().BytesSent-sent0)/64/(float64(b.N)/60), "B/client/s")
	if st := r.Stats(); st.SendErrors > 0 {
		b.Logf("send errors: %+v", st)
	}
}
