package host_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Registries for clients of the test plugins.
func greeterRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	reg.Register("greeter", wire.Schema{ID: 1000, Name: "Shout", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 3, MaxLen: 202, RequiresAdmitted: true})
	reg.Register("greeter", wire.Schema{ID: 1001, Name: "Shouted", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 302, RequiresAdmitted: true})
	return reg
}

func faultyRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	reg.Register("faulty", wire.Schema{ID: 1100, Name: "Ctl", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, RequiresAdmitted: true})
	reg.Register("faulty", wire.Schema{ID: 1101, Name: "Echo", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, RequiresAdmitted: true})
	for _, s := range []wire.Schema{benchReq, benchRep} {
		reg.Register("echo2", s)
	}
	return reg
}

func sendStr(t *testing.T, c *netstack.Client, typ wire.MessageType, s string) {
	t.Helper()
	w := wire.NewWriter(nil)
	w.Str(s)
	if err := c.Send(typ, wire.Reliable, w.Bytes()); err != nil {
		t.Fatalf("send %d %q: %v", typ, s, err)
	}
}

// waitStr waits for a message of typ whose string is want.
func waitStr(t *testing.T, c *netstack.Client, typ wire.MessageType, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen []string
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %d %q (saw %q): %v", typ, want, seen, err)
		}
		if m.Header.Type != typ {
			continue
		}
		r := wire.NewReader(m.Payload)
		got := r.Str()
		if got == want {
			return
		}
		seen = append(seen, got)
	}
}

// TestPluginEndToEnd: the example plugin, built from examples/greeter, runs
// under the server; real UDP clients exchange its messages; its console
// command answers.
func TestPluginEndToEnd(t *testing.T) {
	path := testplugin.Build(t, "./examples/greeter")
	srv, _ := startHost(t, withModules(path))
	alice := dialAs(t, srv, "alice", greeterRegistry())
	waitStr(t, alice, 1001, "welcome alice, 1 here")
	bob := dialAs(t, srv, "bob", greeterRegistry())
	waitStr(t, bob, 1001, "welcome bob, 2 here")
	sendStr(t, bob, 1000, "hello from bob")
	waitStr(t, alice, 1001, "bob: hello from bob")
	waitStr(t, bob, 1001, "bob: hello from bob")
	eventually(t, "greeter_stats", func() bool {
		out, err := srv.Exec("greeter_stats")
		return err == nil && out == "shouts 1, players 2"
	})
	out, err := srv.Exec("module info greeter")
	if err != nil || !strings.Contains(out, "kind plugin") || !strings.Contains(out, "version 1.0.0") || !strings.Contains(out, "message types 2\n  1000 Shout c2s reliable untyped 3..202 bytes\n  1001 Shouted s2c reliable untyped 2..302 bytes\n") ||
		!regexp.MustCompile(`\nprocess [1-9][0-9]*\n`).MatchString(out) {
		t.Fatalf("module info: %q %v", out, err)
	}
}

