package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// runDraining builds and runs a server whose Run the test watches: the
// returned channel gets Run's result when the server stops by itself.
func runDraining(t *testing.T, mod func(*config.Config)) (*host.Server, <-chan error) {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Match.WarmupSeconds, cfg.Match.IntermissionSeconds = 0, 0
	mod(&cfg)
	srv, err := host.New(host.Options{Config: cfg, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, stopped := make(chan error, 1), make(chan struct{})
	go func() { done <- srv.Run(ctx); close(stopped) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop within 10 s")
		}
	})
	return srv, done
}

// refusedDraining reports whether err is a Dial refused ServerDraining:
// at the hello, or — where a held seat may come back, so the hello is let
// on — at admission (docs/protocol.md §3.14).
func refusedDraining(err error) bool {
	var he *netstack.HandshakeError
	return asHandshake(err, &he) && he.Draining()
}

// TestDrainLetsTheMatchEnd: `drain` while a deathmatch is in progress:
// nobody new is admitted (ConnectRejected ServerDraining), /readyz turns
// not ready, Agones gets the draining label, the status says what the
// drain waits for, modules learn it; the match runs on — alice stays —
// until it ends; then alice gets MatchEnd and a Disconnect(ServerDraining),
// Agones is asked to shut down and Run returns nil.
func TestDrainLetsTheMatchEnd(t *testing.T) {
	sc := newAgonesSidecar(t)
	lanPort := freeUDPPort(t)
	srv, done := runDraining(t, func(c *config.Config) {
		withOps(c)
		c.LAN.Enabled, c.LAN.Port = true, lanPort
		c.Agones.Enabled, c.Agones.SDKPort, c.Agones.HealthSeconds = true, sc.port(), 0.1
	})
	alice := dialHost(t, srv, "alice")
	eventually(t, "a match in progress", func() bool { return srv.Stats().MatchState == gamemsg.MatchInProgress })
	readyz := opsURL(t, srv, "/readyz")
	eventually(t, "ready", func() bool { code, _ := get(t, readyz); return code == http.StatusOK })

	out, err := srv.Exec("drain 60s")
	if err != nil || !strings.Contains(out, "draining: new players are refused") || !strings.Contains(out, "1 room(s) with 1 player(s)") {
		t.Fatalf("drain: %q %v", out, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bob", Pin: srv.Pin()}); !refusedDraining(err) {
		t.Errorf("bob while draining: %v, want ConnectRejected ServerDraining", err)
	}
	code, body := get(t, readyz)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	if _, body := get(t, opsURL(t, srv, "/status")); !strings.Contains(body, `"draining":true`) || !strings.Contains(body, `"drain_deadline":"`) {
		t.Errorf("/status while draining: %s", body)
	}
	lan, err := discovery.Query(ctx, []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(lanPort))}, 300*time.Millisecond)
	if err != nil || len(lan) != 1 || !strings.HasSuffix(lan[0].Info.Name, " (draining)") || lan[0].Info.Players != lan[0].Info.MaxPlayers {
		t.Errorf("LAN discovery while draining: %+v %v", lan, err)
	}
	if st, _ := srv.Exec("status"); !strings.Contains(st, "waiting for room 1 (arena, 1 players, InProgress)") {
		t.Errorf("status while draining:\n%s", st)
	}
	eventually(t, "the draining label", func() bool {
		return slices.Contains(sc.snapshot(), `PUT /metadata/label {"key":"draining","value":"true"}`)
	})
	time.Sleep(300 * time.Millisecond) // several ticks: the match runs on
	select {
	case <-alice.Done():
		t.Fatal("alice was let go while her match was in progress")
	case err := <-done:
		t.Fatalf("the server stopped while a match was in progress: %v", err)
	default:
	}

	if _, err := srv.Exec("endmatch"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, alice, gamemsg.TypeMatchEnd)
	select {
	case <-alice.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("alice still connected 10 s after the match ended")
	}
	if r, d := alice.CloseReason(); r != wire.DisconnectServerDraining || !strings.Contains(d, "match is over") {
		t.Errorf("alice's close: %v %q, want ServerDraining", r, d)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop after its last match ended")
	}
	eventually(t, "Shutdown", func() bool { return sc.count("POST /shutdown") == 1 })
}

