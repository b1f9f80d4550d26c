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
	"github.com/sparkhost/sparkhost/netstack/wire"
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
	if err := validateFileConfig(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sparkhost:", err)
		return 1
	}
	var srv *netstack.Server
	srv, err = netstack.NewServer(netstack.ServerConfig{
		Bind:              cfg.Network.BindAddress,
		Port:              cfg.Server.Port,
		Identity:          identity,
		MaxClients:        cfg.Server.MaxClients,
		ConnectBudget:     ratelimit.Config{Burst: cfg.Network.ConnectBurst, RefillPerSecond: cfg.Network.ConnectRefillPerSecond},
		Timeout:           seconds(cfg.Server.ClientTimeout),
		HeartbeatInterval: seconds(cfg.Server.HeartbeatInterval),
		Logger:            log,
		GameStateSync: func(client uint32, dst []byte) []byte {
			// Without a game module there is no map and no match: the
			// transport alone, announced as a Custom mode in warmup.
			return wire.AppendGameStateSync(dst, &wire.GameStateSync{
				ClientID: client, ServerTime: srv.Time(), TickRate: 60, ReplicationRate: 20,
				ServerName: cfg.Server.Name, MOTD: cfg.Server.MOTD,
				Mode: wire.ModeCustom, MatchState: wire.MatchWarmup,
			})
		},
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

// validateFileConfig refuses values the server cannot run with, naming the key.
func validateFileConfig(c *fileConfig) error {
	switch {
	case c.Server.Port < 0 || c.Server.Port > 65535:
		return fmt.Errorf("server.port = %d: must be 0..65535", c.Server.Port)
	case c.Server.MaxClients < 1 || c.Server.MaxClients > 4096:
		return fmt.Errorf("server.max_clients = %d: must be 1..4096", c.Server.MaxClients)
	case len(c.Server.Name) == 0 || len(c.Server.Name) > wire.MaxServerNameLen:
		return fmt.Errorf("server.name: must be 1..%d bytes", wire.MaxServerNameLen)
	case len(c.Server.MOTD) > wire.MaxMOTDLen:
		return fmt.Errorf("server.motd: must be at most %d bytes", wire.MaxMOTDLen)
	case c.Server.ClientTimeout < 1 || c.Server.ClientTimeout > 600:
		return fmt.Errorf("server.client_timeout = %g: must be 1..600 seconds", c.Server.ClientTimeout)
	case c.Server.HeartbeatInterval <= 0 || c.Server.HeartbeatInterval >= c.Server.ClientTimeout:
		return fmt.Errorf("server.heartbeat_interval = %g: must be above 0 and below client_timeout", c.Server.HeartbeatInterval)
	case c.Server.DataDir == "":
		return fmt.Errorf("server.data_dir: must not be empty")
	}
	budget := ratelimit.Config{Burst: c.Network.ConnectBurst, RefillPerSecond: c.Network.ConnectRefillPerSecond}
	if err := budget.Validate(); err != nil {
		return fmt.Errorf("network.connect_burst / connect_refill_per_second: %w", err)
	}
	return nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
