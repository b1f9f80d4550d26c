package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestPluginInitBuildsOutsideTheRepository: `sparkhost plugin init` makes a
// plugin module in a directory outside this repository; it builds offline
// (the module cache only) against the checkout, passes gofmt and vet, loads
// into a real server and answers a player.
func TestPluginInitBuildsOutsideTheRepository(t *testing.T) {
	bin := buildBinary(t)
	sdk, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shortTempDir(t), "pingpong")
	code, out, errs := runBinary(t, bin, "plugin", "init", dir, "--sdk", sdk)
	if code != 0 || !strings.Contains(out, "created plugin pingpong in "+dir) {
		t.Fatalf("plugin init: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBinary(t, bin, "plugin", "init", dir, "--sdk", sdk); code != 1 || !strings.Contains(errs, "is not empty") {
		t.Errorf("init into a non-empty directory: exit %d, %s", code, errs)
	}
	offline := append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly")
	for _, args := range [][]string{{"build", "-o", "pingpong", "."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, offline
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the new module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("gofmt", "-l", dir).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("gofmt -l: %s %v", out, err)
	}

	rs := startServer(t, bin, filepath.Join(shortTempDir(t), "data"), "--module", filepath.Join(dir, "pingpong"))
	reg := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{
		{ID: 1500, Name: "Ping", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, RequiresAdmitted: true},
		{ID: 1501, Name: "Pong", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 302, RequiresAdmitted: true},
	} {
		if err := reg.Register("pingpong", s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: rs.addr, Name: "alice", Pin: rs.pin, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := wire.NewWriter(nil)
	w.Str("hi")
	if err := c.Send(1500, wire.Reliable, w.Bytes()); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("no Pong: %v", err)
		}
		if m.Header.Type == 1501 {
			r := wire.NewReader(m.Payload)
			if got := r.Str(); got != "hello alice: hi" {
				t.Fatalf("Pong %q", got)
			}
			return
		}
	}
}
