package replicate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Convergence under loss: EntityStateUpdate is unreliable, so 30% of them
// are lost here (seeded). While entities keep changing, clients lag; once
// changes stop, every client must hold exactly the server's values of every
// field it may see within Repeats frames plus a few Refresh periods. Without
// the recovery (one send per change, no refresh) they do not.

func runLossy(t *testing.T, cfg Config, loss float64) (stale int, w *world, views map[uint32]*view) {
	cfg.InterestRadius = 40
	w = newWorld(t, cfg)
	w.net.loss, w.net.rng = loss, rand.New(rand.NewPCG(7, 9))
	rng := rand.New(rand.NewPCG(3, 4))
	views = map[uint32]*view{}
	var ids []uint32
	for c := uint32(1); c <= 8; c++ {
		views[c] = w.join(c)
		w.r.SetClientView(c, module.ClientView{Party: c % 2, Spectator: c == 8})
		ids = append(ids, w.spawn(module.Spawn{Owner: c, Party: c % 2, Position: wire.Vec3{X: float32(c * 10)}}))
	}
	for range 24 {
		ids = append(ids, w.spawn(module.Spawn{Position: wire.Vec3{X: rng.Float32() * 100, Z: rng.Float32() * 100}}))
	}
	period := time.Second / 20
	now := time.Duration(0)
	step := func(changing bool) {
		if changing {
			for _, id := range ids {
				if rng.IntN(3) == 0 {
					w.move(id, rng.Float32()*100, 0, rng.Float32()*100)
				}
				if rng.IntN(4) == 0 {
					w.set(id, i32(fHealth, rng.Int32N(100)), u32(fAmmo, rng.Uint32N(50)),
						bl(fPlan, rng.IntN(2) == 0), flt(fAim, rng.Float32()))
				}
			}
		}
		now += period
		w.r.Tick(now)
		ms := w.net.take()
		for c, v := range views {
			v.deliver(ms, c)
		}
	}
	for range 200 {
		step(true)
	}
	// Repeats frames, then 5 Refresh periods (1 s at 20 Hz): a refresh is
	// unreliable too, so each period leaves a stale field stale with the
	// probability of loss (0.3⁵ ≈ 0.2%).
	for range cfg.Repeats + 5*20 {
		step(false)
	}
	// Compare with the server: the same relevant set, the same visible values.
	for c, v := range views {
		vw := w.r.viewers[c]
		if len(v.entities) != len(vw.known) {
			t.Fatalf("client %d holds %d entities, the server sent it %d", c, len(v.entities), len(vw.known))
		}
		for id, e := range v.entities {
			vals, ok := w.r.Fields(id)
			if !ok {
				t.Fatalf("client %d holds %d, which does not exist", c, id)
			}
			if e.visible != vw.visible(w.r.byID[id]) {
				t.Fatalf("client %d: entity %d mask %#b, want %#b", c, id, e.visible, vw.visible(w.r.byID[id]))
			}
			for _, fv := range vals {
				if e.visible&(1<<fv.Index) == 0 {
					if _, has := e.vals[fv.Index]; has {
						t.Fatalf("client %d holds invisible field %d of %d", c, fv.Index, id)
					}
					continue
				}
				if e.vals[fv.Index] != fv {
					stale++
				}
			}
		}
	}
	return stale, w, views
}

func TestConvergesUnderLoss(t *testing.T) {
	stale, w, _ := runLossy(t, Config{}, 0.3)
	if stale != 0 {
		t.Fatalf("%d stale fields after changes stopped", stale)
	}
	if w.net.dropped == 0 || w.r.Stats().Updates == 0 {
		t.Fatalf("nothing was lost (%d) or sent (%+v)", w.net.dropped, w.r.Stats())
	}
	t.Logf("lost %d updates of %d; %+v", w.net.dropped, w.net.dropped+int(w.r.Stats().Updates), w.r.Stats())
}

func TestRepeatsAloneConvergeMostly(t *testing.T) {
	// Repeats without refresh: a field is stale only if all its sends were
	// lost (0.3³ ≈ 3%); one send and no refresh leaves many stale.
	staleRepeat, _, _ := runLossy(t, Config{Repeats: 3, Refresh: -1}, 0.3)
	staleOnce, _, _ := runLossy(t, Config{Repeats: 1, Refresh: -1}, 0.3)
	if staleOnce == 0 || staleRepeat >= staleOnce {
		t.Fatalf("stale fields: %d with 3 repeats, %d with one send", staleRepeat, staleOnce)
	}
	t.Logf("stale fields without refresh: %d with 3 repeats, %d with one send", staleRepeat, staleOnce)
}
