package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestDrainKeepsHeldSeats: a drain stops new admissions, not a player
// whose connection dropped during the match: ann's path goes dark, her
// seat is held, the drain begins, a new player is refused ServerDraining;
// ann comes back to her seat (same id, in the match) and, once the match
// ends, is let go with the others (MatchEnd, then Disconnect
// ServerDraining) and the server stops.
func TestDrainKeepsHeldSeats(t *testing.T) {
	srv, done := runDraining(t, func(c *config.Config) {
		c.Server.ClientTimeout, c.Server.HeartbeatInterval = 1, 0.2
		c.Network.ResumeSeconds = 20
	})
	relay, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	ann := dialResumable(t, srv, relay, "ann")
	id := ann.ID()
	eventually(t, "a match in progress", func() bool { return srv.Stats().MatchState == gamemsg.MatchInProgress })

	relay.SetDark(true)
	<-ann.Done()
	eventually(t, "ann's seat held", func() bool {
		out, _ := srv.Exec("players")
		return strings.Contains(out, fmt.Sprintf("%d ann ", id)) && strings.Contains(out, "away (seat held")
	})
	if out, err := srv.Exec("drain 60s"); err != nil || !strings.Contains(out, "1 room(s) with 1 player(s)") {
		t.Fatalf("drain: %q %v", out, err)
	}
	relay.SetDark(false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bob", Pin: srv.Pin()}); !refusedDraining(err) {
		t.Errorf("bob while draining: %v, want refused ServerDraining", err)
	}
	nc, err := ann.Resume(ctx)
	if err != nil {
		t.Fatalf("ann resuming her held seat during the drain: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	if nc.ID() != id {
		t.Fatalf("ann resumed as %d, want %d", nc.ID(), id)
	}
	if out, _ := srv.Exec("players"); strings.Contains(out, "away") || !strings.Contains(out, "1 player(s)") {
		t.Fatalf("players after the resumption:\n%s", out)
	}

	if _, err := srv.Exec("endmatch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, nc, gamemsg.TypeMatchEnd)
	select {
	case <-nc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("ann still connected 10 s after the match ended")
	}
	if r, d := nc.CloseReason(); r != wire.DisconnectServerDraining || !strings.Contains(d, "match is over") {
		t.Errorf("ann's close: %v %q, want ServerDraining", r, d)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop after its match ended")
	}
}
