package lua

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The scripts the docs walk through: they must load and behave.

func TestHelloScript(t *testing.T) {
	hs := load(t, "../../scripts/hello.lua", Config{})
	if hs.man.Name != "hello" || len(hs.man.Messages) != 2 || len(hs.man.Commands) != 1 {
		t.Fatalf("manifest %+v", hs.man)
	}
	faults := hs.step(
		module.Event{Kind: module.EventAdmitted, Client: 4, Name: "ann"},
		message(4, 1000, netString("ann")),
	)
	if len(faults) != 0 {
		t.Fatal(faults)
	}
	sends := hs.h.takeSends()
	want := netString("Hello, ann! You are greeting number 1.")
	if len(sends) != 1 || sends[0].Client != 4 || sends[0].Type != 1001 || !bytes.Equal(sends[0].Payload, want) {
		t.Fatalf("sends = %+v, want %q to 4", sends, want)
	}
	if !strings.Contains(hs.h.logText(), "player joined: ann as client 4") {
		t.Errorf("log:\n%s", hs.h.logText())
	}
	if got := hs.command("hello_count"); got != "greetings answered: 1" {
		t.Fatalf("hello_count = %q", got)
	}

	state, err := hs.m.SaveState()
	if err != nil {
		t.Fatal(err)
	}
	next := load(t, "../../scripts/hello.lua", Config{})
	if err := next.m.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	if got := next.command("hello_count"); got != "greetings answered: 1" {
		t.Fatalf("after reload hello_count = %q", got)
	}
}

// tagState decodes a tag_state payload.
type tagState struct {
	it           uint32
	round, left  uint16
	running      bool
	announcement string
}

// lastTagState scans the sends for the last tag_state and announcements.
func lastTagState(t *testing.T, sends []sent) (st tagState, announcements []string) {
	t.Helper()
	for _, s := range sends {
		switch s.Type {
		case 1401:
			if len(s.Payload) != 9 {
				t.Fatalf("tag_state payload % x", s.Payload)
			}
			st.it = binary.LittleEndian.Uint32(s.Payload)
			st.round = binary.LittleEndian.Uint16(s.Payload[4:])
			st.left = binary.LittleEndian.Uint16(s.Payload[6:])
			st.running = s.Payload[8] == 1
		case 1402:
			r := wire.NewReader(s.Payload)
			announcements = append(announcements, r.Str())
			if err := r.Finish(); err != nil {
				t.Fatalf("tag_announce payload % x: %v", s.Payload, err)
			}
		}
	}
	return st, announcements
}

func tagMsg(from, target uint32) module.Event {
	return message(from, 1400, binary.LittleEndian.AppendUint32(nil, target))
}

func TestTagScript(t *testing.T) {
	hs := load(t, "../../scripts/tag.lua", Config{})
	hs.h.admit(1, "ann")
	hs.h.admit(2, "bob")
	hs.h.admit(3, "cid")
	if faults := hs.step(
		module.Event{Kind: module.EventAdmitted, Client: 1, Name: "ann"},
		module.Event{Kind: module.EventAdmitted, Client: 2, Name: "bob"},
		module.Event{Kind: module.EventAdmitted, Client: 3, Name: "cid"},
	); len(faults) != 0 {
		t.Fatal(faults)
	}
	st, ann := lastTagState(t, hs.h.takeSends())
	if !st.running || st.round != 1 || st.left != 120 || st.it < 1 || st.it > 3 {
		t.Fatalf("after two players joined: %+v", st)
	}
	if len(ann) != 1 || !strings.HasPrefix(ann[0], "Round 1: ") {
		t.Fatalf("announcements %q", ann)
	}
	it := st.it
	other := it%3 + 1
	third := other%3 + 1

	// Within the cooldown after the round starts, a tag is ignored.
	hs.step(tagMsg(it, other))
	if st, ann := lastTagState(t, hs.h.takeSends()); len(ann) != 0 || (st.running && st.it != it) {
		t.Fatalf("a tag within the cooldown was taken: %+v %q", st, ann)
	}
	hs.dt = time.Second
	hs.step()
	hs.h.takeSends()

	// Only "it" may tag; then "it" tags another player.
	hs.step(tagMsg(other, third), tagMsg(it, it), tagMsg(it, 99))
	if st, ann := lastTagState(t, hs.h.takeSends()); len(ann) != 0 || (st.running && st.it != it) {
		t.Fatalf("invalid tags were taken: %+v %q", st, ann)
	}
	if faults := hs.step(tagMsg(it, other)); len(faults) != 0 {
		t.Fatal(faults)
	}
	st, ann = lastTagState(t, hs.h.takeSends())
	if st.it != other || len(ann) != 1 || !strings.Contains(ann[0], " tagged ") {
		t.Fatalf("after the tag: %+v %q", st, ann)
	}
	if hs.h.scores[it] != [3]int32{1, 1, 0} || hs.h.scores[other] != [3]int32{0, 0, 1} {
		t.Fatalf("scores %v", hs.h.scores)
	}
	// No instant tag-back.
	hs.dt = 100 * time.Millisecond
	hs.step(tagMsg(other, it))
	if st, _ := lastTagState(t, hs.h.takeSends()); st.it == it {
		t.Fatal("instant tag-back was taken")
	}

	status := hs.command("tag_status")
	if !strings.HasPrefix(status, "round 1: ") || !strings.Contains(status, "3 players") {
		t.Fatalf("tag_status = %q", status)
	}

	// Hot reload in the middle of the round keeps round, it and the clock.
	state, err := hs.m.SaveState()
	if err != nil {
		t.Fatal(err)
	}
	next, err := tryLoad(t, "../../scripts/tag.lua", Config{Seed: 1}, hs.h)
	if err != nil {
		t.Fatal(err)
	}
	if err := next.m.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	next.dt = time.Second
	next.step(
		module.Event{Kind: module.EventAdmitted, Client: 1, Name: "ann"},
		module.Event{Kind: module.EventAdmitted, Client: 2, Name: "bob"},
		module.Event{Kind: module.EventAdmitted, Client: 3, Name: "cid"},
	)
	st, _ = lastTagState(t, hs.h.takeSends())
	if st.it != other || st.round != 1 || !st.running {
		t.Fatalf("after reload: %+v", st)
	}

	// The round runs out: whoever is "it" loses points; the next round
	// starts after the intermission.
	var over bool
	for range 130 {
		if faults := next.step(); len(faults) != 0 {
			t.Fatal(faults)
		}
		_, ann := lastTagState(t, hs.h.takeSends())
		for _, a := range ann {
			if strings.HasPrefix(a, "Round 1 over (time)") {
				over = true
			}
			if strings.HasPrefix(a, "Round 2: ") && !over {
				t.Fatal("round 2 before round 1 ended")
			}
		}
	}
	if !over || hs.h.scores[other] != [3]int32{-3, 0, 1} {
		t.Fatalf("round end: over=%v scores %v", over, hs.h.scores)
	}
	if status := next.command("tag_status"); !strings.HasPrefix(status, "round 2: ") || !strings.Contains(status, "record ") {
		t.Fatalf("tag_status = %q", status)
	}
}
