package lagcomp

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// cube returns the box of half-extent h centred on (x, y, z).
func cube(x, y, z, h float32) AABB {
	return AABB{Min: v3(x-h, y-h, z-h), Max: v3(x+h, y+h, z+h)}
}

func newHistory(t testing.TB, cfg Config) *History {
	t.Helper()
	h, err := NewHistory(cfg)
	if err != nil {
		t.Fatalf("NewHistory: %v", err)
	}
	return h
}

func record(t testing.TB, h *History, at time.Duration, e ...Entity) {
	t.Helper()
	if err := h.Record(at, e); err != nil {
		t.Fatalf("Record(%v): %v", at, err)
	}
}

func rewind(t testing.TB, h *History, at time.Duration) []Entity {
	t.Helper()
	got, err := h.Rewind(at, nil)
	if err != nil {
		t.Fatalf("Rewind(%v): %v", at, err)
	}
	return got
}

func TestNewHistoryConfig(t *testing.T) {
	h := newHistory(t, Config{})
	if h.Window() != time.Second || len(h.ring) != 62 || h.maxEntities != DefaultMaxEntities {
		t.Fatalf("defaults: window %v ring %d max %d", h.Window(), len(h.ring), h.maxEntities)
	}
	if h := newHistory(t, Config{Window: 250 * time.Millisecond, TickRate: 30}); len(h.ring) != 10 { // ⌈7.5⌉ + 2
		t.Fatalf("ring of 250 ms at 30 Hz: %d", len(h.ring))
	}
	for _, cfg := range []Config{
		{Window: -time.Second}, {Window: MaxWindow + 1}, {TickRate: -1}, {TickRate: MaxTickRate + 1},
		{MaxEntities: -1}, {MaxEntities: MaxMaxEntities + 1},
	} {
		if _, err := NewHistory(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewHistory(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestRecordRefusesBadSnapshotsWhole(t *testing.T) {
	h := newHistory(t, Config{MaxEntities: 3})
	record(t, h, 10*time.Millisecond, Entity{ID: 1, Box: unit})
	nan := float32(math.NaN())
	cases := []struct {
		name string
		at   time.Duration
		e    []Entity
		want error
	}{
		{"same time", 10 * time.Millisecond, []Entity{{ID: 1, Box: unit}}, ErrNotIncreasing},
		{"earlier time", 5 * time.Millisecond, nil, ErrNotIncreasing},
		{"id 0", time.Second, []Entity{{ID: 1, Box: unit}, {ID: NoEntity, Box: unit}}, ErrInvalidEntity},
		{"duplicate id", time.Second, []Entity{{ID: 4, Box: unit}, {ID: 2, Box: unit}, {ID: 4, Box: unit}}, ErrInvalidEntity},
		{"NaN box", time.Second, []Entity{{ID: 2, Box: AABB{Min: v3(nan, 0, 0), Max: v3(1, 1, 1)}}}, ErrInvalidEntity},
		{"Inf box", time.Second, []Entity{{ID: 2, Box: AABB{Max: v3(float32(math.Inf(1)), 1, 1)}}}, ErrInvalidEntity},
		{"inverted box", time.Second, []Entity{{ID: 2, Box: AABB{Min: v3(0, 2, 0), Max: v3(1, 1, 1)}}}, ErrInvalidEntity},
		{"too many", time.Second, []Entity{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}, ErrTooManyEntities},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := h.Record(c.at, c.e); !errors.Is(err, c.want) {
				t.Fatalf("Record = %v, want %v", err, c.want)
			}
			if h.Len() != 1 {
				t.Fatalf("a refused snapshot was stored: %d snapshots", h.Len())
			}
			if got := rewind(t, h, 10*time.Millisecond); len(got) != 1 || got[0].Box != unit {
				t.Fatalf("the previous snapshot changed: %+v", got)
			}
		})
	}
}

func TestRecordCopiesAndSorts(t *testing.T) {
	h := newHistory(t, Config{})
	in := []Entity{{ID: 9, Box: cube(9, 0, 0, 1)}, {ID: 3, Box: cube(3, 0, 0, 1)}, {ID: 5, Box: cube(5, 0, 0, 1)}}
	record(t, h, 0, in...)
	in[0].Box = cube(100, 0, 0, 1) // the caller's slice is not aliased
	got := rewind(t, h, 0)
	if len(got) != 3 || got[0].ID != 3 || got[1].ID != 5 || got[2].ID != 9 || got[2].Box != cube(9, 0, 0, 1) {
		t.Fatalf("Rewind = %+v", got)
	}
}

func TestRewindInterpolatesBetweenSnapshots(t *testing.T) {
	h := newHistory(t, Config{})
	record(t, h, 100*time.Millisecond, Entity{ID: 1, Box: cube(0, 0, 0, 1)}, Entity{ID: 2, Box: cube(5, 5, 5, 1)})
	record(t, h, 200*time.Millisecond, Entity{ID: 1, Box: cube(10, -4, 2, 1)}, Entity{ID: 2, Box: cube(5, 5, 5, 2)})
	got := rewind(t, h, 125*time.Millisecond)
	want := []Entity{{ID: 1, Box: cube(2.5, -1, 0.5, 1)}, {ID: 2, Box: cube(5, 5, 5, 1.25)}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Rewind(125ms) = %+v, want %+v", got, want)
	}
	for _, at := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if got := rewind(t, h, at); got[0].Box != map[time.Duration]AABB{100 * time.Millisecond: cube(0, 0, 0, 1), 200 * time.Millisecond: cube(10, -4, 2, 1)}[at] {
			t.Fatalf("Rewind(%v) at a snapshot = %+v, want its own box", at, got)
		}
	}
}

func TestRewindSpawnDestroyAndTeleport(t *testing.T) {
	h := newHistory(t, Config{})
	record(t, h, 0, Entity{ID: 1, Box: cube(0, 0, 0, 1)}, Entity{ID: 2, Box: cube(0, 0, 0, 1)}, Entity{ID: 4, Box: cube(0, 0, 0, 1)})
	// 1 is destroyed, 3 spawns, 4 teleports.
	record(t, h, 100*time.Millisecond, Entity{ID: 2, Box: cube(1, 0, 0, 1)}, Entity{ID: 3, Box: cube(0, 0, 0, 1)},
		Entity{ID: 4, Box: cube(50, 0, 0, 1), Teleported: true})
	ids := func(es []Entity) (s []uint32) {
		for _, e := range es {
			s = append(s, e.ID)
		}
		return s
	}
	if got := rewind(t, h, 0); len(got) != 3 || got[0].ID != 1 {
		t.Fatalf("at the first snapshot: %v", ids(got))
	}
	mid := rewind(t, h, 50*time.Millisecond)
	if len(mid) != 2 || mid[0].ID != 2 || mid[1].ID != 4 {
		t.Fatalf("between: %v, want [2 4] (1 destroyed, 3 not yet spawned)", ids(mid))
	}
	if mid[1].Box != cube(0, 0, 0, 1) {
		t.Fatalf("teleported entity interpolated: %+v", mid[1].Box)
	}
	if got := rewind(t, h, 100*time.Millisecond); len(got) != 3 || got[1].ID != 3 || got[2].Box != cube(50, 0, 0, 1) {
		t.Fatalf("at the second snapshot: %+v", got)
	}
}

func TestRewindRefusesOutsideTheWindow(t *testing.T) {
	h := newHistory(t, Config{})
	if _, err := h.Rewind(0, nil); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("empty history: %v", err)
	}
	if _, _, err := h.Raycast(v3(0, 0, 0), v3(1, 0, 0), 10, 0, NoEntity); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("empty history Raycast: %v", err)
	}
	period := time.Second / 60
	for i := range 300 { // 5 s at 60 Hz: the ring wraps several times
		record(t, h, time.Duration(i)*period, Entity{ID: 1, Box: cube(float32(i), 0, 0, 0.5)})
	}
	oldest, newest, _ := h.Span()
	if h.Len() != 62 || newest != 299*period || oldest != 238*period {
		t.Fatalf("span %v..%v with %d snapshots", oldest, newest, h.Len())
	}
	cases := []struct {
		at   time.Duration
		want error
	}{
		{newest, nil},
		{newest - time.Second, nil}, // exactly the window
		{newest - time.Second - 1, ErrTooOld},
		{oldest - 1, ErrTooOld},
		{0, ErrTooOld},
		{-time.Hour, ErrTooOld},
		{newest + 1, ErrFuture},
		{math.MaxInt64, ErrFuture},
		{math.MinInt64, ErrTooOld},
	}
	for _, c := range cases {
		if _, err := h.Rewind(c.at, nil); !errors.Is(err, c.want) {
			t.Errorf("Rewind(%v) = %v, want %v", c.at, err, c.want)
		}
		if _, _, err := h.Raycast(v3(0, 0, -5), v3(0, 0, 1), 10, c.at, NoEntity); !errors.Is(err, c.want) {
			t.Errorf("Raycast(%v) = %v, want %v", c.at, err, c.want)
		}
	}
	h.Reset()
	if _, err := h.Rewind(newest, nil); !errors.Is(err, ErrNoHistory) || h.Len() != 0 {
		t.Fatalf("after Reset: %v, %d snapshots", err, h.Len())
	}
}

