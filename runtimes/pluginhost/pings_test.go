package pluginhost_test

import (
	"testing"

	"github.com/sparkhost/sparkhost/module"
)

// The clients' link facts (ping, loss, bandwidth) go to the plugin about
// once a second, a share of the clients at each tick: no tick gathers
// every client's facts (a session lock and an estimate each, milliseconds
// for a few thousand clients, which made one tick a second the longest).
func TestPingsAreSpreadOverTheSecond(t *testing.T) {
	m, h, _ := start(t, "./examples/greeter", nil)
	const clients, perSecond = 600, 60
	var evs []module.Event
	for id := uint32(1); id <= clients; id++ {
		evs = append(evs, h.admit(id, "p"))
	}
	if err := m.Step(tick(1), evs); err != nil { // the admissions look their clients up
		t.Fatal(err)
	}
	seen := map[uint32]int{} // pings per client over the next two seconds
	most := 0
	for n := uint64(2); n <= 2*perSecond+1; n++ {
		h.looked = h.looked[:0]
		if err := m.Step(tick(n), nil); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(h.looked))
		for _, id := range h.looked {
			seen[id]++
		}
	}
	if limit := 2 * clients / perSecond; most > limit {
		t.Errorf("one tick looked up %d clients' facts, want at most %d (%d clients over a second's %d ticks)", most, limit, clients, perSecond)
	}
	for id := uint32(1); id <= clients; id++ {
		if c := seen[id]; c < 1 || c > 3 {
			t.Fatalf("client %d: %d pings in two seconds, want about 2", id, c)
		}
	}
}
