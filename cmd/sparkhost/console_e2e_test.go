package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hexRecv is a module message the console could only print as hex: its
// type declares no fields.
var hexRecv = regexp.MustCompile(`(?m)^recv [a-zA-Z_0-9]+ ([0-9a-f]+|\(empty\))$`)

// TestConsoleDecodesDeathmatchMessages: the deathmatch module declares the
// fields of its messages, so the stock console lists them typed and prints
// the Map it is sent on admission decoded, never as hex.
func TestConsoleDecodesDeathmatchMessages(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", "deathmatch")
	addr := rs.addr.String()
	c := startClient(t, bin, filepath.Join(tmp, "c"), rs.pin,
		`connect `+addr+` ann; wait 'recv Map name="[a-z0-9_]+"' 30s; messages; quit`)
	c.waitExit(t, "client")
	out := c.output()
	for _, want := range []string{
		"message 1300 Frag owner deathmatch s2c reliable_ordered fields: killer u32, victim u32, flags u8",
		"message 1301 Hit owner deathmatch s2c reliable_ordered fields: attacker u32, victim u32, damage u16, health u16",
		"message 1302 Team owner deathmatch s2c reliable_ordered fields: client u32, team u8",
		"message 1303 Map owner deathmatch s2c reliable_ordered fields: name str(64)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("messages does not list %q:\n%s", want, out)
		}
	}
	if hexRecv.MatchString(out) {
		t.Errorf("a deathmatch message printed as hex:\n%s", out)
	}
}

// TestConsoleDecodesTagMessages: scripts/tag.lua declares its fields; two
// stock consoles see tag_state and tag_announce decoded, and one sends
// tag_tag by field name.
func TestConsoleDecodesTagMessages(t *testing.T) {
	bin := buildBinary(t)
	root, err := filepath.Abs("../..") // where scripts/tag.lua is
	if err != nil {
		t.Fatal(err)
	}
	tmp := shortTempDir(t)
	rs := startServerIn(t, bin, root, filepath.Join(tmp, "data"), "--module", "tag")
	addr := rs.addr.String()
	ann := startClient(t, bin, filepath.Join(tmp, "ann"), rs.pin,
		`connect `+addr+` ann; wait 'recv tag_state it=0 round=0 seconds_left=0 running=0' 30s; `+
			`wait 'recv tag_announce text="Round 1: [a-z]+ is it!"' 30s; messages; quit`)
	ann.waitLine(t, "recv tag_state it=0")
	bob := startClient(t, bin, filepath.Join(tmp, "bob"), rs.pin,
		`connect `+addr+` bob; wait 'recv tag_state it=[12] round=1 seconds_left=1[0-9][0-9] running=1' 30s; send tag_tag target=1; quit`)
	ann.waitExit(t, "ann")
	bob.waitExit(t, "bob")
	out := ann.output()
	for _, want := range []string{
		"message 1400 tag_tag owner tag c2s reliable fields: target u32",
		"message 1401 tag_state owner tag s2c reliable_ordered fields: it u32, round u16, seconds_left u16, running u8",
		"message 1402 tag_announce owner tag s2c reliable fields: text str(200)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("messages does not list %q:\n%s", want, out)
		}
	}
	if !strings.Contains(bob.output(), "sent tag_tag (4 bytes)") {
		t.Errorf("bob's tag_tag not sent:\n%s", bob.output())
	}
	for _, o := range []string{out, bob.output()} {
		if hexRecv.MatchString(o) {
			t.Errorf("a tag message printed as hex:\n%s", o)
		}
	}
}

// TestModeGivenByPathIsNamedByItsDeclaration: a module given by path —
// `--module ./scripts/tag.lua` on a one-match server, `--mode
// ./scripts/tag.lua` on a lobby — is offered and shown under the name its
// spark.module{name=} declares, not the path; a room is created by it.
func TestModeGivenByPathIsNamedByItsDeclaration(t *testing.T) {
	bin := buildBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := shortTempDir(t)
	one := startServerIn(t, bin, root, filepath.Join(tmp, "one"), "--module", "./scripts/tag.lua")
	c := startClient(t, bin, filepath.Join(tmp, "c1"), one.pin,
		`connect `+one.addr.String()+` ann; rooms; wait 'room 1 "[^"]*" mode tag map'; quit`)
	c.waitExit(t, "client of the one-match server")
	if out := c.output(); !strings.Contains(out, "rooms: 1 of 1 (modes tag)") || strings.Contains(out, "tag.lua") {
		t.Errorf("one-match server: the mode is not named tag:\n%s", out)
	}

	lobby := startServerIn(t, bin, root, filepath.Join(tmp, "lobby"), "--rooms", "--mode", "./scripts/tag.lua")
	c = startClient(t, bin, filepath.Join(tmp, "c2"), lobby.pin,
		`connect `+lobby.addr.String()+` ann; rooms; room_create fun tag; wait 'in room [0-9]+ "fun" mode tag '; quit`)
	c.waitExit(t, "client of the lobby")
	if out := c.output(); !strings.Contains(out, "rooms: 0 of 0 (modes tag)") || strings.Contains(out, "tag.lua") {
		t.Errorf("lobby: the mode is not named tag:\n%s", out)
	}
}

// TestRoomCommandsWaitForTheirAnswer: each room command waits for the
// server's answer and prints it before the next command runs, and a
// refusal fails the script (exit 1) at that command.
func TestRoomCommandsWaitForTheirAnswer(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--rooms", "--mode", "deathmatch")
	addr := rs.addr.String()
	ok := startClient(t, bin, filepath.Join(tmp, "ok"), rs.pin,
		`connect `+addr+` ann; rooms; room_create fun deathmatch; room_leave; quit`)
	ok.waitExit(t, "the client whose requests succeed")
	out := ok.output()
	for _, want := range []string{"rooms: 0 of 0 (modes deathmatch)\n", "room result: RoomCreate OK room ", "room result: RoomLeave OK room "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q (the command did not wait for its answer):\n%s", want, out)
		}
	}

	bad := startClient(t, bin, filepath.Join(tmp, "bad"), rs.pin,
		`connect `+addr+` bob; room_join 99; say never`)
	select {
	case err := <-bad.done:
		out := bad.output()
		if err == nil || !strings.Contains(out, "error: room_join: refused: NoSuchRoom") || strings.Contains(out, "said: never") {
			t.Errorf("a refused room_join: exit %v; output:\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("client still running after 60 s; output:\n%s", bad.output())
	}
}
