package deathmatch_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestPlayersMetricSumsItsRooms: three deathmatch rooms served by one
// plugin process (ServeRooms) with 2, 3 and 4 players: /metrics says 9
// players in the deathmatch game, not the count of the room that set the
// gauge last.
func TestPlayersMetricSumsItsRooms(t *testing.T) {
	srv := startServer(t, "", func(c *config.Config) {
		c.Modules.Load = nil
		c.Rooms.Enabled, c.Rooms.Modes = true, []string{deathmatch.Name}
		c.Rooms.RequestsPerSecond, c.Rooms.RequestBurst = 100, 100
		c.Ops.Listen = "127.0.0.1:0"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(name string) *netstack.Client {
		c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin()})
		if err != nil {
			t.Fatalf("dial %s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// request sends a room request and returns its RoomResult.
	request := func(c *netstack.Client, typ wire.MessageType, payload []byte) gamemsg.RoomResult {
		if err := c.Send(typ, wire.ReliableOrdered, payload); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("no RoomResult: %v", err)
			}
			if m.Header.Type == gamemsg.TypeRoomResult {
				r, err := gamemsg.ParseRoomResult(m.Payload)
				if err != nil || r.Code != gamemsg.RoomOK {
					t.Fatalf("room request %v: %+v %v", typ, r, err)
				}
				return r
			}
		}
	}
	for i, players := range []int{2, 3, 4} {
		owner := dial(fmt.Sprintf("owner%d", i))
		room := request(owner, gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil,
			&gamemsg.RoomCreate{Name: fmt.Sprintf("r%d", i), Mode: deathmatch.Name, Capacity: 8})).Room
		for j := 1; j < players; j++ {
			request(dial(fmt.Sprintf("p%d-%d", i, j)), gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room}))
		}
	}
	url := "http://" + srv.OpsAddr().String() + "/metrics"
	var players, inRooms float64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		players, inRooms = scrapeGauge(t, url, "sparkhost_deathmatch_players", ""), scrapeGauge(t, url, "sparkhost_room_players", "deathmatch")
		if players == 9 && inRooms == 9 {
			return
		}
	}
	t.Fatalf("sparkhost_deathmatch_players = %v, sparkhost_room_players{mode=deathmatch} = %v; want 9 and 9", players, inRooms)
}

// scrapeGauge reads one series of /metrics (mode: the value of its mode
// label, "" for a family without labels).
func scrapeGauge(t *testing.T, url, name, mode string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fams[name].GetMetric() {
		if mode == "" || len(m.GetLabel()) > 0 && strings.EqualFold(m.GetLabel()[0].GetValue(), mode) {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
