package rooms

import (
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// roomName makes a room name of s (the server's name for its fixed room):
// at most gamemsg.MaxRoomNameLen bytes, cut at a rune boundary.
func roomName(s string) string {
	for len(s) > gamemsg.MaxRoomNameLen {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	if !wire.ValidName([]byte(s), gamemsg.MaxRoomNameLen) {
		return "match"
	}
	return s
}

// worldLabel is what a world that is not a match announces for a map: its
// module's name, and "/area" when it has one, within the 64 bytes of a
// map name (the module's name is cut short first).
func worldLabel(name, area string) string {
	if area == "" {
		return truncateText(name, gamemsg.MaxMapLen)
	}
	return truncateText(name, gamemsg.MaxMapLen-1-len(area)) + "/" + area
}

// truncateText cuts s to at most n bytes on a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
