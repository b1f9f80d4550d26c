package mmoclient

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
)

// enteredSession is a session whose character Alice (world id 7, at
// 500,500) has entered the world; the server side answers every request.
func enteredSession(t *testing.T) *served {
	t.Helper()
	p := newServed(t)
	if _, err := p.s.Register(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.Login(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.Enter(bg, "Alice"); err != nil {
		t.Fatal(err)
	}
	if lines := p.events.take(); len(lines) != 0 {
		t.Fatalf("event lines before any replication: %q", lines)
	}
	return p
}

func names(cs []Character) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func wantLines(t *testing.T, ev *eventLines, want ...string) {
	t.Helper()
	if got := ev.take(); !slices.Equal(got, want) {
		t.Fatalf("event lines %q, want %q", got, want)
	}
}

// TestReplicationKeepsCharacterMap: Appear, Positions and Disappear alone
// keep Nearby (own excluded, nearest first) and Self right, and print the
// lines the console's wait matches — never one about the own character.
func TestReplicationKeepsCharacterMap(t *testing.T) {
	p := enteredSession(t)
	s := p.s
	if _, ok := s.Self(); ok {
		t.Fatal("Self known before the own Appear")
	}
	deliver(t, s, &mmoproto.Appear{Tick: 1, Entries: []mmoproto.Appearance{
		{ID: 3, X: 540, Y: 500, Name: "Carol"},
		{ID: 7, X: 500, Y: 500, Name: "Alice"},
		{ID: 9, X: 510, Y: 500, Name: "Bob"},
	}})
	wantLines(t, p.events, "mmo Carol appeared at 540.0,500.0", "mmo Bob appeared at 510.0,500.0")
	if self, ok := s.Self(); !ok || self.ID != 7 || self.Name != "Alice" || self.X != 500 || self.Y != 500 {
		t.Fatalf("Self = %+v %v", self, ok)
	}
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Bob", "Carol"}) {
		t.Fatalf("Nearby = %q, want nearest first without Alice", got)
	}
	if st := s.Status(); st != (Status{Account: "alice", Character: "Alice", ID: 7, Known: 3}) {
		t.Fatalf("Status = %+v", st)
	}

	// Carol walks past Bob; Alice moves too (no line for her); an unknown
	// id is not invented.
	deliver(t, s, &mmoproto.Positions{Tick: 2, Entries: []mmoproto.Position{
		{ID: 3, X: 505, Y: 500}, {ID: 7, X: 501, Y: 500}, {ID: 42, X: 1, Y: 1},
	}})
	wantLines(t, p.events, "mmo Carol moving from 540.0,500.0")
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Carol", "Bob"}) {
		t.Fatalf("Nearby after Positions = %q", got)
	}
	if self, _ := s.Self(); self.X != 501 {
		t.Fatalf("Self after Positions = %+v", self)
	}
	if n := s.Status().Known; n != 3 {
		t.Fatalf("Positions of an unknown id added a character: %d known", n)
	}

	// Carol keeps walking: one moving line per walk, not per update.
	deliver(t, s, &mmoproto.Positions{Tick: 3, Entries: []mmoproto.Position{{ID: 3, X: 504, Y: 500}}})
	wantLines(t, p.events)

	deliver(t, s, &mmoproto.Disappear{Tick: 4, IDs: []uint32{3, 42}})
	wantLines(t, p.events, "mmo Carol disappeared")
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Bob"}) {
		t.Fatalf("Nearby after Disappear = %q", got)
	}

	// Nearest first is by distance, then by id.
	deliver(t, s, &mmoproto.Appear{Tick: 5, Entries: []mmoproto.Appearance{{ID: 2, X: 491, Y: 500, Name: "Dave"}}})
	deliver(t, s, &mmoproto.Positions{Tick: 5, Entries: []mmoproto.Position{{ID: 7, X: 500, Y: 500}}})
	wantLines(t, p.events, "mmo Dave appeared at 491.0,500.0")
	near := s.Nearby()
	if got := names(near); !slices.Equal(got, []string{"Dave", "Bob"}) {
		t.Fatalf("Nearby = %q, want Dave (9 away) before Bob (10 away)", got)
	}
	deliver(t, s, &mmoproto.Positions{Tick: 6, Entries: []mmoproto.Position{{ID: 2, X: 490, Y: 500}}})
	wantLines(t, p.events, "mmo Dave moving from 491.0,500.0")
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Dave", "Bob"}) {
		t.Fatalf("Nearby at equal distances = %q, want by id", got)
	}

	deliver(t, s, &mmoproto.Greeting{FromID: 9, ToID: 7, FromName: "Bob", ToName: "Alice"})
	wantLines(t, p.events, "mmo greeting: Bob greets Alice")

	// The own character leaving the interest map is no event either.
	deliver(t, s, &mmoproto.Disappear{Tick: 7, IDs: []uint32{7}})
	wantLines(t, p.events)
	if _, ok := s.Self(); ok {
		t.Fatal("Self after the own Disappear")
	}
}

