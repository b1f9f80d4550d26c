package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// areaServer opens the database as the server of area, with its lease.
func areaServer(t *testing.T, where, id, area string, lease time.Duration) *store.Store {
	t.Helper()
	opt := fixedNow
	opt.Area = area
	s, err := openAt(t, where, opt)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	must(t, s.StartServer(ctx, id, lease))
	return s
}

func ticketID(b byte) (id [store.TicketIDLen]byte) {
	for i := range id {
		id[i] = b
	}
	return id
}

// playing logs alice in on srv-a and claims Hero there.
func playing(t *testing.T, a *store.Store) store.Login {
	t.Helper()
	mustAccount(t, a, "alice")
	mustCharacter(t, a, "alice", "Hero")
	l, err := a.ClaimLogin(ctx, "srv-a", "alice")
	must(t, err)
	_, err = a.ClaimCharacter(ctx, "srv-a", "alice", l.Token, "Hero")
	must(t, err)
	return l
}

func handoff(l store.Login, x float64, id byte) store.Handoff {
	return store.Handoff{Server: "srv-a", Account: "alice", Token: l.Token, Position: store.Position{Name: "Hero", X: x, Y: 500},
		Area: "east", Ticket: ticketID(id), Lifetime: 30 * time.Second}
}

func admission(expires time.Time, id byte) store.Admission {
	return store.Admission{Server: "srv-b", Ticket: ticketID(id), Account: "alice", Character: "Hero", Expires: expires, MaxLifetime: time.Minute}
}

// TestHandOffAndAdmit: the handoff transaction saves the position, moves
// the claim to the destination in transit and ends the source's login; the
// ticket then admits the character on the destination once, with a login.
func TestHandOffAndAdmit(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		a := areaServer(t, where, "srv-a", "west", 10*time.Second)
		b := areaServer(t, where, "srv-b", "east", 10*time.Second)
		l := playing(t, a)

		if _, err := a.HandOff(ctx, store.Handoff{Server: "srv-a", Account: "alice", Token: l.Token + 99, Position: store.Position{Name: "Hero", X: 501, Y: 500},
			Area: "east", Ticket: ticketID(1), Lifetime: 30 * time.Second}); !errors.Is(err, store.ErrClaimLost) {
			t.Fatalf("handoff with a token not held: %v", err)
		}
		h := handoff(l, 501, 1)
		h.Area = "north"
		if _, err := a.HandOff(ctx, h); !errors.Is(err, store.ErrAreaUnavailable) {
			t.Fatalf("handoff to an area nobody holds: %v", err)
		}
		began := time.Now()
		out, err := a.HandOff(ctx, handoff(l, 501, 1))
		must(t, err)
		if out.Dest != "srv-b" || out.Expires.Before(began.Add(28*time.Second)) || out.Expires.After(time.Now().Add(31*time.Second)) {
			t.Fatalf("handed off %+v", out)
		}
		if c, _ := a.Character(ctx, "Hero"); c.X != 501 {
			t.Fatalf("position not committed: %+v", c)
		}
		if srv, transit, _, _ := a.Transit(ctx, "Hero"); srv != "srv-b" || !transit {
			t.Fatalf("claim after handoff: %q in transit %v", srv, transit)
		}
		if held, _ := a.ServerLogins(ctx, "srv-a"); len(held) != 0 {
			t.Fatalf("the source still holds logins %v", held)
		}
		// A second handoff of the same claim is refused: the source lost it.
		if _, err := a.HandOff(ctx, handoff(l, 502, 2)); !errors.Is(err, store.ErrClaimLost) {
			t.Fatalf("second handoff: %v", err)
		}
		// Nobody else may enter it while in transit.
		mustAccount(t, a, "carol")
		must(t, a.StartServer(ctx, "srv-c", 10*time.Second))
		la, _ := a.ClaimLogin(ctx, "srv-c", "alice")
		if _, err := a.ClaimCharacter(ctx, "srv-c", "alice", la.Token, "Hero"); !errors.Is(err, store.ErrCharacterBusy) {
			t.Fatalf("claim of a character in transit: %v", err)
		}

		c, lb, err := b.AdmitTicket(ctx, admission(out.Expires, 1))
		must(t, err)
		if c.Name != "Hero" || c.X != 501 || lb.Server != "srv-b" || lb.Token <= la.Token || lb.Previous != "srv-c" {
			t.Fatalf("admitted %+v with %+v", c, lb)
		}
		if srv, transit, _, _ := b.Transit(ctx, "Hero"); srv != "srv-b" || transit {
			t.Fatalf("claim after admission: %q in transit %v", srv, transit)
		}
		if _, _, err := b.AdmitTicket(ctx, admission(out.Expires, 1)); !errors.Is(err, store.ErrTicketReplayed) {
			t.Fatalf("replayed ticket: %v", err)
		}
		// The destination plays it now: fenced writes are its.
		if n, err := b.SaveClaimed(ctx, "srv-b", []store.Position{{Name: "Hero", X: 600, Y: 500}}); err != nil || n != 1 {
			t.Fatalf("save by the destination: %d %v", n, err)
		}
		if n, _ := a.SaveClaimed(ctx, "srv-a", []store.Position{{Name: "Hero", X: 1, Y: 1}}); n != 0 {
			t.Fatal("the source still writes the character")
		}
	})
}

