package host_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
)

// roomConsole runs console commands; a failed one fails the test.
type roomConsole struct {
	t   *testing.T
	c   *client.Console
	out *syncbuf.Buffer
}

func newRoomConsole(t *testing.T, pin string) *roomConsole {
	out := &syncbuf.Buffer{}
	c := client.NewConsole(client.Config{Out: out, Pin: pin})
	t.Cleanup(c.Close)
	return &roomConsole{t: t, c: c, out: out}
}

func (rc *roomConsole) do(lines ...string) {
	rc.t.Helper()
	for _, l := range lines {
		if err := rc.c.Exec(l); err != nil {
			rc.t.Fatalf("%s: %v\noutput:\n%s", l, err, rc.out.String())
		}
	}
}

// refused runs a room command the server refuses with code: the command
// fails, naming the code, and the answer still prints as an event line.
func (rc *roomConsole) refused(line, code string) {
	rc.t.Helper()
	if err := rc.c.Exec(line); err == nil || !strings.Contains(err.Error(), "refused: "+code) {
		rc.t.Fatalf("%s: %v, want a refusal %s\noutput:\n%s", line, err, code, rc.out.String())
	}
}

// TestConsoleRoomCommands: the console's room commands send the requests
// and wait for the answers (a refusal fails the command); the answers and
// events print as lines that wait matches — a password room included.
func TestConsoleRoomCommands(t *testing.T) {
	srv := startLobby(t, []string{"entities"}, nil, nil)
	addr := srv.Addr().String()
	alice, bob := newRoomConsole(t, srv.Pin()), newRoomConsole(t, srv.Pin())
	alice.do("connect "+addr+" alice", "rooms", `wait "^rooms: 0 of 0 \(modes entities\)$" 10s`,
		"room_create den entities 4 sesame", `wait "room result: RoomCreate OK room 1" 10s`,
		`wait "in room 1 \"den\" mode entities map arena players 1/4 waiting open password, owner 1: alice\(1\)" 10s`,
		`wait "entity spawn: \d+ ball owner 1" 10s`)
	bob.do("connect " + addr + " bob")
	bob.refused("room_join 1", "WrongPassword")
	bob.do(`wait "room result: RoomJoin WrongPassword room 1" 10s`, "rooms", `wait "room 1 \"den\" .* password" 10s`)
	bob.refused("room_join 1 wrong", "WrongPassword")
	bob.do(`wait "room result: RoomJoin WrongPassword room 1: room 1 needs its password" 10s`,
		"room_join 1 sesame", `wait "room result: RoomJoin OK room 1" 10s`, `wait "entity spawn: \d+ ball owner 2" 10s`)
	alice.do(`wait "room 1: bob\(2\) joined" 10s`, "room_start", `wait "room 1: started by 1" 10s`)
	bob.refused("room_rename mine", "NotOwner")
	bob.do(`wait "room result: RoomRename NotOwner" 10s`,
		"room_pause", `wait "room 1: paused by 2" 10s`, "room_say hi alice")
	alice.do(`wait "room 1: paused by 2" 10s`, `wait "room chat bob: hi alice" 10s`,
		"global_say hello all", "room_rename cave", `wait "room 1: renamed to \"cave\" by 1" 10s`,
		"room_kick 2", `wait "room result: RoomKick OK room 1" 10s`)
	bob.do(`wait "global chat alice: hello all" 10s`, `wait "room 1: bob\(2\) left \(kicked\)" 10s`, "entities")
	if !strings.Contains(bob.out.String(), "entities: none") {
		t.Errorf("bob's world after the kick still holds room 1's entities:\n%s", bob.out.String())
	}
	bob.refused("room_leave", "NotInRoom")
	bob.do(`wait "room result: RoomLeave NotInRoom" 10s`)
	alice.do("room_leave", `wait "room result: RoomLeave OK room 1" 10s`)
	// Help lists the room commands.
	alice.do("help")
	for _, cmd := range []string{"rooms", "room_create", "room_join", "room_leave", "room_rename", "room_start", "room_pause", "room_kick", "room_say", "global_say"} {
		if !regexp.MustCompile(`(?m)^  ` + cmd + `\b`).MatchString(alice.out.String()) {
			t.Errorf("help does not list %s", cmd)
		}
	}
}
