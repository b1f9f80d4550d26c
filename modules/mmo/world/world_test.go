package world_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/world"
)

func newWorld(t testing.TB, cfg world.Config) *world.World {
	t.Helper()
	w, err := world.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func enter(t testing.TB, w *world.World, name string, x, y float64) world.ID {
	t.Helper()
	id, err := w.Enter(name, x, y)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestConfig(t *testing.T) {
	c := newWorld(t, world.Config{}).Config()
	want := world.Config{Width: 1000, Height: 1000, Speed: 10, InterestRadius: 100, GreetRadius: 20, TickRate: 60, MaxCharacters: 10000}
	if c != want {
		t.Fatalf("defaults %+v", c)
	}
	for name, cfg := range map[string]world.Config{
		"negative width":   {Width: -1},
		"NaN height":       {Height: math.NaN()},
		"infinite speed":   {Speed: math.Inf(1)},
		"negative radius":  {InterestRadius: -5},
		"tick rate 0 < x":  {TickRate: -1},
		"tick rate > 1000": {TickRate: 1001},
		"negative max":     {MaxCharacters: -1},
	} {
		if _, err := world.New(cfg); !errors.Is(err, world.ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEnterLeave(t *testing.T) {
	w := newWorld(t, world.Config{MaxCharacters: 2})
	a := enter(t, w, "Alice", 10, 20)
	if _, err := w.Enter("ALICE", 0, 0); !errors.Is(err, world.ErrAlreadyInWorld) {
		t.Fatalf("duplicate name: %v", err)
	}
	if id, ok := w.Lookup("aLiCe"); !ok || id != a {
		t.Fatalf("Lookup = %v %v", id, ok)
	}
	if _, err := w.Enter("Nan", math.NaN(), 0); !errors.Is(err, world.ErrBadPosition) {
		t.Fatalf("NaN position: %v", err)
	}
	if _, err := w.Enter("", 0, 0); !errors.Is(err, world.ErrBadName) {
		t.Fatalf("empty name: %v", err)
	}
	b := enter(t, w, "Bob", -50, 5000) // clamped into the area
	if s, _ := w.Get(b); s.X != 0 || s.Y != 1000 || s.Name != "Bob" {
		t.Fatalf("clamped entry %+v", s)
	}
	if _, err := w.Enter("Carol", 0, 0); !errors.Is(err, world.ErrFull) {
		t.Fatalf("full world: %v", err)
	}
	last, err := w.Leave(a)
	if err != nil || last.X != 10 || last.Y != 20 || last.Name != "Alice" {
		t.Fatalf("Leave = %+v, %v", last, err)
	}
	if _, err := w.Leave(a); !errors.Is(err, world.ErrNotInWorld) {
		t.Fatalf("second Leave: %v", err)
	}
	if _, ok := w.Lookup("alice"); ok {
		t.Fatal("Lookup finds a character that left")
	}
	c := enter(t, w, "Alice", 1, 1)
	if c == a || c == b {
		t.Fatalf("ID %d reused", c)
	}
	if w.Len() != 2 {
		t.Fatalf("Len = %d", w.Len())
	}
	n := 0
	w.Each(func(world.Snapshot) { n++ })
	if n != 2 {
		t.Fatalf("Each visited %d", n)
	}
}

func TestMovement(t *testing.T) {
	w := newWorld(t, world.Config{Speed: 6, TickRate: 60})
	id := enter(t, w, "Mover", 500, 500)
	if err := w.SetIntent(id, 0.25, 0); err != nil { // normalised to full speed
		t.Fatal(err)
	}
	for range 60 {
		w.Step()
	}
	if s, _ := w.Get(id); !near(s.X, 506) || s.Y != 500 || !s.Moving() {
		t.Fatalf("after 1 s east: %+v", s)
	}
	if err := w.SetIntent(id, -1, -1); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		w.Step()
	}
	if s, _ := w.Get(id); !near(s.X, 506-6/math.Sqrt2) || !near(s.Y, 500-6/math.Sqrt2) {
		t.Fatalf("diagonal speed is not Speed: %+v", s)
	}
	if err := w.Stop(id); err != nil {
		t.Fatal(err)
	}
	before, _ := w.Get(id)
	w.Step()
	if s, _ := w.Get(id); s != before || s.Moving() {
		t.Fatalf("moved after Stop: %+v", s)
	}
	if w.Tick() != 121 {
		t.Fatalf("Tick = %d", w.Tick())
	}
	for _, bad := range [][2]float64{{math.NaN(), 0}, {0, math.Inf(-1)}, {1.0001, 0}, {0, -1.5}, {math.MaxFloat64, 0}} {
		if err := w.SetIntent(id, bad[0], bad[1]); !errors.Is(err, world.ErrBadIntent) {
			t.Errorf("SetIntent(%v): %v", bad, err)
		}
	}
	if err := w.SetIntent(999, 1, 0); !errors.Is(err, world.ErrNotInWorld) {
		t.Errorf("unknown id: %v", err)
	}
	if err := w.SetIntent(id, 5e-324, 0); err != nil { // tiny but not zero: full speed
		t.Fatal(err)
	}
	if s, _ := w.Get(id); s.DX != 1 {
		t.Fatalf("tiny intent not normalised: %+v", s)
	}
}

func TestMovementClampsToBounds(t *testing.T) {
	w := newWorld(t, world.Config{Width: 100, Height: 50, Speed: 60, TickRate: 10})
	id := enter(t, w, "Runner", 95, 48)
	w.SetIntent(id, 1, 1)
	for range 10 {
		w.Step()
	}
	if s, _ := w.Get(id); s.X != 100 || s.Y != 50 {
		t.Fatalf("not clamped: %+v", s)
	}
	// Against the wall nothing changes, so no update is sent.
	w.Replicate(func(*world.Delta) {})
	w.Step()
	w.Replicate(func(d *world.Delta) { t.Fatalf("update while pressed against the corner: %+v", d) })
}

// view is a client's picture of the world, built only from Deltas.
type view map[world.ID]world.Snapshot

func apply(t *testing.T, views map[world.ID]view, d *world.Delta) {
	t.Helper()
	v := views[d.Observer]
	if v == nil {
		v = view{}
		views[d.Observer] = v
	}
	for _, s := range d.Appear {
		if _, ok := v[s.ID]; ok {
			t.Fatalf("observer %d: appear of %d it already sees", d.Observer, s.ID)
		}
		v[s.ID] = s
	}
	for _, s := range d.Update {
		if _, ok := v[s.ID]; !ok {
			t.Fatalf("observer %d: update of %d it does not see", d.Observer, s.ID)
		}
		v[s.ID] = s
	}
	for _, id := range d.Disappear {
		if _, ok := v[id]; !ok {
			t.Fatalf("observer %d: disappear of %d it does not see", d.Observer, id)
		}
		delete(v, id)
	}
	for _, l := range [][]world.ID{ids(d.Appear), ids(d.Update), d.Disappear} {
		if !slices.IsSorted(l) {
			t.Fatalf("unsorted list %v", l)
		}
	}
}

func ids(s []world.Snapshot) []world.ID {
	out := make([]world.ID, len(s))
	for i := range s {
		out[i] = s[i].ID
	}
	return out
}

// check compares every observer's view with a brute-force interest query.
func check(t *testing.T, w *world.World, views map[world.ID]view) {
	t.Helper()
	var all []world.Snapshot
	w.Each(func(s world.Snapshot) { all = append(all, s) })
	r := w.Config().InterestRadius
	for _, o := range all {
		want := view{}
		for _, c := range all {
			if math.Hypot(c.X-o.X, c.Y-o.Y) <= r {
				want[c.ID] = c
			}
		}
		got := views[o.ID]
		if len(got) != len(want) {
			t.Fatalf("tick %d observer %d sees %d characters, want %d", w.Tick(), o.ID, len(got), len(want))
		}
		for id, s := range want {
			g, ok := got[id]
			if !ok || g.X != s.X || g.Y != s.Y || g.Name != s.Name {
				t.Fatalf("tick %d observer %d: %d is %+v, want %+v", w.Tick(), o.ID, id, g, s)
			}
		}
	}
}

// randomChange makes one random change to w: a character named name enters
// (always while fewer than least are in), one leaves (its view goes), or
// one changes its intent. It returns the characters in.
func randomChange(t *testing.T, w *world.World, cfg world.Config, rng *rand.Rand, in []world.ID, views map[world.ID]view, least int, name string) []world.ID {
	t.Helper()
	switch op := rng.IntN(10); {
	case op == 0 || len(in) < least:
		return append(in, enter(t, w, name, rng.Float64()*cfg.Width, rng.Float64()*cfg.Height))
	case op == 1 && len(in) > least:
		k := rng.IntN(len(in))
		if _, err := w.Leave(in[k]); err != nil {
			t.Fatal(err)
		}
		delete(views, in[k])
		return slices.Delete(in, k, k+1)
	default:
		if err := w.SetIntent(in[rng.IntN(len(in))], rng.Float64()*2-1, rng.Float64()*2-1); err != nil {
			t.Fatal(err)
		}
		return in
	}
}

func TestReplicationMatchesBruteForce(t *testing.T) {
	for _, cfg := range []world.Config{
		{Width: 400, Height: 300, Speed: 40, InterestRadius: 60, TickRate: 20},
		{Width: 1000, Height: 1000, Speed: 40, InterestRadius: 1, TickRate: 20},  // cells wider than the radius
		{Width: 50, Height: 50, Speed: 40, InterestRadius: 500, TickRate: 20},    // everyone sees everyone
		{Width: 1000, Height: 10, Speed: 100, InterestRadius: 7.5, TickRate: 20}, // thin strip
	} {
		w := newWorld(t, cfg)
		rng := rand.New(rand.NewPCG(1, 2))
		views := map[world.ID]view{}
		var in []world.ID
		names := 0
		for step := range 400 {
			names++
			in = randomChange(t, w, cfg, rng, in, views, 5, "c"+string(rune('a'+names%26))+string(rune('a'+names/26%26))+string(rune('a'+names/676)))
			w.Step()
			if step%3 == 0 {
				w.Replicate(func(d *world.Delta) { apply(t, views, d) })
				// A character that entered alone must at least see itself.
				check(t, w, views)
			}
		}
	}
}

func TestAppearUpdateDisappear(t *testing.T) {
	w := newWorld(t, world.Config{Speed: 60, TickRate: 1, InterestRadius: 100})
	a := enter(t, w, "Anna", 100, 100)
	b := enter(t, w, "Bert", 250, 100)
	got := map[world.ID]world.Delta{}
	replicate := func() {
		clear(got)
		w.Replicate(func(d *world.Delta) {
			got[d.Observer] = world.Delta{Observer: d.Observer, Appear: slices.Clone(d.Appear), Update: slices.Clone(d.Update), Disappear: slices.Clone(d.Disappear)}
		})
	}
	replicate()
	if d := got[a]; len(d.Appear) != 1 || d.Appear[0].ID != a || d.Appear[0].Name != "Anna" {
		t.Fatalf("Anna first sees %+v, want only herself", d)
	}
	w.SetIntent(b, -1, 0)
	w.Step() // Bert at 190: within 100 of Anna
	replicate()
	if d := got[a]; len(d.Appear) != 1 || d.Appear[0].ID != b || d.Appear[0].X != 190 || len(d.Update) != 0 {
		t.Fatalf("Anna: %+v, want Bert to appear", d)
	}
	if d := got[b]; len(d.Appear) != 1 || d.Appear[0].ID != a || len(d.Update) != 1 || d.Update[0].ID != b {
		t.Fatalf("Bert: %+v, want Anna to appear and his own update", d)
	}
	w.Step() // Bert at 130
	replicate()
	if d := got[a]; len(d.Update) != 1 || d.Update[0].X != 130 || len(d.Appear)+len(d.Disappear) != 0 {
		t.Fatalf("Anna: %+v, want Bert's update", d)
	}
	w.Stop(b)
	w.Step()
	replicate()
	if len(got) != 0 {
		t.Fatalf("deltas with nothing moving: %+v", got)
	}
	w.Leave(b)
	replicate()
	if d := got[a]; len(d.Disappear) != 1 || d.Disappear[0] != b {
		t.Fatalf("Anna: %+v, want Bert to disappear", d)
	}
}

func TestGreet(t *testing.T) {
	w := newWorld(t, world.Config{GreetRadius: 20, InterestRadius: 100})
	a := enter(t, w, "Anna", 100, 100)
	b := enter(t, w, "Bert", 110, 100)
	c := enter(t, w, "Cleo", 150, 100) // hears it
	enter(t, w, "Dora", 500, 500)      // too far to hear it
	g, audience, err := w.Greet(a, "bert", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.From != a || g.To != b || g.FromName != "Anna" || g.ToName != "Bert" {
		t.Fatalf("greeting %+v", g)
	}
	slices.Sort(audience)
	if !slices.Equal(audience, []world.ID{b, c}) {
		t.Fatalf("audience %v, want [%d %d]", audience, b, c)
	}
	for _, tc := range []struct {
		from   world.ID
		target string
		want   error
	}{
		{a, "Cleo", world.ErrTooFar},
		{a, "anna", world.ErrSelf},
		{a, "Zed", world.ErrUnknownTarget},
		{999, "Bert", world.ErrNotInWorld},
	} {
		if _, _, err := w.Greet(tc.from, tc.target, nil); !errors.Is(err, tc.want) {
			t.Errorf("Greet(%d, %q) = %v, want %v", tc.from, tc.target, err, tc.want)
		}
	}
	// Exactly at the radius is allowed.
	e := enter(t, w, "Edda", 100, 120)
	if _, _, err := w.Greet(e, "Anna", nil); err != nil {
		t.Fatalf("greeting at exactly the radius: %v", err)
	}
}

func TestNearby(t *testing.T) {
	w := newWorld(t, world.Config{InterestRadius: 100})
	a := enter(t, w, "Anna", 100, 100)
	enter(t, w, "Far", 100, 201)
	enter(t, w, "Two", 100, 150)
	enter(t, w, "One", 120, 100)
	got, err := w.Nearby(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"One", "Two"}) {
		t.Fatalf("Nearby = %v", names)
	}
	if _, err := w.Nearby(999, nil); !errors.Is(err, world.ErrNotInWorld) {
		t.Fatal(err)
	}
}

// populate puts n characters, all moving, into w.
func populate(tb testing.TB, w *world.World, n int, seed uint64) []world.ID {
	rng := rand.New(rand.NewPCG(seed, seed))
	cfg := w.Config()
	out := make([]world.ID, n)
	for i := range out {
		name := string([]byte{'a' + byte(i/676), 'a' + byte(i/26%26), 'a' + byte(i%26)})
		out[i] = enter(tb, w, name, rng.Float64()*cfg.Width, rng.Float64()*cfg.Height)
		if err := w.SetIntent(out[i], rng.Float64()*2-1, rng.Float64()*2-1); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	// Everyone sees everyone, so the sets stop growing after the first step.
	w := newWorld(t, world.Config{Width: 150, Height: 150, InterestRadius: 300, Speed: 10})
	populate(t, w, 200, 7)
	sink := 0
	emit := func(d *world.Delta) { sink += len(d.Update) }
	for range 10 {
		w.Step()
		w.Replicate(emit)
	}
	if n := testing.AllocsPerRun(50, func() { w.Step(); w.Replicate(emit) }); n != 0 {
		t.Fatalf("Step+Replicate allocates %v times", n)
	}
}

// wander gives a few characters a new random direction, so that over many
// ticks the characters walk at random instead of piling up against the walls.
func wander(w *world.World, ids []world.ID, rng *rand.Rand) {
	for range 10 {
		w.SetIntent(ids[rng.IntN(len(ids))], rng.Float64()*2-1, rng.Float64()*2-1)
	}
}

// BenchmarkStep200 is one tick with replication for 200 characters walking
// at random over the default area (1000×1000, interest radius 100, speed 10).
func BenchmarkStep200(b *testing.B) {
	w := newWorld(b, world.Config{})
	ids := populate(b, w, 200, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	emit := func(*world.Delta) {}
	w.Step()
	w.Replicate(emit)
	b.ReportAllocs()
	for b.Loop() {
		wander(w, ids, rng)
		w.Step()
		w.Replicate(emit)
	}
}

// BenchmarkStep200Only is Step alone, the per-tick cost between replications.
func BenchmarkStep200Only(b *testing.B) {
	w := newWorld(b, world.Config{})
	ids := populate(b, w, 200, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	b.ReportAllocs()
	for b.Loop() {
		wander(w, ids, rng)
		w.Step()
	}
}

// BenchmarkStep200Crowded is the worst case: 200 characters that all see
// each other (40,000 pairs per replication).
func BenchmarkStep200Crowded(b *testing.B) {
	w := newWorld(b, world.Config{Width: 150, Height: 150})
	populate(b, w, 200, 1)
	emit := func(*world.Delta) {}
	w.Step()
	w.Replicate(emit)
	b.ReportAllocs()
	for b.Loop() {
		w.Step()
		w.Replicate(emit)
	}
}

func TestPlace(t *testing.T) {
	w, err := world.New(world.Config{Width: 100, Height: 100, TickRate: 10})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Enter("Hero", 10, 10)
	if err := w.Place(id, 50, 200); err != nil {
		t.Fatal(err)
	}
	if sn, _ := w.Get(id); sn.X != 50 || sn.Y != 100 {
		t.Fatalf("placed at %v,%v", sn.X, sn.Y)
	}
	if w.Place(id, math.NaN(), 0) != world.ErrBadPosition || w.Place(id+1, 0, 0) != world.ErrNotInWorld {
		t.Fatal("Place accepted a bad position or character")
	}
}

// TestRevealKeepsViewsConsistent: characters revealed to an observer
// between replication steps (for a greeting) are never told twice, and one
// outside the observer's circle is told gone at the next step, so a view
// built from Deltas and the revealed snapshots stays exact.
func TestRevealKeepsViewsConsistent(t *testing.T) {
	w := newWorld(t, world.Config{InterestRadius: 50, GreetRadius: 20})
	a := enter(t, w, "Ann", 100, 100)
	views := map[world.ID]view{}
	w.Replicate(func(d *world.Delta) { apply(t, views, d) })
	b := enter(t, w, "Bob", 110, 100) // not replicated yet
	far := enter(t, w, "Far", 300, 300)

	got := w.Reveal(a, nil, b, a, b, 9999)
	if len(got) != 1 || got[0].ID != b || got[0].Name != "Bob" {
		t.Fatalf("Reveal: %+v", got)
	}
	views[a][b] = got[0]
	if again := w.Reveal(a, nil, b); len(again) != 0 {
		t.Fatalf("revealed twice: %+v", again)
	}
	// Far is outside Ann's circle: revealed, then gone at the next step.
	fr := w.Reveal(a, nil, far)
	if len(fr) != 1 {
		t.Fatalf("Reveal far: %+v", fr)
	}
	views[a][far] = fr[0]
	w.Replicate(func(d *world.Delta) {
		if d.Observer == a && (len(d.Disappear) != 1 || d.Disappear[0] != far || len(d.Appear) != 0) {
			t.Fatalf("Ann's delta after the reveals: %+v", d)
		}
		apply(t, views, d)
	})
	check(t, w, views)
}

// TestReplicationInPartsLosesNothing: observers replicated a third at a
// time, one third every Step while characters enter, leave and move, end
// up with exactly the world once everyone stops and each part has had its
// turn: a move between two passes of another part is never lost.
func TestReplicationInPartsLosesNothing(t *testing.T) {
	cfg := world.Config{Width: 400, Height: 300, Speed: 40, InterestRadius: 60, TickRate: 20}
	w := newWorld(t, cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	views := map[world.ID]view{}
	var in []world.ID
	const parts = 3
	apply1 := func(d *world.Delta) { apply(t, views, d) }
	for step := range 600 {
		in = randomChange(t, w, cfg, rng, in, views, 8, fmt.Sprintf("p%d", step))
		w.Step()
		w.ReplicatePart(step%parts, parts, apply1)
	}
	for _, id := range in {
		if err := w.SetIntent(id, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for p := range parts {
		w.Step()
		w.ReplicatePart(p, parts, apply1)
	}
	check(t, w, views)
}
