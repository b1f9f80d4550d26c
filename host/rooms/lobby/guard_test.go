package lobby

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// passwordRoom opens a room with the password "sesame", its creator a
// client of its own.
func passwordRoom(t *testing.T, l *Lobby) (*Entry, roomauth.Verifier) {
	t.Helper()
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, bytes.NewReader(make([]byte, 16)))
	if err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, l, 1_000_000+uint32(l.next), gamemsg.RoomCreate{Name: fmt.Sprint("r", l.next), Mode: "tag", Capacity: 64,
		Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey})
	return r, v
}

// joiner is client from its own IPv4 source 10.x.y.z.
func joiner(client uint32) Joiner {
	return Joiner{Client: client, Name: fmt.Sprint("p", client), Source: SourceOf(netip.AddrFrom4([4]byte{10, byte(client >> 16), byte(client >> 8), byte(client)})), Binding: [32]byte{byte(client)}}
}

var wrongProof = bytes.Repeat([]byte{0xEE}, roomauth.KeyLen)

func TestPasswordBackoffGrowsAndEnds(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}, CreatedPerClient: 9})
	r, v := passwordRoom(t, l)
	now := t0
	next := uint32(100) // a fresh client and source for every proof: only the room's count applies
	guess := func() (gamemsg.RoomCode, Outcome) {
		next++
		_, out, err := l.Join(joiner(next), r.ID, wrongProof, now)
		return code(t, err), out
	}
	for i := range DefaultPasswordFree + 1 { // the free ones, and the one that starts the back-off
		if c, out := guess(); c != gamemsg.RoomWrongPassword || !out.Wrong {
			t.Fatalf("guess %d: %v %+v", i+1, c, out)
		}
	}
	var delays []time.Duration
	for range 4 {
		if c, out := guess(); c != gamemsg.RoomRateLimited || !out.Refused || out.Wrong {
			t.Fatalf("a guess during the back-off: %v %+v", c, out)
		}
		// The right password is refused too, unchecked, until the back-off ends.
		j := joiner(7)
		good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, uint32(r.ID), j.Binding)
		if _, _, err := l.Join(j, r.ID, good[:], now); code(t, err) != gamemsg.RoomRateLimited {
			t.Fatalf("the right password during the back-off: %v", err)
		}
		d := l.guard.rooms[r.ID].wait(now)
		delays = append(delays, d)
		now = now.Add(d)
		if c, _ := guess(); c != gamemsg.RoomWrongPassword {
			t.Fatalf("a guess once the back-off passed: %v", c)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Fatalf("back-offs %v, want %v", delays, want)
	}
	// Never a lock: once the back-off passed, the right password opens it.
	now = now.Add(l.guard.rooms[r.ID].wait(now))
	j := joiner(7)
	good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, uint32(r.ID), j.Binding)
	if _, _, err := l.Join(j, r.ID, good[:], now); err != nil {
		t.Fatalf("the right password after the back-off: %v", err)
	}
	// A missing proof is not a guess: answered WrongPassword, not counted.
	before := l.guard.rooms[r.ID].failures
	if _, out, err := l.Join(joiner(8), r.ID, nil, now.Add(time.Hour)); code(t, err) != gamemsg.RoomWrongPassword || out != (Outcome{}) ||
		l.guard.rooms[r.ID].failures != before {
		t.Fatalf("no proof: %v %+v", err, out)
	}
	// Ten minutes without a wrong proof: the count starts again.
	now = now.Add(PasswordForget)
	for range DefaultPasswordFree {
		if c, _ := guess(); c != gamemsg.RoomWrongPassword {
			t.Fatalf("after %v the back-off was not forgotten: %v", PasswordForget, c)
		}
		if l.guard.rooms[r.ID].wait(now) != 0 {
			t.Fatal("a free guess started a back-off")
		}
	}
}

// TestPasswordChecksPerSecondBounded: any number of clients guessing one
// room every millisecond for ten minutes get at most Free+2 proofs checked
// in any second, and about one per BackoffMax once the back-off is at its
// longest.
func TestPasswordChecksPerSecondBounded(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}})
	r, _ := passwordRoom(t, l)
	var checks []time.Time
	i := 0
	for now := t0; now.Before(t0.Add(10 * time.Minute)); now = now.Add(time.Millisecond) {
		i++
		if _, out, _ := l.Join(joiner(uint32(100+i%1000)), r.ID, wrongProof, now); out.Wrong {
			checks = append(checks, now)
		}
	}
	most := 0
	for i := range checks {
		n := 0
		for j := i; j < len(checks) && checks[j].Sub(checks[i]) <= time.Second; j++ {
			n++
		}
		most = max(most, n)
	}
	if most > DefaultPasswordFree+2 || most > 10 {
		t.Fatalf("%d proofs checked within one second, want at most %d", most, DefaultPasswordFree+2)
	}
	// 5 free, then 1, 2, 4, 8, 16 s, then one per 30 s: 5+1+5+18 = 29 in 600 s.
	if len(checks) > 30 {
		t.Fatalf("%d proofs checked in ten minutes: %v", len(checks), checks)
	}
	t.Logf("one room, a guess every millisecond for 10 min: %d checked, at most %d in one second", len(checks), most)
}

