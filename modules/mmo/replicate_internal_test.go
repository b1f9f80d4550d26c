package mmo

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/world"
)

// TestSplitUpdate: a step goes out as one WorldUpdate when it fits, and
// otherwise as several, each under RecommendedMaxPayload, that together
// carry every entry once, in list order; an empty step sends nothing.
func TestSplitUpdate(t *testing.T) {
	collect := func(d *world.Delta) []mmoproto.WorldUpdate {
		var u mmoproto.WorldUpdate
		var out []mmoproto.WorldUpdate
		splitUpdate(&u, d, func() {
			p := u.Append(nil)
			if len(p) > mmoproto.RecommendedMaxPayload {
				t.Fatalf("a message of %d bytes", len(p))
			}
			got, err := mmoproto.ParseWorldUpdate(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got)
		})
		return out
	}
	if got := collect(&world.Delta{}); len(got) != 0 {
		t.Fatalf("an empty step sent %d messages", len(got))
	}
	small := &world.Delta{
		Appear:    []world.Snapshot{{ID: 1, Name: "Ann", X: 1, Y: 2}},
		Update:    []world.Snapshot{{ID: 1, X: 3, Y: 4}, {ID: 2, X: 5, Y: 6}},
		Disappear: []world.ID{9},
	}
	if got := collect(small); len(got) != 1 || len(got[0].Appear) != 1 || len(got[0].Positions) != 2 || !slices.Equal(got[0].Disappear, []uint32{9}) {
		t.Fatalf("a small step: %+v", got)
	}
	big := &world.Delta{}
	for i := range 120 {
		big.Appear = append(big.Appear, world.Snapshot{ID: world.ID(i + 1), Name: fmt.Sprintf("Character%03d", i)})
		big.Update = append(big.Update, world.Snapshot{ID: world.ID(1000 + i)})
		big.Disappear = append(big.Disappear, world.ID(2000+i))
	}
	got := collect(big)
	var app, pos, dis []uint32
	for _, u := range got {
		for _, a := range u.Appear {
			app = append(app, a.ID)
		}
		for _, p := range u.Positions {
			pos = append(pos, p.ID)
		}
		dis = append(dis, u.Disappear...)
	}
	want := func(from uint32) []uint32 {
		ids := make([]uint32, 120)
		for i := range ids {
			ids[i] = from + uint32(i)
		}
		return ids
	}
	if !slices.Equal(app, want(1)) || !slices.Equal(pos, want(1000)) || !slices.Equal(dis, want(2000)) {
		t.Fatalf("entries lost or reordered over %d messages", len(got))
	}
	// 120 × 26 + 120 × 12 + 120 × 4 bytes: five messages of at most 1,100.
	if len(got) != 5 {
		t.Errorf("%d messages, want 5", len(got))
	}
}
