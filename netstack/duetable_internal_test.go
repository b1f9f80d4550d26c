package netstack

import (
	"testing"
)

// TestDueTableListsOnlyTheDue: of many admitted sessions the walk returns
// those due (or woken) and no other; a freed entry is reused, and a wake
// of a session that left does not reach the entry's next owner.
func TestDueTableListsOnlyTheDue(t *testing.T) {
	var tab dueTable
	peers := make([]*peer, 3*dueChunkSize+5)
	for i := range peers {
		p := &peer{session: &session{}}
		p.svcAt.Store(&p.svcDue)
		tab.add(p)
		p.svcAt.Load().Store(1000) // idle: due at 1000
		peers[i] = p
	}
	if got := tab.dueList(nil, 999); len(got) != 0 {
		t.Fatalf("%d sessions listed before any is due", len(got))
	}
	peers[7].wakeService()
	peers[3*dueChunkSize+4].wakeService()
	got := tab.dueList(nil, 999)
	if len(got) != 2 || got[0] != peers[7] || got[1] != peers[3*dueChunkSize+4] {
		t.Fatalf("listed %d sessions, want the two woken", len(got))
	}
	if got := tab.dueList(got, 1000); len(got) != len(peers) {
		t.Fatalf("at their due time %d of %d listed", len(got), len(peers))
	}
	for _, p := range []*peer{peers[7], peers[3*dueChunkSize+4]} {
		p.svcAt.Load().Store(1000) // serviced
	}
	gone := peers[100]
	tab.remove(gone)
	next := &peer{session: &session{}}
	next.svcAt.Store(&next.svcDue)
	tab.add(next)
	next.svcAt.Load().Store(1000)
	if next.dueIdx != 101 || tab.n.Load() != int32(len(peers)) {
		t.Fatalf("the freed entry was not reused: index %d, %d entries", next.dueIdx-1, tab.n.Load())
	}
	gone.wakeService()
	for _, p := range tab.dueList(nil, 999) {
		t.Fatalf("listed session %p after a departed session's wake", p)
	}
}
