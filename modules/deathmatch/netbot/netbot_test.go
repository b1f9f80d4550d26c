package netbot

import (
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// world returns a World that knows the body type, a crate type, and the
// given bodies (owner, team) with ids 100, 101, ... at x = their index.
func world(t *testing.T, bodies ...[2]uint32) *client.World {
	t.Helper()
	pt := deathmatch.PlayerType()
	types := []gamemsg.EntityTypeSchema{
		{TypeID: pt.ID, Name: pt.Name, Fields: pt.Fields},
		{TypeID: 7, Name: "crate", Fields: []gamemsg.FieldSchema{{Name: "pos", Kind: gamemsg.KindVec3}}},
	}
	w := client.NewWorld()
	apply := func(typ wire.MessageType, payload []byte) {
		t.Helper()
		if err := w.Apply(netstack.Message{Header: wire.Header{Type: typ}, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	apply(gamemsg.TypeGameStateSync, gamemsg.AppendGameStateSync(nil, &gamemsg.GameStateSync{ClientID: 1, TickRate: 60, ReplicationRate: 20, Types: types}))
	for i, b := range bodies {
		vals := []gamemsg.FieldValue{
			{Index: deathmatch.FieldPos, Kind: gamemsg.KindVec3, Vec: wire.Vec3{X: float32(i)}},
			{Index: deathmatch.FieldYaw, Kind: gamemsg.KindFloat},
			{Index: deathmatch.FieldPitch, Kind: gamemsg.KindFloat},
			{Index: deathmatch.FieldTeam, Kind: gamemsg.KindUint32, Uint: b[1]},
			{Index: deathmatch.FieldCrouching, Kind: gamemsg.KindBool},
		}
		var data []byte
		for j := range vals {
			data = gamemsg.AppendFieldValue(data, &vals[j])
		}
		apply(gamemsg.TypeEntitySpawn, gamemsg.AppendEntitySpawn(nil, &gamemsg.EntitySpawn{EntityID: uint32(100 + i),
			FieldsMask: 0b11111, TypeID: pt.ID, Owner: b[0], Data: data}))
	}
	crate := gamemsg.AppendFieldValue(nil, &gamemsg.FieldValue{Kind: gamemsg.KindVec3})
	apply(gamemsg.TypeEntitySpawn, gamemsg.AppendEntitySpawn(nil, &gamemsg.EntitySpawn{EntityID: 99, FieldsMask: 1, TypeID: 7, Data: crate}))
	return w
}

func enemyIDs(b *Bot) []uint32 {
	var ids []uint32
	for _, e := range b.enemies {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestFindEnemies: the enemies are the other players' bodies — all of them
// in a free-for-all, the other team's with teams — at their replicated
// positions; crates and the bot's own body are not enemies.
func TestFindEnemies(t *testing.T) {
	cases := []struct {
		name   string
		known  uint32      // the bot's team before (a Team message)
		bodies [][2]uint32 // owner, team
		want   []uint32
		team   uint32
	}{
		{"free-for-all", 0, [][2]uint32{{1, 0}, {2, 0}, {3, 0}}, []uint32{101, 102}, 0},
		{"teams", 0, [][2]uint32{{2, 1}, {1, 2}, {3, 2}, {4, 1}}, []uint32{100, 103}, 2},
		{"dead, team known from before", 1, [][2]uint32{{2, 1}, {3, 2}}, []uint32{101}, 1},
		{"alone", 0, [][2]uint32{{1, 0}}, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &Bot{world: world(t, c.bodies...), team: c.known}
			b.findEnemies(1)
			if got := enemyIDs(b); !slices.Equal(got, c.want) || b.team != c.team {
				t.Fatalf("enemies %v team %d, want %v team %d", got, b.team, c.want, c.team)
			}
			for _, e := range b.enemies {
				if want := float32(e.ID - 100); e.Position.X != want {
					t.Fatalf("enemy %d at %+v, want x %v", e.ID, e.Position, want)
				}
			}
		})
	}
}
