package lua

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// TestEventsPastTheDeadlineWaitForTheNextTick: when a tick's budget is spent
// by many ordinary messages, the rest are delivered on later ticks — no
// message is lost and no fault is counted.
func TestEventsPastTheDeadlineWaitForTheNextTick(t *testing.T) {
	hs := load(t, "../../scripts/hello.lua", Config{})
	hs.budget = time.Microsecond // every Step ends after its first event
	var events []module.Event
	for range 2000 {
		events = append(events, message(1, 1000, netString("bob")))
	}
	if faults := hs.step(events...); len(faults) != 0 {
		t.Fatalf("faults %v", faults)
	}
	answered := len(hs.h.takeSends())
	if answered == 2000 {
		t.Fatal("all 2000 handled in one 1 ms tick: the test no longer exercises deferral")
	}
	for i := 0; i < 200 && answered < 2000; i++ {
		if faults := hs.step(); len(faults) != 0 {
			t.Fatalf("faults %v", faults)
		}
		answered += len(hs.h.takeSends())
	}
	if n := answered; n != 2000 {
		t.Fatalf("%d of 2000 greetings answered", n)
	}
	if out := hs.command("hello_count"); out != "greetings answered: 2000" {
		t.Errorf("hello_count = %q", out)
	}
}
