package host_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// gateScript is a module that is not a match: it names its area at load,
// scores every newcomer (which a world must ignore) and then sends a marker
// on the ordered channel, behind any ScoreUpdate the server would send.
const gateScript = `
spark.module{name = "gate", version = "1", match = false}
spark.set_area("west")
local MARK = spark.message{id = 1900, name = "gate_mark", direction = "s2c", channel = "ordered", min = 1, max = 1}
spark.on_admitted(function(id)
  spark.add_score(id, 5, 1, 0)
  spark.after(0.1, function() spark.send(id, MARK, spark.writer():u8(1)) end)
end)
`

// TestModuleThatIsNotAMatch: a server whose module declares it is not a
// match keeps no match state — no timer, no ScoreUpdate even when the
// module scores, no map commands — and announces mode Custom with the
// module's name and area, in GameStateSync and in LAN discovery.
func TestModuleThatIsNotAMatch(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "gate.lua")
	if err := os.WriteFile(script, []byte(gateScript), 0o600); err != nil {
		t.Fatal(err)
	}
	lanPort := freeUDPPort(t)
	srv, _ := startHost(t, func(c *config.Config) {
		c.Modules.Load = []string{script}
		c.Match.TimeLimitMinutes = 10
		c.LAN.Enabled, c.LAN.Port = true, lanPort
	})
	mark := wire.Schema{ID: 1900, Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 1, MaxLen: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, gs, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "ann", Pin: srv.Pin(), Registry: luaRegistry(t, mark)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if gs.Mode != gamemsg.ModeCustom || gs.Map != "gate/west" || gs.MatchState != gamemsg.MatchInProgress || gs.TimeRemaining != 0 {
		t.Errorf("GameStateSync: mode %v map %q state %v time %v; want Custom, gate/west, InProgress, no timer",
			gs.Mode, gs.Map, gs.MatchState, gs.TimeRemaining)
	}
	var got []wire.MessageType
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for the module's marker: %v (received %v)", err, got)
		}
		if m.Header.Type == 1900 {
			break
		}
		got = append(got, m.Header.Type)
	}
	for _, bad := range []wire.MessageType{gamemsg.TypeScoreUpdate, gamemsg.TypeMatchStart, gamemsg.TypeMatchEnd} {
		if slices.Contains(got, bad) {
			t.Errorf("a server that runs no match sent %v (received %v)", bad, got)
		}
	}
	for _, cmd := range []string{"endmatch", "nextmap", "map arena"} {
		if out, err := srv.Exec(cmd); err == nil || !strings.Contains(err.Error(), "gate is not a match") {
			t.Errorf("%s: %q %v; want a refusal saying gate is not a match", cmd, out, err)
		}
	}
	if out, _ := srv.Exec("status"); strings.Contains(out, "left") || strings.Contains(out, "arena") {
		t.Errorf("status shows a match timer or map:\n%s", out)
	}
	var res []discovery.Result
	eventually(t, "a discovery answer", func() bool {
		qctx, qcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer qcancel()
		res, err = discovery.Query(qctx, []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(lanPort))}, 300*time.Millisecond)
		return err == nil && len(res) == 1 && res[0].Info.Players == 1
	})
	if info := res[0].Info; gamemsg.GameMode(info.Mode) != gamemsg.ModeCustom || info.Map != "gate/west" {
		t.Errorf("discovery says mode %v map %q; want Custom gate/west", gamemsg.GameMode(info.Mode), info.Map)
	}
}

// TestMatchModuleKeepsItsMatch: the same script as a match (no match =
// false) keeps today's behaviour: its score reaches the client.
func TestMatchModuleKeepsItsMatch(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "gate.lua")
	src := strings.Replace(gateScript, ", match = false", "", 1)
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, _ := startHost(t, withModules(script))
	mark := wire.Schema{ID: 1900, Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 1, MaxLen: 1}
	c, gs := dialRegGS(t, srv, luaRegistry(t, mark))
	if gs.Mode == gamemsg.ModeCustom || strings.Contains(gs.Map, "gate") {
		t.Errorf("a match announced mode %v map %q", gs.Mode, gs.Map)
	}
	for {
		m := waitAny(t, c)
		if m.Header.Type == gamemsg.TypeScoreUpdate {
			su, err := gamemsg.ParseScoreUpdate(m.Payload)
			if err == nil && len(su.Scores) == 1 && su.Scores[0].Score == 5 {
				return
			}
		}
		if m.Header.Type == 1900 {
			t.Fatal("the marker came before the ScoreUpdate with the module's 5 points")
		}
	}
}

func dialRegGS(t *testing.T, srv interface {
	Addr() netip.AddrPort
	Pin() string
}, reg *wire.Registry) (*netstack.Client, gamemsg.GameStateSync) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, gs, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bob", Pin: srv.Pin(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, gs
}

func waitAny(t *testing.T, c *netstack.Client) netstack.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
