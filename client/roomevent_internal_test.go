package client

import (
	"testing"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestRoomEventText: a room's owner reads who guessed its password, and
// how often.
func TestRoomEventText(t *testing.T) {
	got := roomEventText(gamemsg.RoomEvent{Kind: gamemsg.RoomPasswordFailures, Room: 3, Client: 9, Value: 6, Name: "eve"})
	if want := "6 wrong password(s) tried for your room, the latest by eve(9)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
