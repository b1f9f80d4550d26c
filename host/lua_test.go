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
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// luaRegistry gives a client the schemas of a Lua module's messages.
func luaRegistry(t *testing.T, schemas ...wire.Schema) *wire.Registry {
	t.Helper()
	reg := gamemsg.NewRegistry()
	for _, s := range schemas {
		s.StringFieldOffset, s.RequiresAdmitted = wire.NoStringFields, true
		if s.Name == "" {
			s.Name = s.ID.String()
		}
		if err := reg.Register("client", s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func withModules(mods ...string) func(*config.Config) {
	return func(c *config.Config) { c.Modules.Load = mods }
}

func recv(t *testing.T, c *netstack.Client, typ wire.MessageType) []byte {
	t.Helper()
	return waitFor(t, c, typ).Payload
}

func TestLuaHelloOverUDP(t *testing.T) {
	srv, _ := startHost(t, withModules("../scripts/hello.lua"))
	greet := wire.Schema{ID: 1000, Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 34}
	reply := wire.Schema{ID: 1001, Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 130}
	c := dialReg(t, srv, luaRegistry(t, greet, reply))
	w := wire.NewWriter(nil)
	w.Str("alice")
	if err := c.Send(1000, wire.Reliable, w.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := wire.NewReader(recv(t, c, 1001))
	if text := r.Str(); !strings.Contains(text, "Hello, alice!") {
		t.Errorf("reply %q", text)
	}
	out, err := srv.Exec("module list")
	if err != nil || !strings.Contains(out, "hello 1.0 [lua] running") {
		t.Errorf("module list: %q %v", out, err)
	}
	out, err = srv.Exec("hello_count")
	if err != nil || out != "greetings answered: 1" {
		t.Errorf("hello_count: %q %v", out, err)
	}
}

func TestLuaRunawayAndErrorsAreSurvived(t *testing.T) {
	srv, _ := startHost(t, func(c *config.Config) {
		c.Modules.Load = []string{"testdata/runaway.lua"}
		c.Server.TickRate = 60
	})
	poke := wire.Schema{ID: 1100, Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 1, MaxLen: 1}
	pong := wire.Schema{ID: 1101, Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 1, MaxLen: 1}
	c := dialReg(t, srv, luaRegistry(t, poke, pong))

	malformed := srv.Net().Stats().MalformedDropped
	c.Send(1100, wire.Reliable, []byte{9, 9}) // fails the schema (max 1): never reaches Lua
	c.Send(1100, wire.Reliable, []byte{1})    // the handler raises an error
	c.Send(1100, wire.Reliable, []byte{2})    // the next tick spins forever
	if got := recv(t, c, 1101); got[0] != 2 {
		t.Fatalf("pong %v", got)
	}
	if srv.Net().Stats().MalformedDropped == malformed {
		t.Error("the 2-byte payload was not dropped as malformed before the handler")
	}
	before := srv.Stats().Ticks
	eventually(t, "the server to keep ticking after the runaway tick", func() bool { return srv.Stats().Ticks > before+30 })
	if peak := srv.Stats().PeakTickMS; peak > 500 {
		t.Errorf("a tick took %.0f ms: the runaway loop was not stopped near its budget (4 ms)", peak)
	}
	info, _ := srv.Exec("module info runaway")
	if !strings.Contains(info, "state running") || !strings.Contains(info, "faults 2") {
		t.Errorf("after one error and one overrun:\n%s", info)
	}
	c.Send(1100, wire.Reliable, []byte{7})
	if got := recv(t, c, 1101); got[0] != 7 {
		t.Fatalf("module stopped answering: %v", got)
	}
	select {
	case <-c.Done():
		t.Fatal("the player was disconnected by a module fault")
	default:
	}
}

func TestLuaCollisionAndReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "counter.lua")
	write := func(version, extra string) {
		src := `spark.module{name = "counter", version = "` + version + `"}
local n = 0
spark.command("counter_get", "", "value", function() return "n=" .. n .. " v` + version + `" end)
spark.command("counter_add", "", "add one", function() n = n + 1; return "ok" end)
function save_state() return {n = n} end
function on_reload(s) n = s.n end
` + extra
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1", "")
	srv, _ := startHost(t, withModules("../scripts/hello.lua", path))

	_, err := srv.Exec("module load testdata/clash.lua")
	if err == nil || !strings.Contains(err.Error(), "clash") || !strings.Contains(err.Error(), "hello") {
		t.Fatalf("collision: %v (must name both modules)", err)
	}
	srv.Exec("counter_add")
	srv.Exec("counter_add")
	write("2", "")
	if out, err := srv.Exec("module reload counter"); err != nil {
		t.Fatalf("reload: %v %s", err, out)
	}
	if out, _ := srv.Exec("counter_get"); out != "n=2 v2" {
		t.Errorf("after reload: %q (state must carry over, code must be new)", out)
	}
	write("3", "this is not lua (")
	_, err = srv.Exec("module reload counter")
	if err == nil || !strings.Contains(err.Error(), "old version keeps running") {
		t.Fatalf("broken reload: %v", err)
	}
	if out, _ := srv.Exec("counter_get"); out != "n=2 v2" {
		t.Errorf("after failed reload: %q", out)
	}
	if out, _ := srv.Exec("module unload counter"); out != "unloaded counter" {
		t.Errorf("unload: %q", out)
	}
}

func dialReg(t *testing.T, srv *host.Server, reg *wire.Registry) *netstack.Client {
	t.Helper()
	return dialAs(t, srv, "player", reg)
}

// dialAs connects a client named name that understands reg's module messages.
func dialAs(t *testing.T, srv *host.Server, name string, reg *wire.Registry) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Registry: reg})
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestModuleByName: `--module tag` finds scripts/tag.lua.
func TestModuleByName(t *testing.T) {
	srv, _ := startHostIn(t, "../scripts", withModules("tag"))
	out, err := srv.Exec("module info tag")
	if err != nil || !strings.Contains(out, "source ../scripts/tag.lua") || !strings.Contains(out, "code hash ") {
		t.Fatalf("module info tag: %q %v", out, err)
	}
}