// TestOwnAppearRightAfterEntered: the server sends the own Appear right
// after Entered; the receive goroutine may handle both before Enter's
// caller runs again. The own character must not print an appeared line.
func TestOwnAppearRightAfterEntered(t *testing.T) {
	p := newServed(t)
	if _, err := p.s.Register(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.s.Login(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	p.conn.inline = func(req sent) {
		deliver(t, p.s, p.srv.answer(req.msg))
		deliver(t, p.s, &mmoproto.Appear{Tick: 1, Entries: []mmoproto.Appearance{
			{ID: 7, X: 500, Y: 500, Name: "Alice"}, {ID: 9, X: 510, Y: 500, Name: "Bob"},
		}})
	}
	e, err := p.s.Enter(bg, "Alice")
	if err != nil || e.ID != 7 {
		t.Fatalf("Enter = %+v %v", e, err)
	}
	wantLines(t, p.events, "mmo Bob appeared at 510.0,500.0")
	if self, ok := p.s.Self(); !ok || self.Name != "Alice" {
		t.Fatalf("Self = %+v %v", self, ok)
	}
	if got := names(p.s.Nearby()); !slices.Equal(got, []string{"Bob"}) {
		t.Fatalf("Nearby = %q", got)
	}
}

// TestEnteredAnswersOnlyEnter: an Entered that answers another request
// (or nobody) does not make the session believe it plays a character.
func TestEnteredAnswersOnlyEnter(t *testing.T) {
	conn := newFakeConn(t)
	s := NewSession(conn, nil)
	s.Timeout = failBound
	deliver(t, s, &mmoproto.Entered{RequestID: 77, ID: 3, Name: "Eve"})
	f := startCall(t, conn, func() error { _, err := s.Where(bg); return err })
	deliver(t, s, &mmoproto.Entered{RequestID: f.id(), ID: 3, Name: "Eve"})
	if err := f.wait(t); err == nil {
		t.Fatal("Where answered by Entered succeeded")
	}
	if st := s.Status(); st.Character != "" || st.ID != 0 {
		t.Fatalf("a stray Entered set the character: %+v", st)
	}
}

// TestMovingLines: a character prints "moving from" when it starts to
// move, and again only after it has been still (no position change) for
// longer than stillAfter. The session reads the clock, so this runs in
// virtual time.
func TestMovingLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := new(eventLines)
		s := NewSession(newFakeConn(t), ev.add)
		pos := func(x float32) {
			deliver(t, s, &mmoproto.Positions{Entries: []mmoproto.Position{{ID: 9, X: x, Y: 0}}})
		}
		deliver(t, s, &mmoproto.Appear{Entries: []mmoproto.Appearance{{ID: 9, X: 0, Y: 0, Name: "Bob"}}})
		wantLines(t, ev, "mmo Bob appeared at 0.0,0.0")

		// Appeared long ago: the first change is the start of a walk.
		time.Sleep(10 * stillAfter)
		pos(1)
		wantLines(t, ev, "mmo Bob moving from 0.0,0.0")
		time.Sleep(stillAfter / 10)
		pos(2)
		time.Sleep(stillAfter) // exactly stillAfter still: not yet still
		pos(3)
		wantLines(t, ev)

		time.Sleep(stillAfter + time.Millisecond)
		pos(4)
		wantLines(t, ev, "mmo Bob moving from 3.0,0.0")
		pos(5)
		wantLines(t, ev)

		// Appearing again (it left and came back) starts a new walk.
		deliver(t, s, &mmoproto.Disappear{IDs: []uint32{9}})
		deliver(t, s, &mmoproto.Appear{Entries: []mmoproto.Appearance{{ID: 9, X: 8, Y: 0, Name: "Bob"}}})
		pos(9)
		wantLines(t, ev, "mmo Bob disappeared", "mmo Bob appeared at 8.0,0.0", "mmo Bob moving from 8.0,0.0")
	})
}

// TestLoggedOutForgetsSession: LoggedOut ends the login and forgets the
// character and everyone seen, with a line naming the reason.
func TestLoggedOutForgetsSession(t *testing.T) {
	for _, tc := range []struct {
		reason mmoproto.LoggedOutReason
		detail string
		line   string
	}{
		{mmoproto.LoggedOutElsewhere, "your account logged in on another connection", "mmo logged out: LoggedInElsewhere (your account logged in on another connection)"},
		{mmoproto.LoggedOutKicked, "", "mmo logged out: Kicked ()"},
		{mmoproto.LoggedOutReason(200), "why", "mmo logged out: LoggedOutReason(200) (why)"},
	} {
		t.Run(tc.reason.String(), func(t *testing.T) {
			p := enteredSession(t)
			deliver(t, p.s, &mmoproto.Appear{Entries: []mmoproto.Appearance{
				{ID: 7, X: 500, Y: 500, Name: "Alice"}, {ID: 9, X: 510, Y: 500, Name: "Bob"},
			}})
			p.events.take()
			deliver(t, p.s, &mmoproto.LoggedOut{Reason: tc.reason, Detail: tc.detail})
			wantLines(t, p.events, tc.line)
			if st := p.s.Status(); st != (Status{}) {
				t.Fatalf("Status after LoggedOut = %+v", st)
			}
			if _, ok := p.s.Self(); ok || len(p.s.Nearby()) != 0 {
				t.Fatalf("characters remembered after LoggedOut: %+v", p.s.Nearby())
			}
		})
	}
}

