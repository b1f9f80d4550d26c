package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// A player whose connection drops for longer than the timeout and comes
// back within network.resume_seconds keeps its seat, and the module — a
// real Lua script, a real plugin process — is told "resumed", never
// "left" then "admitted": the module answers each event with a "seat"
// message the client reads.
func TestResumedPlayerIsResumedToModules(t *testing.T) {
	for _, tc := range []struct{ name, module string }{
		{"lua", "testdata/seats.lua"},
		{"plugin", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := tc.module
			if mod == "" {
				mod = testplugin.Build(t, "./host/testdata/plugins/seats")
			}
			srv, _ := startHost(t, func(c *config.Config) {
				c.Modules.Load = []string{mod}
				c.Server.ClientTimeout, c.Server.HeartbeatInterval = 1, 0.2
				c.Network.ResumeSeconds = 8
			})
			relay, err := udprelay.New(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(relay.Close)
			c := dialResumable(t, srv, relay, "ann")
			id := c.ID()
			waitSeat(t, c, "admitted ann")

			relay.SetDark(true)
			select {
			case <-c.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the client did not time out")
			}
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				out, _ := srv.Exec("players")
				if strings.Contains(out, fmt.Sprintf("%d ann ", id)) && strings.Contains(out, "away (seat held for a resumption)") {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("players does not show ann away:\n%s", out)
				}
			}
			relay.SetDark(false)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			nc, err := c.Resume(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			if nc.ID() != id {
				t.Fatalf("resumed as %d, want %d", nc.ID(), id)
			}
			waitSeat(t, nc, "resumed ann") // not "admitted ann" again: waitSeat fails on any other line
			if out, _ := srv.Exec("players"); strings.Contains(out, "away") || !strings.Contains(out, "1 player(s)") {
				t.Fatalf("players after the resumption:\n%s", out)
			}
		})
	}
}

func dialResumable(t *testing.T, srv *host.Server, relay *udprelay.Relay, name string) *netstack.Client {
	t.Helper()
	return dialResumableWith(t, srv, relay, name, time.Second)
}

// dialResumableWith is dialResumable with the client's own liveness
// timeout.
func dialResumableWith(t *testing.T, srv *host.Server, relay *udprelay.Relay, name string, timeout time.Duration) *netstack.Client {
	t.Helper()
	reg := gamemsg.NewRegistry()
	reg.Register("seats", wire.Schema{ID: 1400, Name: "seat", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered,
		MinLen: 2, MaxLen: 66, StringFieldOffset: 0, RequiresAdmitted: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: relay.Addr(), Name: name, Pin: srv.Pin(), Registry: reg,
		Welcome: gamemsg.TypeGameStateSync, Resumable: true, Timeout: timeout, HeartbeatInterval: 200 * time.Millisecond,
		ConnectRetry: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for end := time.Now().Add(10 * time.Second); !c.HasResumeTicket(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no resume ticket")
		}
	}
	return c
}

// waitSeat waits for the next "seat" line and checks it is want.
func waitSeat(t *testing.T, c *netstack.Client, want string) {
	t.Helper()
	r := wire.NewReader(waitFor(t, c, 1400).Payload)
	if got := r.Str(); got != want {
		t.Fatalf("the module said %q, want %q", got, want)
	}
}