// TestPasswordSourceBackoff: one source spraying wrong proofs over many
// rooms is held back by its own back-off, which leaves other sources alone.
func TestPasswordSourceBackoff(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}, Max: 64, CreatedPerClient: 64})
	var rooms []*Entry
	for range 10 {
		r, _ := passwordRoom(t, l)
		rooms = append(rooms, r)
	}
	eve := joiner(50)
	for i := range DefaultPasswordFree + 1 {
		eve.Client = uint32(1000 + i) // a new session each time: the source counts
		if _, out, _ := l.Join(eve, rooms[i].ID, wrongProof, t0); !out.Wrong {
			t.Fatalf("spray %d not checked: %+v", i, out)
		}
	}
	eve.Client = 2000
	if _, out, err := l.Join(eve, rooms[9].ID, wrongProof, t0); code(t, err) != gamemsg.RoomRateLimited || !out.Refused {
		t.Fatalf("a fresh room from a source in back-off: %v %+v", err, out)
	}
	if _, out, _ := l.Join(joiner(60), rooms[9].ID, wrongProof, t0); !out.Wrong {
		t.Fatalf("another source is held back by eve's back-off: %+v", out)
	}
	// IPv6: one host's /64 is one source.
	a, b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
	if SourceOf(a) != SourceOf(b) || SourceOf(a) == SourceOf(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatalf("IPv6 sources %v %v", SourceOf(a), SourceOf(b))
	}
	if SourceOf(netip.MustParseAddr("::ffff:10.0.0.1")) != SourceOf(netip.MustParseAddr("10.0.0.1")) {
		t.Fatal("a v4-mapped address is another source than its IPv4 address")
	}
}

func TestPasswordSourcesBounded(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}})
	r, _ := passwordRoom(t, l)
	now := t0
	for i := range maxPasswordSources + 500 {
		j := joiner(uint32(100 + i))
		l.Join(j, r.ID, wrongProof, now)
		now = now.Add(time.Hour) // past every back-off
		if len(l.guard.sources) > maxPasswordSources || l.guard.order.Len() != len(l.guard.sources) {
			t.Fatalf("%d sources tracked (list %d)", len(l.guard.sources), l.guard.order.Len())
		}
	}
}

// TestPasswordKick: a client's KickAfter-th wrong or refused proof within
// a minute asks for its kick, once; a departed client is forgotten.
func TestPasswordKick(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}, Passwords: PasswordLimits{KickAfter: 4}})
	r, _ := passwordRoom(t, l)
	eve := joiner(9)
	var kicks []int
	for i := range 8 {
		if _, out, _ := l.Join(eve, r.ID, wrongProof, t0.Add(time.Duration(i)*time.Second)); out.Kick {
			kicks = append(kicks, i+1)
		}
	}
	if fmt.Sprint(kicks) != "[4]" {
		t.Fatalf("kicks at proofs %v, want [4]", kicks)
	}
	// Three a minute never reach four.
	mallory := joiner(10)
	for i := range 12 {
		now := t0.Add(time.Duration(i) * 21 * time.Second)
		if _, out, _ := l.Join(mallory, r.ID, wrongProof, now.Add(time.Hour)); out.Kick {
			t.Fatalf("kicked at proof %d, three a minute", i+1)
		}
	}
	l.Depart(eve.Client, t0)
	if _, ok := l.guard.strikes[eve.Client]; ok {
		t.Fatal("a departed client's strikes are kept")
	}
}

// TestPasswordNotices: the owner is told at once of the first wrong proof,
// then at most every PasswordNoticeEvery with the count since; a closed
// room is forgotten.
func TestPasswordNotices(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}})
	r, _ := passwordRoom(t, l)
	if n := l.PasswordNotices(t0); n != nil {
		t.Fatalf("notices before any guess: %+v", n)
	}
	l.Join(joiner(20), r.ID, wrongProof, t0)
	n := l.PasswordNotices(t0)
	if len(n) != 1 || n[0].Room != r || n[0].Count != 1 || n[0].Guesser != (Joiner{Client: 20, Name: "p20", Source: joiner(20).Source}) {
		t.Fatalf("first notice %+v", n)
	}
	for i := range 12 { // 5 wrong (6 in all: a back-off), then refused
		l.Join(joiner(uint32(21+i)), r.ID, wrongProof, t0.Add(time.Second))
	}
	if n := l.PasswordNotices(t0.Add(5 * time.Second)); n != nil {
		t.Fatalf("a notice within %v of the last: %+v", PasswordNoticeEvery, n)
	}
	n = l.PasswordNotices(t0.Add(PasswordNoticeEvery))
	if len(n) != 1 || n[0].Count != 12 || n[0].Guesser.Client != 32 || n[0].Wait != 0 {
		t.Fatalf("second notice %+v", n)
	}
	if n := l.PasswordNotices(t0.Add(time.Hour)); n != nil {
		t.Fatalf("a notice with nothing new: %+v", n)
	}
	l.Join(joiner(40), r.ID, wrongProof, t0.Add(2*time.Hour))
	if _, err := l.Close(r.ID); err != nil {
		t.Fatal(err)
	}
	if n := l.PasswordNotices(t0.Add(3 * time.Hour)); n != nil || len(l.guard.rooms) != 0 || len(l.guard.due) != 0 {
		t.Fatalf("a closed room's guard is kept: %+v", n)
	}
}