// TestTicketRefusalsInTheDatabase: expired (by the database's clock),
// implausibly far expiry, a character in the world on another live server,
// a character of another account; none of them burns the ticket.
func TestTicketRefusalsInTheDatabase(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		a := areaServer(t, where, "srv-a", "west", 10*time.Second)
		b := areaServer(t, where, "srv-b", "east", 10*time.Second)
		playing(t, a)
		now := time.Now()
		if _, _, err := b.AdmitTicket(ctx, admission(now.Add(-time.Second), 5)); !errors.Is(err, store.ErrTicketExpired) {
			t.Fatalf("expired: %v", err)
		}
		if _, _, err := b.AdmitTicket(ctx, admission(now.Add(time.Hour), 5)); !errors.Is(err, store.ErrTicketExpired) {
			t.Fatalf("expiring in an hour: %v", err)
		}
		// Hero is played on srv-a, not in transit: another area may not
		// take it with a ticket, however valid.
		var busy *store.BusyError
		if _, _, err := b.AdmitTicket(ctx, admission(now.Add(20*time.Second), 5)); !errors.As(err, &busy) || busy.Server != "srv-a" {
			t.Fatalf("character elsewhere: %v", err)
		}
		mustAccount(t, a, "bob")
		ad := admission(now.Add(20*time.Second), 5)
		ad.Account = "bob"
		if _, _, err := b.AdmitTicket(ctx, ad); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("another account's character: %v", err)
		}
		// None of the refusals recorded ticket 5: once the character is
		// free, it admits.
		must(t, a.StopServer(ctx, "srv-a"))
		if _, _, err := b.AdmitTicket(ctx, admission(now.Add(20*time.Second), 5)); err != nil {
			t.Fatalf("after the refusals: %v", err)
		}
		if n, err := b.PurgeTickets(ctx, 0); err != nil || n != 0 {
			t.Fatalf("purged %d live tickets: %v", n, err)
		}
	})
}

// TestTransitExpires: a client that never presents its ticket leaves the
// character in transit only until the ticket's expiry; then any server
// may claim it, and the late ticket is refused as expired.
func TestTransitExpires(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		a := areaServer(t, where, "srv-a", "west", 10*time.Second)
		areaServer(t, where, "srv-b", "east", 10*time.Second)
		l := playing(t, a)
		h := handoff(l, 501, 7)
		h.Lifetime = time.Second
		out, err := a.HandOff(ctx, h)
		must(t, err)
		la, err := a.ClaimLogin(ctx, "srv-a", "alice")
		must(t, err)
		if _, err := a.ClaimCharacter(ctx, "srv-a", "alice", la.Token, "Hero"); !errors.Is(err, store.ErrCharacterBusy) {
			t.Fatalf("claim during transit: %v", err)
		}
		time.Sleep(time.Until(out.Expires) + 50*time.Millisecond)
		c, err := a.ClaimCharacter(ctx, "srv-a", "alice", la.Token, "Hero")
		must(t, err)
		if c.X != 501 {
			t.Fatalf("the committed crossing position is lost: %+v", c)
		}
	})
}

// TestWorldKeyRecorded: the first server records the world's public key;
// a server with another key is refused.
func TestWorldKeyRecorded(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		k1, k2 := make([]byte, 32), make([]byte, 32)
		k2[0] = 1
		must(t, s.RegisterWorldKey(ctx, k1))
		must(t, s.RegisterWorldKey(ctx, k1))
		if err := s.RegisterWorldKey(ctx, k2); !errors.Is(err, store.ErrWorldKeyMismatch) {
			t.Fatalf("another key: %v", err)
		}
	})
}

// TestTicketAdmittedOnce: many servers presenting one ticket at once: one
// admission, every other refused as replayed.
func TestTicketAdmittedOnce(t *testing.T) {
	where := backends[1].fresh(t)
	a := areaServer(t, where, "srv-a", "west", 10*time.Second)
	areaServer(t, where, "srv-b", "east", 10*time.Second)
	l := playing(t, a)
	out, err := a.HandOff(ctx, handoff(l, 501, 9))
	must(t, err)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = a.AdmitTicket(ctx, admission(out.Expires, 9))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrTicketReplayed):
			t.Errorf("concurrent admission: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d admissions of one ticket", ok)
	}
}
