package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/trust"
)

// fileConfig is the part of config.toml that `run` reads.
type fileConfig struct {
	Server struct {
		Name              string  `toml:"name"`
		MOTD              string  `toml:"motd"`
		Port              int     `toml:"port"`
		MaxClients        int     `toml:"max_clients"`
		DataDir           string  `toml:"data_dir"`
		ClientTimeout     float64 `toml:"client_timeout"`
		HeartbeatInterval float64 `toml:"heartbeat_interval"`
	} `toml:"server"`
	Network struct {
		BindAddress            string  `toml:"bind_address"`
		ConnectBurst           int     `toml:"connect_burst"`
		ConnectRefillPerSecond float64 `toml:"connect_refill_per_second"`
	} `toml:"network"`
}

func defaultFileConfig() fileConfig {
	var c fileConfig
	c.Server.Name = "sparkhost"
	c.Server.MOTD = "Welcome to sparkhost"
	c.Server.Port = 27015
	c.Server.MaxClients = netstack.DefaultMaxClients
	c.Server.DataDir = "data"
	c.Server.ClientTimeout = 10
	c.Server.HeartbeatInterval = 1
	c.Network.BindAddress = "127.0.0.1"
	c.Network.ConnectBurst = 16
	c.Network.ConnectRefillPerSecond = 4
	return c
}

// loadFileConfig decodes path over the defaults; an unknown key is an error.
func loadFileConfig(path string, c *fileConfig) error {
	md, err := toml.DecodeFile(path, c)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return fmt.Errorf("config %s: unknown key %q; remove it or check its spelling", path, und[0].String())
	}
	return nil
}

func runCommand(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	configPath := fs.String("config", "", "config file (default: built-in defaults)")
	port := fs.Int("port", -1, "UDP port (0 = any free port; default 27015)")
	bind := fs.String("bind", "", "bind address: 127.0.0.1 or an RFC1918 host/prefix like 192.168.1.20/24")
	dataDir := fs.String("data-dir", "", "data directory for the identity key (default ./data)")
	maxClients := fs.Int("max-clients", 0, "client slots (default 32)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := defaultFileConfig()
	if *configPath != "" {
		if err := loadFileConfig(*configPath, &cfg); err != nil {
			fmt.Fprintln(os.Stderr, "sparkhost:", err)
			return 1
		}
	}
	if *port >= 0 {
		cfg.Server.Port = *port
	}
	if v := os.Getenv("SPARK_NETWORK_BIND_ADDRESS"); v != "" {
		cfg.Network.BindAddress = v
	}
	if *bind != "" {
		cfg.Network.BindAddress = *bind
	}
	if *dataDir != "" {
		cfg.Server.DataDir = *dataDir
	}
	if *maxClients > 0 {
		cfg.Server.MaxClients = *maxClients
	}

	identity, created, err := trust.LoadOrCreateIdentity(cfg.Server.DataDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparkhost:", err)
		return 1
	}
	if created {
		log.Info("created server identity", "dir", cfg.Server.DataDir)
	}
	srv, err := netstack.NewServer(netstack.ServerConfig{
		Bind:              cfg.Network.BindAddress,
		Port:              cfg.Server.Port,
		Identity:          identity,
		MaxClients:        cfg.Server.MaxClients,
		ConnectBudget:     ratelimit.Config{Burst: cfg.Network.ConnectBurst, RefillPerSecond: cfg.Network.ConnectRefillPerSecond},
		Timeout:           seconds(cfg.Server.ClientTimeout),
		HeartbeatInterval: seconds(cfg.Server.HeartbeatInterval),
		Logger:            log,
		GameStateSync:     nil,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparkhost:", err)
		return 1
	}
	srv.Start()
	fmt.Printf("sparkhost listening on %s\n", srv.Addr())
	fmt.Printf("server identity pin: %s\n", srv.Pin())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	log.Info("shutting down")
	srv.Close()
	return 0
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