// TestPluginCrashIsolation: a plugin that panics on a message, one that
// calls os.Exit and one that sleeps past its hang timeout. Each time the
// server keeps ticking, an in-process module keeps answering, both players
// stay connected, the plugin comes back after its backoff, is told who is
// there, and `module info` shows what happened.
func TestPluginCrashIsolation(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/faulty")
	srv, _ := startHost(t, func(c *config.Config) {
		c.Modules.Load = []string{path}
		c.Modules.PluginHangTimeout = 2
		c.Modules.RestartBackoff = 0.2
	}, goEcho())
	alice := dialAs(t, srv, "alice", faultyRegistry())
	bob := dialAs(t, srv, "bob", faultyRegistry())
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	sendStr(t, alice, 1100, "echo ready")
	waitStr(t, alice, 1101, "ready")

	for i, tc := range []struct{ ctl, reason string }{
		{"panic", "panic: boom on request from alice"},
		{"exit", "exit status 3"},
		{"sleep", "did not answer for 2s and was killed as hung"},
	} {
		ticks := srv.Stats().Ticks
		sendStr(t, alice, 1100, tc.ctl)
		eventually(t, tc.ctl+" crash in module info", func() bool {
			out, _ := srv.Exec("module info faulty")
			return strings.Count(out, "crashed") > i && strings.Contains(out, tc.reason)
		})
		// The other module answers while this one is down or restarting.
		echoOnce(t, bob, uint32(i))
		eventually(t, tc.ctl+": restarted", func() bool {
			out, _ := srv.Exec("module list")
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "faulty ") && strings.Contains(line, " running ") {
					return true
				}
			}
			return false
		})
		if srv.Stats().Ticks <= ticks {
			t.Fatalf("%s: the server stopped ticking", tc.ctl)
		}
		if got := srv.Stats().Players; got != 2 {
			t.Fatalf("%s: %d players connected, want 2", tc.ctl, got)
		}
		out, err := srv.Exec("faulty_clients")
		if err != nil || out != "alice bob" {
			t.Fatalf("%s: after restart the module knows %q (%v), want alice bob", tc.ctl, out, err)
		}
		sendStr(t, bob, 1100, "echo back "+tc.ctl)
		waitStr(t, bob, 1101, "back "+tc.ctl)
	}
	out, _ := srv.Exec("module info faulty")
	if strings.Count(out, "restarted") < 3 {
		t.Fatalf("module info after three crashes:\n%s", out)
	}
	for _, c := range []*netstack.Client{alice, bob} {
		select {
		case <-c.Done():
			r, d := c.CloseReason()
			t.Fatalf("a player was disconnected: %v %s", r, d)
		default:
		}
	}
}

// echoOnce round-trips one message through the in-process echo2 module.
func echoOnce(t *testing.T, c *netstack.Client, n uint32) {
	t.Helper()
	p := []byte{byte(n), 0, 0, 0, 7, 0, 0, 0}
	if err := c.Send(benchReq.ID, wire.Reliable, p); err != nil {
		t.Fatal(err)
	}
	m := waitFor(t, c, benchRep.ID)
	if string(m.Payload) != string(p) {
		t.Fatalf("echo2 answered %x, want %x", m.Payload, p)
	}
}

// TestPluginLoadErrors: the documented one-line errors. A module that
// does not start is listed failed, with the line, and the server runs
// without it; one that is not a module at all stops start-up.
func TestPluginLoadErrors(t *testing.T) {
	v2 := testplugin.Build(t, "./examples/greeter", "-X github.com/sparkhost/sparkhost/internal/pluginwire.protocolVersion=2")
	good := testplugin.Build(t, "./examples/greeter")
	for _, tc := range []struct {
		name    string
		mod     func(*config.Config)
		want    string
		refused bool // start-up stops
	}{
		{"version", withModules(v2), "module " + v2 + " failed to load: the plugin speaks sparkhost plugin protocol 2, this server speaks 1: rebuild the plugin against the github.com/sparkhost/sparkhost/plugin SDK of this server's release", false},
		{"checksum", func(c *config.Config) {
			c.Modules.Load = []string{good}
			c.Modules.SHA256 = map[string]string{good: strings.Repeat("ab", 32)}
		}, "module " + good + " failed to load: checksum mismatch: config expects sha256 " + strings.Repeat("ab", 32) + ", the file has ", false},
		{"not executable", withModules("../README.md"), "module ../README.md: not a .lua script nor an executable Go plugin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			port, dataDir := 0, shortDataDir(t)
			cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
			tc.mod(&cfg)
			srv, err := host.New(host.Options{Config: cfg, Logger: testLogger()})
			if tc.refused {
				if err == nil {
					srv.Net().Close()
					t.Fatal("server started")
				}
				if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("got  %v\nwant %s…", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("start-up stopped: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			defer srv.Run(ctx)
			p := srv.StartProblems()
			if len(p) != 1 || !strings.HasPrefix(p[0], tc.want) || !strings.HasSuffix(p[0], "fix it, then module load "+cfg.Modules.Load[0]) {
				t.Fatalf("got  %q\nwant %s…", p, tc.want)
			}
			if mods := srv.Modules().Modules(); len(mods) != 1 || mods[0].State != "failed" {
				t.Fatalf("modules: %+v", mods)
			}
		})
	}
}
