package replicate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	mrand "math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The whole path under loss: a Replicator sending through a real
// netstack.Server (sealed frames, reliability, ordering) over the seeded
// in-memory link — 20% loss, 50 ± 20 ms each way, so unreliable updates
// are lost and reordered — to real netstack.Clients keeping a client.World.
// Entities change for 8 s of virtual time; 5 s after the changes stop every
// client must hold exactly the server's values of the fields it may see.

func TestConvergesOverLossyLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memlink.Link{Loss: 0.2, Latency: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}
		n := memlink.NewNetwork(memlink.Config{Seed: 11, Default: link})
		srvConn, err := n.Attach(memlink.Addr(1, 27015))
		if err != nil {
			t.Fatal(err)
		}
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		var r *replicate.Replicator
		srv, err := netstack.NewServer(netstack.ServerConfig{Conn: srvConn, Identity: priv, Logger: slog.New(slog.DiscardHandler),
			Registry: gamemsg.NewRegistry(),
			Welcome: gamemsg.Welcome(func(c uint32, dst []byte) []byte {
				_, types := r.Schemas()
				return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{ClientID: c, TickRate: 60, ReplicationRate: 20, Types: types})
			})})
		if err != nil {
			t.Fatal(err)
		}
		r, err = replicate.New(replicate.Config{TickRate: 60, Rate: 20, InterestRadius: 1000, Send: srv.Send,
			GameStateSync: func(c uint32, dst []byte) []byte {
				_, types := r.Schemas()
				return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{ClientID: c, TickRate: 60, ReplicationRate: 20, Types: types})
			}})
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := r.ReserveBlock()
		typ := module.EntityType{ID: 1, Name: "ship", PositionField: "pos", Fields: []gamemsg.FieldSchema{
			{Name: "pos", Kind: gamemsg.KindVec3},
			{Name: "hull", Kind: gamemsg.KindInt32},
			{Name: "cargo", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
		}}
		if err := r.SetTypes(blk, "test", []module.EntityType{typ}); err != nil {
			t.Fatal(err)
		}
		srv.Start()
		defer srv.Close()

		const players = 3
		var clis []*netstack.Client
		worlds := map[uint32]*client.World{}
		for i := range players {
			conn, err := n.Attach(memlink.Addr(byte(2+i), 50000))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cli, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srvConn.AddrPort(), Pin: srv.Pin(), Conn: conn, Name: "p"})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			clis = append(clis, cli)
			w := client.NewWorld()
			worlds[cli.ID()] = w
			go func() {
				for {
					m, err := cli.Receive(context.Background())
					if err != nil {
						return
					}
					w.Apply(m)
				}
			}()
			version, _ := r.Schemas()
			r.AddClient(cli.ID(), version)
		}
		rng := mrand.New(mrand.NewPCG(5, 6))
		var ids []uint32
		for i := range 12 {
			owner := uint32(0)
			if i < players {
				owner = clis[i].ID()
			}
			id, err := r.Spawn(blk, module.Spawn{Type: 1, Owner: owner})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		period := time.Second / 60
		var now time.Duration
		for tick := range 60 * 13 {
			time.Sleep(period)
			now += period
			r.BeginTick(now)
			if tick < 60*8 {
				for _, id := range ids {
					if rng.IntN(2) == 0 {
						r.SetPosition(blk, id, wire.Vec3{X: rng.Float32() * 100, Z: rng.Float32() * 100}, false)
					}
					if rng.IntN(10) == 0 {
						r.SetFields(blk, id, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: rng.Int32N(100)},
							gamemsg.FieldValue{Index: 2, Kind: gamemsg.KindUint32, Uint: rng.Uint32N(1000)})
					}
				}
			}
			r.Tick(now)
		}
		synctest.Wait()

		for _, cli := range clis {
			w := worlds[cli.ID()]
			got := w.Entities()
			if len(got) != len(ids) {
				t.Fatalf("client %d holds %d entities, want %d", cli.ID(), len(got), len(ids))
			}
			for _, e := range got {
				want, _ := r.Fields(e.ID)
				info, _ := r.Entity(e.ID)
				for i, v := range want {
					visible := e.Visible&(1<<i) != 0
					if i == 2 && visible != (info.Owner == cli.ID()) {
						t.Fatalf("client %d: cargo of %d (owner %d) visible=%v", cli.ID(), e.ID, info.Owner, visible)
					}
					if visible && e.Fields[i] != v {
						t.Errorf("client %d entity %d field %d: %+v, server %+v", cli.ID(), e.ID, i, e.Fields[i], v)
					}
				}
			}
			st := w.Stats()
			t.Logf("client %d: %+v, link loss %.0f%%", cli.ID(), st, cli.Stats().PacketLoss*100)
		}
		ns := n.Stats()
		if ns.Lost == 0 {
			t.Fatal("the link lost nothing")
		}
		t.Logf("network %+v; replicator %+v", ns, r.Stats())
	})
}
