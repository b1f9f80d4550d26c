package mmo_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestMMOIsNotAMatch: the MMO gate runs without match state. A player is
// admitted with mode Custom on "mmo" (no map, no timer), logs in, enters
// the world and moves, and by then the server has sent no ScoreUpdate,
// MatchStart or MatchEnd; the admin's match commands say why they do not
// apply.
func TestMMOIsNotAMatch(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, gs, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "ann", Pin: srv.Pin(), Registry: reg})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	if gs.Mode != gamemsg.ModeCustom || gs.Map != "mmo" || gs.MatchState != gamemsg.MatchInProgress || gs.TimeRemaining != 0 {
		t.Errorf("admission: mode %v map %q state %v time %v; want Custom, mmo, InProgress, no timer", gs.Mode, gs.Map, gs.MatchState, gs.TimeRemaining)
	}
	s := mmoclient.NewSession(c, func(string) {})
	s.Iterations = 4096
	var mu sync.Mutex
	var types []wire.MessageType
	go func() {
		for {
			m, err := c.Receive(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			types = append(types, m.Header.Type)
			mu.Unlock()
			s.Handle(m)
		}
	}()
	_, err = s.Register(ctx, "ann", "pw-ann-1")
	must(t, err)
	_, err = s.Login(ctx, "ann", "pw-ann-1")
	must(t, err)
	must(t, s.Create(ctx, "Ann"))
	_, err = s.Enter(ctx, "Ann")
	must(t, err)
	must(t, s.Move(ctx, 1, 0))
	time.Sleep(300 * time.Millisecond) // a few more ticks of the world
	must(t, s.Stop(ctx))
	mu.Lock()
	got := slices.Clone(types)
	mu.Unlock()
	for _, bad := range []wire.MessageType{gamemsg.TypeScoreUpdate, gamemsg.TypeMatchStart, gamemsg.TypeMatchEnd} {
		if slices.Contains(got, bad) {
			t.Errorf("the MMO server sent %v; received %v", bad, got)
		}
	}
	if out, err := srv.Exec("endmatch"); err == nil {
		t.Errorf("endmatch on the MMO server answered %q; want a refusal", out)
	}
}

// TestMMOAnnouncesItsArea: an area server announces "mmo/AREA" where a
// match would announce its map.
func TestMMOAnnouncesItsArea(t *testing.T) {
	w := twoAreas(t)
	west := w.start(t, 0)
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, gs, err := client.Dial(ctx, netstack.ClientConfig{Server: west.Addr(), Name: "ann", Pin: west.Pin(), Registry: reg})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	if gs.Mode != gamemsg.ModeCustom || gs.Map != "mmo/west" {
		t.Errorf("the west area server announced mode %v map %q; want Custom mmo/west", gs.Mode, gs.Map)
	}
}
