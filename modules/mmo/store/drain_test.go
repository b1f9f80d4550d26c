package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// TestDrainCoversTheArea: a draining server's area is covered by the first
// candidate held by a live server; it is no handoff destination any more,
// even after it renews its lease; its restart (StartServer) ends the
// cover and makes it the destination again. Undrain does the same without
// a restart; with no candidate up, Drain says ErrAreaUnavailable.
func TestDrainCoversTheArea(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		a := areaServer(t, where, "srv-a", "west", 10*time.Second)
		b := areaServer(t, where, "srv-b", "east", 10*time.Second)
		if _, err := a.Drain(ctx, "srv-a", "west", []string{"north"}); !errors.Is(err, store.ErrAreaUnavailable) {
			t.Fatalf("Drain with no candidate up: %v", err)
		}
		cover, err := a.Drain(ctx, "srv-a", "west", []string{"north", "east"})
		if err != nil || cover != "east" {
			t.Fatalf("Drain: %q %v, want east", cover, err)
		}
		must(t, a.RenewLease(ctx, "srv-a", 10*time.Second))
		if got, err := b.Covers(ctx, "srv-b"); err != nil || !slices.Equal(got, []string{"west"}) {
			t.Fatalf("east covers %q %v, want [west]", got, err)
		}
		// A handoff from east into west finds no server for west: the
		// draining one is none.
		mustAccount(t, b, "bob")
		mustCharacter(t, b, "bob", "Rover")
		l, err := b.ClaimLogin(ctx, "srv-b", "bob")
		must(t, err)
		_, err = b.ClaimCharacter(ctx, "srv-b", "bob", l.Token, "Rover")
		must(t, err)
		h := store.Handoff{Server: "srv-b", Account: "bob", Token: l.Token, Position: store.Position{Name: "Rover", X: 400, Y: 500},
			Area: "west", Ticket: ticketID(7), Lifetime: 30 * time.Second}
		if _, err := b.HandOff(ctx, h); !errors.Is(err, store.ErrAreaUnavailable) {
			t.Fatalf("a handoff to the draining area: %v, want ErrAreaUnavailable", err)
		}

		// West restarts: a fresh store (a new process) starts its lease.
		opt := fixedNow
		opt.Area = "west"
		a2, err := openAt(t, where, opt)
		must(t, err)
		defer a2.Close()
		must(t, a2.StartServer(ctx, "srv-a", 10*time.Second))
		if got, _ := b.Covers(ctx, "srv-b"); len(got) != 0 {
			t.Fatalf("east still covers %q after west restarted", got)
		}
		if out, err := b.HandOff(ctx, h); err != nil || out.Dest != "srv-a" {
			t.Fatalf("a handoff to west after its restart: %+v %v", out, err)
		}

		// Undrain: the cover ends without a restart.
		if _, err := a2.Drain(ctx, "srv-a", "west", []string{"east"}); err != nil {
			t.Fatal(err)
		}
		must(t, a2.Undrain(ctx, "srv-a"))
		must(t, a2.RenewLease(ctx, "srv-a", 10*time.Second))
		if got, _ := b.Covers(ctx, "srv-b"); len(got) != 0 {
			t.Fatalf("east covers %q after the drain was called off", got)
		}
	})
}
