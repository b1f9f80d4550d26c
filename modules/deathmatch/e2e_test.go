package deathmatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testplugin.Cleanup()
	os.Exit(code)
}

// startServer runs a DedicatedServer on 127.0.0.1 (an ephemeral port)
// whose built-in "deathmatch" is the module's standalone plugin binary, a
// real subprocess; dmConf, if not empty, is its deathmatch.toml. The
// server stops when the test ends.
func startServer(tb testing.TB, dmConf string, mod func(*config.Config)) *host.Server {
	tb.Helper()
	bin := testplugin.Build(tb, "./modules/deathmatch/cmd/deathmatch")
	dataDir := tb.TempDir()
	if dmConf != "" {
		dir := filepath.Join(dataDir, "modules", deathmatch.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, deathmatch.ConfigFile), []byte(dmConf), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg := config.Default()
	port := 0
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{deathmatch.Name}}, func(string) string { return "" })
	// Every bot comes from 127.0.0.1: lift the per-source connect budget.
	cfg.Network.ConnectBurst, cfg.Network.ConnectRefillPerSecond = 1000, 1000
	cfg.Network.PrefixBurst, cfg.Network.PrefixRefillPerSecond = 1000, 1000
	if mod != nil {
		mod(&cfg)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SPARK_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := host.New(host.Options{Config: cfg, Logger: log,
		Builtin: func(name string) (string, []string, bool) { return bin, nil, name == deathmatch.Name }})
	if err != nil {
		tb.Fatal(err)
	}
	hosttest.Run(tb, srv)
	return srv
}

// runBots connects n bots (bot1 first, with observe) one after another and
// runs each on its own goroutine until the test ends.
func runBots(tb testing.TB, srv *host.Server, n int, seed uint64, observe func(netstack.Message)) []*netbot.Bot {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	bots := make([]*netbot.Bot, n)
	for i := range bots {
		cfg := netbot.Config{Name: fmt.Sprintf("bot%d", i+1), Seed: seed*1000 + uint64(i),
			Client: netstack.ClientConfig{Server: srv.Addr(), Pin: srv.Pin()}}
		if i == 0 {
			cfg.Observe = observe
		}
		b, err := netbot.Dial(ctx, cfg)
		if err != nil {
			tb.Fatalf("%s: %v", cfg.Name, err)
		}
		bots[i] = b
		wg.Go(func() {
			if err := b.Run(ctx); err != nil {
				tb.Errorf("%s: %v", b.Name(), err)
			}
		})
	}
	return bots
}