func TestRaycastNearestExcludeAndTies(t *testing.T) {
	h := newHistory(t, Config{})
	record(t, h, 0,
		Entity{ID: 1, Box: cube(0, 0, 0, 1)},  // the shooter, around the origin
		Entity{ID: 7, Box: cube(0, 0, 10, 1)}, // far target
		Entity{ID: 5, Box: cube(0, 0, 5, 1)},  // near target
		Entity{ID: 6, Box: cube(0, 0, 5, 1)},  // same place as 5: the lower id wins
	)
	hit, ok, err := h.Raycast(v3(0, 0, 0), v3(0, 0, 1), 100, 0, 1)
	if err != nil || !ok || hit.Entity != 5 || hit.Distance != 4 || hit.Point != v3(0, 0, 4) {
		t.Fatalf("Raycast = %+v %v %v, want entity 5 at (0,0,4)", hit, ok, err)
	}
	if hit, ok, _ := h.Raycast(v3(0, 0, 0), v3(0, 0, 1), 100, 0, NoEntity); !ok || hit.Entity != 1 || hit.Distance != 0 {
		t.Fatalf("without exclusion the shooter's own box is hit at 0: %+v", hit)
	}
	if _, ok, _ := h.Raycast(v3(0, 0, 0), v3(0, 0, 1), 3.9, 0, 1); ok {
		t.Fatal("hit beyond maxDist")
	}
	if _, ok, _ := h.Raycast(v3(0, 0, 0), v3(0, 1, 0), 100, 0, 1); ok {
		t.Fatal("hit upwards")
	}
	for _, bad := range []struct{ o, d wire.Vec3 }{
		{v3(float32(math.NaN()), 0, 0), v3(0, 0, 1)},
		{v3(0, 0, 0), v3(0, 0, 0)},
		{v3(0, 0, 0), v3(float32(math.Inf(-1)), 0, 0)},
	} {
		if _, _, err := h.Raycast(bad.o, bad.d, 100, 0, 1); !errors.Is(err, ErrInvalidRay) {
			t.Errorf("Raycast(%+v) = %v, want ErrInvalidRay", bad, err)
		}
	}
	if _, _, err := h.Raycast(v3(0, 0, 0), v3(0, 0, 1), float32(math.Inf(1)), 0, 1); !errors.Is(err, ErrInvalidRay) {
		t.Errorf("infinite maxDist: %v", err)
	}
}

func TestRewindTime(t *testing.T) {
	now := 10 * time.Second
	for _, c := range []struct{ rtt, want time.Duration }{
		{150 * time.Millisecond, now - 75*time.Millisecond},
		{0, now},
		{-time.Second, now},
		{3 * time.Millisecond, now - 1500*time.Microsecond},
	} {
		if got := RewindTime(now, c.rtt); got != c.want {
			t.Errorf("RewindTime(%v, %v) = %v, want %v", now, c.rtt, got, c.want)
		}
	}
}
