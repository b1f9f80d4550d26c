package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
)

// TestStockClientStaysConnected: the stock `sparkhost client`, which knows
// the built-in messages and the mmo module's but none of deathmatch's or the
// greeter's, stays connected to a server whose module sends it its own
// reliable types — deathmatch with bots playing (Map, Team, Hit, Frag) and
// the greeter example (Shouted) — for SPARK_STOCK_SECONDS (60 by default).
// Before protocol v4's rule that every authenticated reliable message is
// acknowledged, it was disconnected (ReliableDeliveryFailed) within seconds.
// With the server's announced schemas it accepts those types, so it refuses
// nothing.
func TestStockClientStaysConnected(t *testing.T) {
	secs := 60
	if v, err := strconv.Atoi(os.Getenv("SPARK_STOCK_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	bin := buildBinary(t)
	greeter := testplugin.Build(t, "./examples/greeter")
	for _, tc := range []struct {
		name, module string
		bots         int
	}{
		{"deathmatch", "deathmatch", 3},
		{"greeter", greeter, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmp := shortTempDir(t)
			rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", tc.module)
			addr := rs.addr.String()
			if tc.bots > 0 {
				bots := exec.Command(bin, "bots", "--count", strconv.Itoa(tc.bots), "--server", addr, "--pin", rs.pin,
					"--duration", strconv.Itoa(secs+60)+"s", "--seed", "3")
				if err := bots.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { bots.Process.Kill(); bots.Wait() })
			}
			c := startClient(t, bin, filepath.Join(tmp, "stock"), rs.pin,
				"connect "+addr+" stock; sleep "+strconv.Itoa(secs)+"s; status; net_stats; disconnect")
			c.waitLine(t, "connected to "+addr+" as stock")
			began := time.Now()
			select {
			case err := <-c.done:
				if err != nil || time.Since(began) < time.Duration(secs)*time.Second {
					t.Fatalf("client exited after %v (%v); output:\n%s", time.Since(began).Round(time.Second), err, c.output())
				}
			case <-time.After(time.Duration(secs+60) * time.Second):
				t.Fatalf("client still running after %d s; output:\n%s", secs+60, c.output())
			}
			out := c.output()
			if strings.Contains(out, "disconnected: ReliableDeliveryFailed") || !strings.Contains(out, "status: connected to "+addr+" as stock") {
				t.Fatalf("the stock client did not stay connected for %d s:\n%s", secs, out)
			}
			if !strings.Contains(out, "\nmessagesRefused: 0\n") || !strings.Contains(out, "\nrefusedByServer: 0\n") {
				t.Errorf("messages refused on either side:\n%s", out)
			}
		})
	}
}