// drainWatch is a Lua module that records what spark.on_drain and
// spark.server() say.
const drainWatch = `spark.module{name = "drainwatch", version = "1"}
local seen = "none"
spark.on_drain(function(draining, seconds)
  seen = tostring(draining) .. " " .. string.format("%.0f", seconds)
end)
spark.command("drain_seen", "", "what on_drain saw", function()
  local s = spark.server()
  return seen .. " / server.draining " .. tostring(s.draining) .. " " .. string.format("%.0f", s.drain_seconds or -1)
end)
`

// TestDrainDeadlineAndCancel: a Lua module learns the drain (on_drain and
// spark.server().draining); `drain cancel` admits again; a drain whose
// match does not end in time lets its players go at the deadline with
// Disconnect(ServerDraining) and stops.
func TestDrainDeadlineAndCancel(t *testing.T) {
	script := filepath.Join(t.TempDir(), "drainwatch.lua")
	if err := os.WriteFile(script, []byte(drainWatch), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, done := runDraining(t, func(c *config.Config) { c.Modules.Load = []string{script} })
	alice := dialHost(t, srv, "alice")
	eventually(t, "a match in progress", func() bool { return srv.Stats().MatchState == gamemsg.MatchInProgress })

	if _, err := srv.Exec("drain 30s"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the module to see the drain", func() bool {
		out, _ := srv.Exec("drain_seen")
		return strings.HasPrefix(out, "true 30 / server.draining true 3")
	})
	if out, err := srv.Exec("drain cancel"); err != nil || !strings.Contains(out, "admitting players again") {
		t.Fatalf("drain cancel: %q %v", out, err)
	}
	eventually(t, "the module to see the cancel", func() bool {
		out, _ := srv.Exec("drain_seen")
		return out == "false 0 / server.draining false -1"
	})
	dialHost(t, srv, "bob") // admitted again

	began := time.Now()
	if _, err := srv.Exec("drain 1s"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not stop at its drain deadline")
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("stopped %v after a drain of 1 s whose match was in progress", took)
	}
	<-alice.Done()
	if r, d := alice.CloseReason(); r != wire.DisconnectServerDraining || !strings.Contains(d, "restarting now") {
		t.Errorf("alice's close: %v %q, want ServerDraining at the deadline", r, d)
	}
}

// TestDrainLobby: on a server with a lobby, a drain lets go at once the
// players in the lobby and in a room that is not playing, keeps the room
// whose match is in progress until its match ends, then stops.
func TestDrainLobby(t *testing.T) {
	srv := startLobby(t, []string{"entities"}, nil, nil)
	alice, bob, carol := newRoomClient(t, srv, "alice"), newRoomClient(t, srv, "bob"), newRoomClient(t, srv, "carol")
	playing := alice.ok(gamemsg.TypeRoomCreate, create("playing", "entities", 0))
	alice.ok(gamemsg.TypeRoomStart, nil)
	bob.ok(gamemsg.TypeRoomCreate, create("waiting", "entities", 0))
	eventually(t, "a match in progress in alice's room", func() bool {
		st, _ := srv.Exec(fmt.Sprintf("room info %d", playing))
		return strings.Contains(st, " playing owner")
	})

	out, err := srv.Exec("drain 60s")
	if err != nil || !strings.Contains(out, "1 room(s) with 1 player(s)") {
		t.Fatalf("drain: %q %v", out, err)
	}
	for _, rc := range []*roomClient{bob, carol} {
		select {
		case <-rc.c.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s (not in a match in progress) was not let go", rc.name)
		}
		if r, _ := rc.c.CloseReason(); r != wire.DisconnectServerDraining {
			t.Errorf("%s's close: %v, want ServerDraining", rc.name, r)
		}
	}
	select {
	case <-alice.c.Done():
		t.Fatal("alice was let go while her match was in progress")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := srv.Exec(fmt.Sprintf("endmatch @%d", playing)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-alice.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("alice still connected after her match ended")
	}
	if r, _ := alice.c.CloseReason(); r != wire.DisconnectServerDraining {
		t.Errorf("alice's close: %v, want ServerDraining", r)
	}
}
