package game

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

func lagcompConfig() lagcomp.Config { return lagcomp.Config{} }

// TestLagCompensatedShot: the target runs across the shooter's view; the
// shooter with a 200 ms round trip fires where it saw the target (100 ms
// ago) and hits; firing where the target is now misses; a round trip beyond
// the history window is refused.
func TestLagCompensatedShot(t *testing.T) {
	rtt := 200 * time.Millisecond
	setup := func(t *testing.T) (*Game, *LagComp, seqs, []wire.Vec3) {
		g, lc := newGame(t, Config{})
		lc.RTT = func(uint32) time.Duration { return rtt }
		join(t, g, 1, 2)
		g.StartRound(gamemsg.MatchStart{Round: 1})
		g.Tick()
		place(t, g, 1, wire.Vec3{X: -10, Z: -10})
		var path []wire.Vec3
		// 2 runs along +x at 6 units/s, 10 units in front of 1.
		for i := range 60 {
			pos := wire.Vec3{X: -15 + float32(i)*0.1, Z: 0}
			place(t, g, 2, pos)
			path = append(path, pos)
			g.Tick()
		}
		g.DrainEvents(nil)
		return g, lc, seqs{}, path
	}
	shootAt := func(g *Game, s seqs, target wire.Vec3) []Event {
		p, _ := g.Player(1)
		target.Y += 0.9
		yaw, pitch, _ := AimAngles(Eye(p.State, g.World().Params()), target)
		s[1]++
		_ = g.Input(1, gamemsg.ClientInput{InputSeq: s[1], LookYaw: yaw, LookPitch: pitch, Buttons: gamemsg.ButtonFire, DT: 1.0 / 60})
		return g.DrainEvents(nil)
	}
	t.Run("aiming where it saw the target hits", func(t *testing.T) {
		g, _, s, path := setup(t)
		seen := path[len(path)-1-int(rtt/2/tick)]
		if evs := shootAt(g, s, seen); len(only(evs, EventDamage)) != 1 {
			t.Fatalf("events %+v", evs)
		}
	})
	t.Run("aiming where the target is now misses", func(t *testing.T) {
		g, _, s, path := setup(t)
		if evs := shootAt(g, s, path[len(path)-1]); len(only(evs, EventDamage)) != 0 {
			t.Fatalf("events %+v", evs)
		}
	})
	t.Run("beyond the window is refused", func(t *testing.T) {
		g, lc, s, path := setup(t)
		rtt = 3 * time.Second
		defer func() { rtt = 200 * time.Millisecond }()
		if evs := shootAt(g, s, path[0]); len(only(evs, EventDamage)) != 0 {
			t.Fatalf("events %+v", evs)
		}
		if lc.Refused() != 1 {
			t.Fatalf("refused %d", lc.Refused())
		}
	})
	t.Run("a map change forgets the past", func(t *testing.T) {
		g, lc, _, _ := setup(t)
		if err := g.ChangeMap(g.Map()); err != nil {
			t.Fatal(err)
		}
		if lc.History().Len() != 0 {
			t.Fatalf("history holds %d snapshots after a map change", lc.History().Len())
		}
	})
}
