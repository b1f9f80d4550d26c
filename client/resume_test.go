package client_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// waitOut waits until the console printed want.
func waitOut(t *testing.T, c *testConsole, want string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !strings.Contains(c.out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %q in:\n%s", want, c.out.String())
		}
	}
}

// The console resumes its seat by itself after an outage longer than its
// timeout, and says so; when the seat is gone it joins as a new player.
func TestConsoleResumesSeat(t *testing.T) {
	srv := newTestServer(t, func(c *netstack.ServerConfig) {
		c.Timeout, c.HeartbeatInterval, c.ResumeHold = time.Second, 200*time.Millisecond, 6*time.Second
	})
	relay, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	c := newConsole(t, client.Config{Pin: srv.Pin(), Timeout: time.Second})
	c.exec(t, "connect "+relay.Addr().String()+" alice")
	id := c.Client().ID()

	relay.SetDark(true)
	waitOut(t, c, "connection lost; trying to resume your seat for up to ")
	relay.SetDark(false)
	waitOut(t, c, "seat resumed as client "+strconv.FormatUint(uint64(id), 10))
	if got := c.Client().ID(); got != id {
		t.Fatalf("the console's client is %d, want %d", got, id)
	}
	c.exec(t, "say back again")

	// The seat goes while the path is dark: refused, the console joins anew.
	relay.SetDark(true)
	for end := time.Now().Add(20 * time.Second); strings.Count(c.out.String(), "connection lost; trying to resume your seat") < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no second outage noticed:\n%s", c.out.String())
		}
	}
	for end := time.Now().Add(10 * time.Second); srv.HeldSeats() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the seat was not held")
		}
	}
	if err := srv.Kick(id, wire.DisconnectKicked, "gone"); err != nil {
		t.Fatal(err)
	}
	relay.SetDark(false)
	waitOut(t, c, "could not resume your seat: ResumeExpired (your seat is no longer held; connect again); joining again as a new player")
	waitOut(t, c, "connected to "+relay.Addr().String()+" as alice (id ")
	if strings.Contains(c.out.String(), "seat resumed as client "+strconv.FormatUint(uint64(id), 10)+"\n") && c.Client() != nil && c.Client().ID() == id {
		t.Fatal("resumed a kicked seat")
	}
}