// TestLeaveAndLogoutForget: Leave forgets the character and the view but
// stays logged in; Logout forgets the login too.
func TestLeaveAndLogoutForget(t *testing.T) {
	p := enteredSession(t)
	appear := &mmoproto.Appear{Entries: []mmoproto.Appearance{
		{ID: 7, X: 500, Y: 500, Name: "Alice"}, {ID: 9, X: 510, Y: 500, Name: "Bob"},
	}}
	deliver(t, p.s, appear)
	if err := p.s.Leave(bg); err != nil {
		t.Fatal(err)
	}
	if st := p.s.Status(); st != (Status{Account: "alice"}) {
		t.Fatalf("Status after Leave = %+v", st)
	}
	if _, err := p.s.Enter(bg, "Alice"); err != nil {
		t.Fatal(err)
	}
	deliver(t, p.s, appear)
	if err := p.s.Logout(bg); err != nil {
		t.Fatal(err)
	}
	if st := p.s.Status(); st != (Status{}) || len(p.s.Nearby()) != 0 {
		t.Fatalf("Status after Logout = %+v, nearby %+v", st, p.s.Nearby())
	}
	// The server agrees: the session rules now refuse.
	if _, err := p.s.Where(bg); func() bool { c, ok := code(err); return !ok || c != mmoproto.NotLoggedIn }() {
		t.Fatalf("Where after Logout = %v", err)
	}
}

// TestWorldUpdateAppliesItsListsInOrder: one WorldUpdate carries a step's
// three lists and applies them as Appear, Positions, Disappear would, in
// that order: a character can appear and move in the same update, and one
// can move and leave.
func TestWorldUpdateAppliesItsListsInOrder(t *testing.T) {
	p := enteredSession(t)
	s := p.s
	deliver(t, s, &mmoproto.WorldUpdate{Tick: 1, Appear: []mmoproto.Appearance{
		{ID: 7, X: 500, Y: 500, Name: "Alice"},
		{ID: 9, X: 510, Y: 500, Name: "Bob"},
		{ID: 3, X: 540, Y: 500, Name: "Carol"},
	}, Positions: []mmoproto.Position{{ID: 9, X: 511, Y: 500}, {ID: 42, X: 1, Y: 1}}})
	wantLines(t, p.events, "mmo Bob appeared at 510.0,500.0", "mmo Carol appeared at 540.0,500.0", "mmo Bob moving from 510.0,500.0")
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Bob", "Carol"}) {
		t.Fatalf("Nearby = %q", got)
	}
	if n := s.Status().Known; n != 3 {
		t.Fatalf("%d known, want 3 (an unknown id is not invented)", n)
	}
	deliver(t, s, &mmoproto.WorldUpdate{Tick: 2, Positions: []mmoproto.Position{{ID: 3, X: 505, Y: 500}}, Disappear: []uint32{3}})
	wantLines(t, p.events, "mmo Carol moving from 540.0,500.0", "mmo Carol disappeared")
	if got := names(s.Nearby()); !slices.Equal(got, []string{"Bob"}) {
		t.Fatalf("Nearby after the second update = %q", got)
	}
	if self, ok := s.Self(); !ok || self.ID != 7 {
		t.Fatalf("Self = %+v %v", self, ok)
	}
}

// TestUnaskedFailureIsShown: a failure Result with request id 0 answers no
// request. Right after a Handoff it says the hand-in failed (the character
// passed its ticket check but could not enter the destination's world);
// otherwise it is shown as what the server reports. Neither is dropped.
func TestUnaskedFailureIsShown(t *testing.T) {
	p := enteredSession(t)
	deliver(t, p.s, &mmoproto.Handoff{Area: "east", Addr: "127.0.0.1:1", Pin: "ed25519:x", Ticket: []byte{1}})
	wantLines(t, p.events, "mmo handing over to east at 127.0.0.1:1")
	deliver(t, p.s, &mmoproto.TicketResult{Code: mmoproto.OK, Account: "alice"},
		&mmoproto.Result{Code: mmoproto.AlreadyInWorld, Detail: "Alice is in the world already"})
	wantLines(t, p.events, "mmo handoff failed: AlreadyInWorld (Alice is in the world already); log in with your password")
	deliver(t, p.s, &mmoproto.Result{Code: mmoproto.Internal, Detail: "boom"})
	wantLines(t, p.events, "mmo: the server reports Internal (boom)")
	deliver(t, p.s, &mmoproto.Result{Code: mmoproto.OK})
	wantLines(t, p.events)
}
