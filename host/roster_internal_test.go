package host

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/ops"
)

// TestRosterOfManyIsRebuiltFourTimesASecond: the ops layer's roster of a
// large server is copied again at most every modulesPublishEvery however
// often players arrive; a small server's at every change.
func TestRosterOfManyIsRebuiltFourTimesASecond(t *testing.T) {
	s := &Server{players: make(map[uint32]netstack.ClientInfo)}
	t0 := time.Unix(1000, 0)
	for n := range rosterSmall + 1 {
		s.players[uint32(n)] = netstack.ClientInfo{ID: uint32(n)}
	}
	if !s.rosterDue([2]uint64{1, 257}, t0) {
		t.Fatal("no roster yet: want one built")
	}
	s.ops.roster.Store(&[]ops.Player{})
	s.ops.rosterKey, s.ops.rosterAt = [2]uint64{1, 257}, t0
	if s.rosterDue([2]uint64{1, 257}, t0.Add(time.Second)) {
		t.Error("rebuilt with nothing changed")
	}
	if s.rosterDue([2]uint64{2, 258}, t0.Add(17*time.Millisecond)) {
		t.Errorf("%d players: rebuilt at the next tick's change, want at most every %v", len(s.players), modulesPublishEvery)
	}
	if !s.rosterDue([2]uint64{2, 258}, t0.Add(modulesPublishEvery)) {
		t.Errorf("a change not published after %v", modulesPublishEvery)
	}
	clear(s.players)
	if !s.rosterDue([2]uint64{3, 0}, t0.Add(time.Millisecond)) {
		t.Error("a small server's roster waits: want it rebuilt at every change")
	}
}
