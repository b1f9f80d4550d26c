package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// shortDataDir returns a data directory whose admin socket path fits the
// ~108-byte limit of Unix socket names (t.TempDir() paths can be longer).
func shortDataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "data")
}

// startHost runs a DedicatedServer on 127.0.0.1 with an ephemeral port.
func startHost(t testing.TB, mod func(*config.Config), extra ...supervisor.Spec) (*host.Server, string) {
	t.Helper()
	return startHostIn(t, "", mod, extra...)
}

// startHostIn is startHost with a scripts directory for module names.
func startHostIn(t testing.TB, scripts string, mod func(*config.Config), extra ...supervisor.Spec) (*host.Server, string) {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Match.WarmupSeconds = 0
	cfg.Match.IntermissionSeconds = 0
	if mod != nil {
		mod(&cfg)
	}
	srv, err := host.New(host.Options{Config: cfg, Logger: testLogger(), Modules: extra, ScriptsDir: scripts})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	return srv, dataDir
}

func dialHost(t *testing.T, srv *host.Server, name string) *netstack.Client {
	t.Helper()
	return dialAs(t, srv, name, nil)
}

// waitFor returns the first message of type typ.
func waitFor(t *testing.T, c *netstack.Client, typ wire.MessageType) netstack.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %v: %v", typ, err)
		}
		if m.Header.Type == typ {
			return m
		}
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestAdminCommandsOverSocket(t *testing.T) {
	srv, dataDir := startHost(t, nil)
	sock := filepath.Join(dataDir, admin.SocketName)
	alice := dialHost(t, srv, "alice")
	dialHost(t, srv, "bob")
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })

	out, err := admin.Call(sock, "players", 5*time.Second)
	if err != nil || !strings.Contains(out, "alice") || !strings.Contains(out, "bob") {
		t.Fatalf("players = %q, %v", out, err)
	}
	out, err = admin.Call(sock, "status", 5*time.Second)
	if err != nil || !strings.Contains(out, "players 2/32") {
		t.Fatalf("status = %q, %v", out, err)
	}
	if _, err := admin.Call(sock, "say hello everyone", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	m := waitFor(t, alice, gamemsg.TypeChatMessage)
	if msg, _ := gamemsg.ParseChatMessage(m.Payload); msg.Sender != "server" || msg.Text != "hello everyone" {
		t.Errorf("say delivered %+v", msg)
	}
	if _, err := admin.Call(sock, "kick alice too noisy", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-alice.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("alice not disconnected by kick")
	}
	if r, d := alice.CloseReason(); r != wire.DisconnectKicked || d != "too noisy" {
		t.Errorf("alice closed with %v %q", r, d)
	}
	if _, err := admin.Call(sock, "kick nobody", 5*time.Second); err == nil || !strings.Contains(err.Error(), `no player "nobody"`) {
		t.Errorf("kick nobody: %v", err)
	}
	if _, err := admin.Call(sock, "frobnicate", 5*time.Second); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
}

func TestMapCommandsAndMatchAnnouncements(t *testing.T) {
	srv, _ := startHost(t, func(c *config.Config) {
		c.Match.MapRotation = []string{"arena", "warehouse", "courtyard"}
		c.Match.ScoreLimit = 0
	})
	c := dialHost(t, srv, "alice")
	start := waitFor(t, c, gamemsg.TypeMatchStart)
	if ms, _ := gamemsg.ParseMatchStart(start.Payload); ms.Map != "arena" || ms.Round != 1 {
		t.Errorf("first MatchStart %+v", ms)
	}
	if out, err := srv.Exec("map courtyard"); err != nil {
		t.Fatalf("map: %v (%s)", err, out)
	}
	eventually(t, "map courtyard", func() bool { return srv.Stats().Map == "courtyard" })
	if _, err := srv.Exec("map nowhere"); err == nil || !strings.Contains(err.Error(), "arena") {
		t.Errorf("map nowhere: %v (the error should list the rotation)", err)
	}
	if _, err := srv.Exec("nextmap"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rotation wraps to arena", func() bool { return srv.Stats().Map == "arena" })
	if _, err := srv.Exec("endmatch"); err != nil {
		t.Fatal(err)
	}
	end := waitFor(t, c, gamemsg.TypeMatchEnd)
	if me, _ := gamemsg.ParseMatchEnd(end.Payload); me.Reason != gamemsg.MatchEndAdmin {
		t.Errorf("MatchEnd %+v", me)
	}
}

// TestNameBanSparesTheAddress: `ban NAME` bans that name, not everyone
// behind the player's address; the name is refused again at admission.
func TestNameBanSparesTheAddress(t *testing.T) {
	srv, dataDir := startHost(t, nil)
	c := dialHost(t, srv, "mallory")
	alice := dialHost(t, srv, "alice") // the same address (127.0.0.1)
	eventually(t, "players admitted", func() bool { return srv.Stats().Players == 2 })
	if out, err := srv.Exec("ban mallory cheating"); err != nil || !strings.Contains(out, "banned the name mallory") {
		t.Fatalf("ban: %q %v", out, err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("banned player still connected")
	}
	if r, _ := c.CloseReason(); r != wire.DisconnectBanned {
		t.Errorf("close reason %v, want Banned", r)
	}
	select {
	case <-alice.Done():
		t.Fatal("another player behind the same address was disconnected")
	default:
	}
	again := dialHost(t, srv, "MALLORY") // admitted, then refused: names match in any case
	select {
	case <-again.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the banned name was let in again")
	}
	if r, _ := again.CloseReason(); r != wire.DisconnectBanned {
		t.Errorf("close reason %v, want Banned", r)
	}
	dialHost(t, srv, "carol") // the address is open
	eventually(t, "carol and alice in, mallory out", func() bool { return srv.Stats().Players == 2 })
	out, _ := srv.Exec("bans")
	if !strings.Contains(out, "name mallory cheating") {
		t.Errorf("bans: %q", out)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "bans.json"))
	if err != nil || !strings.Contains(string(raw), `"name": "mallory"`) {
		t.Errorf("name ban not persisted: %v\n%s", err, raw)
	}
	if out, err := srv.Exec("unban Mallory"); err != nil || out != "unbanned Mallory" {
		t.Errorf("unban: %q %v", out, err)
	}
}

func TestBanPersistsAndRefusesConnect(t *testing.T) {
	srv, dataDir := startHost(t, nil)
	c := dialHost(t, srv, "mallory")
	eventually(t, "player admitted", func() bool { return srv.Stats().Players == 1 })
	if _, err := srv.Exec("banaddr mallory cheating"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("banned player still connected")
	}
	if r, _ := c.CloseReason(); r != wire.DisconnectBanned {
		t.Errorf("close reason %v, want Banned", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "mallory2", Pin: srv.Pin()})
	var he *netstack.HandshakeError
	if !asHandshake(err, &he) || he.Reason != wire.RejectBanned {
		t.Fatalf("reconnect after ban: %v, want ConnectRejected Banned", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "bans.json")); err != nil {
		t.Errorf("ban not persisted: %v", err)
	}
}
