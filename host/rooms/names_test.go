package rooms

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestWorldLabelFitsAMapNameOnRuneBoundaries(t *testing.T) {
	if got := worldLabel("mmo", "west"); got != "mmo/west" {
		t.Errorf("worldLabel(mmo, west) = %q", got)
	}
	if got := worldLabel("mmo", ""); got != "mmo" {
		t.Errorf("worldLabel(mmo, \"\") = %q", got)
	}
	long := strings.Repeat("é", gamemsg.MaxMapLen) // two bytes a rune
	for _, area := range []string{"", "west", "a"} {
		got := worldLabel(long, area)
		if len(got) > gamemsg.MaxMapLen || !utf8.ValidString(got) || !strings.HasSuffix(got, area) {
			t.Errorf("worldLabel(long, %q) = %d bytes, valid %v: %q", area, len(got), utf8.ValidString(got), got)
		}
	}
}

func TestRoomNameIsAValidName(t *testing.T) {
	if got := roomName(strings.Repeat("ü", gamemsg.MaxRoomNameLen)); len(got) > gamemsg.MaxRoomNameLen || !utf8.ValidString(got) {
		t.Errorf("long name cut to %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := roomName("bad\x00name"); got != "match" {
		t.Errorf("an invalid server name names the room %q, want match", got)
	}
}
