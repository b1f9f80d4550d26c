// Package config owns the server configuration: its defaults, strict loading of
// config.toml, validation of every value, and the command-line and environment
// overrides. It never opens sockets, files other than the one it is asked to
// load, or anything else: it turns text into a checked Config, or into one line
// that names the key, the file line and what is wrong.
//
// The order of precedence, highest first, is: a command-line flag (Apply), then
// SPARK_NETWORK_BIND_ADDRESS for network.bind_address only (Apply), then the
// file (Load, Parse), then Default. DefaultTOML, the repository's config.toml,
// documents every key with its default.
package config

import (
	_ "embed" // DefaultTOML
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// DefaultTOML is the documented default configuration: every key, its default
// and its unit. It is byte for byte the repository's config.toml (a test keeps
// the two equal) and parses to Default().
//
//go:embed default.toml
var DefaultTOML []byte

// Config is the whole server configuration. Each section is a [table] of
// config.toml; each field's toml tag is its key there.
//
// Besides the values, a Config loaded by Load or Parse, or changed by Apply,
// remembers (unexported) where each value came from (a file line, a flag, the
// environment or the default), so that Validate can say so. Change values
// through Apply for that reason; reflect.DeepEqual also compares that record.
type Config struct {
	Server  ServerSection  `toml:"server"`
	Network NetworkSection `toml:"network"`
	Match   MatchSection   `toml:"match"`
	LAN     LANSection     `toml:"lan"`
	Logging LoggingSection `toml:"logging"`
	Modules ModulesSection `toml:"modules"`

	origin *origin // where values came from; nil for a Config built in code
}

// ServerSection is [server]: identity, slots and timing of the game server.
type ServerSection struct {
	Name              string  `toml:"name"`               // shown to clients; 1..64 bytes
	MOTD              string  `toml:"motd"`               // message of the day; at most 256 bytes
	Port              int     `toml:"port"`               // UDP game port; 0 means any free port; 0..65535
	MaxClients        int     `toml:"max_clients"`        // client slots, handshaking clients included; 1..4096
	TickRate          int     `toml:"tick_rate"`          // simulation ticks per second (Hz); 1..1000
	ClientTimeout     float64 `toml:"client_timeout"`     // seconds without an authenticated packet; 1..600
	HeartbeatInterval float64 `toml:"heartbeat_interval"` // seconds between heartbeats; > 0 and < ClientTimeout
	DataDir           string  `toml:"data_dir"`           // identity key, known hosts, bans; not empty
}

// NetworkSection is [network]: where the server binds and its Connect budget.
type NetworkSection struct {
	// BindAddress is "127.0.0.1" (loopback peers only) or one RFC1918
	// host/prefix such as "192.168.1.20/24"; checked by netstack/policy.Parse.
	BindAddress string `toml:"bind_address"`
	// ConnectBurst is how many Connect datagrams one source IPv4 may send at once.
	ConnectBurst int `toml:"connect_burst"`
	// ConnectRefillPerSecond is the rate, in datagrams per second, at which a
	// source's Connect budget refills.
	ConnectRefillPerSecond float64 `toml:"connect_refill_per_second"`
}

// MatchSection is [match]: the rules of the match and the map rotation.
type MatchSection struct {
	GameMode            string   `toml:"game_mode"`             // deathmatch, team_deathmatch, capture_the_flag, domination, search_and_destroy, free_for_all or custom
	ScoreLimit          int      `toml:"score_limit"`           // score that ends a round; 0 means none; ≥ 0
	TimeLimitMinutes    float64  `toml:"time_limit_minutes"`    // minutes per round; 0 means none; 0..1440
	RoundCount          int      `toml:"round_count"`           // rounds per match; 1..100
	FriendlyFire        bool     `toml:"friendly_fire"`         // teammates can damage each other
	AutoBalanceTeams    bool     `toml:"auto_balance_teams"`    // move players to keep teams even
	MapRotation         []string `toml:"map_rotation"`          // maps in play order; not empty, names 1..64 bytes, no repeats
	RandomizeMapOrder   bool     `toml:"randomize_map_order"`   // shuffle the rotation instead of playing it in order
	ReplicationRate     int      `toml:"replication_rate"`      // snapshots per second to each client (Hz); 1..Server.TickRate
	SnapshotHistorySize int      `toml:"snapshot_history_size"` // snapshots kept in history; 1..4096
	WarmupSeconds       float64  `toml:"warmup_seconds"`        // seconds of warmup before a match; 0..600
	IntermissionSeconds float64  `toml:"intermission_seconds"`  // seconds between rounds and matches; 0..600
}

// LANSection is [lan]: LAN discovery.
type LANSection struct {
	Enabled bool `toml:"enabled"` // answer LAN discovery
	Port    int  `toml:"port"`    // UDP discovery port; 1..65535, not Server.Port (checked even when disabled)
}

// LoggingSection is [logging].
type LoggingSection struct {
	Level string `toml:"level"` // debug, info, warn or error
	File  string `toml:"file"`  // log file path; "" means stderr only
}

// ModulesSection is [modules]: game modules and what each may consume.
type ModulesSection struct {
	// Load lists module names or paths to load at start, in order; no empty
	// entries, no repeats. A --module flag replaces the whole list (see Apply).
	Load []string `toml:"load"`
	// InboxCapacity is how many events a module's inbox holds; when it is
	// full, new events are dropped and counted. 16..1000000.
	InboxCapacity int `toml:"inbox_capacity"`
	// TickBudgetFraction is the share of the tick period a module's Lua work
	// may use; above 0, at most 1.
	TickBudgetFraction float64 `toml:"tick_budget_fraction"`
}

// Default returns the built-in configuration, the one DefaultTOML documents.
// Every call returns fresh slices.
func Default() Config {
	return Config{
		Server: ServerSection{
			Name:              "sparkhost",
			MOTD:              "Welcome to sparkhost",
			Port:              27015,
			MaxClients:        32,
			TickRate:          60,
			ClientTimeout:     10,
			HeartbeatInterval: 1,
			DataDir:           "data",
		},
		Network: NetworkSection{
			BindAddress:            "127.0.0.1",
			ConnectBurst:           16,
			ConnectRefillPerSecond: 4,
		},
		Match: MatchSection{
			GameMode:            "deathmatch",
			ScoreLimit:          25,
			TimeLimitMinutes:    10,
			RoundCount:          1,
			FriendlyFire:        false,
			AutoBalanceTeams:    true,
			MapRotation:         []string{"arena", "warehouse", "courtyard"},
			RandomizeMapOrder:   false,
			ReplicationRate:     20,
			SnapshotHistorySize: 64,
			WarmupSeconds:       10,
			IntermissionSeconds: 10,
		},
		LAN:     LANSection{Enabled: false, Port: 27016},
		Logging: LoggingSection{Level: "info", File: ""},
		Modules: ModulesSection{
			Load:               []string{},
			InboxCapacity:      4096,
			TickBudgetFraction: 0.25,
		},
	}
}

// gameModeNames are the values match.game_mode accepts, in wire.GameMode
// order: gameModeNames[wire.ModeDeathmatch] is "deathmatch", and so on.
var gameModeNames = [...]string{
	wire.ModeDeathmatch:       "deathmatch",
	wire.ModeTeamDeathmatch:   "team_deathmatch",
	wire.ModeCaptureTheFlag:   "capture_the_flag",
	wire.ModeDomination:       "domination",
	wire.ModeSearchAndDestroy: "search_and_destroy",
	wire.ModeFreeForAll:       "free_for_all",
	wire.ModeCustom:           "custom",
}

// parseGameMode maps a match.game_mode value to its wire.GameMode.
func parseGameMode(s string) (wire.GameMode, bool) {
	for i, name := range gameModeNames {
		if name == s {
			return wire.GameMode(i), true
		}
	}
	return wire.ModeCustom, false
}

// GameMode returns match.game_mode as the wire's mode byte. For a name Validate
// would refuse it returns wire.ModeCustom.
func (c *Config) GameMode() wire.GameMode {
	m, _ := parseGameMode(c.Match.GameMode)
	return m
}

// TickPeriod is the time between ticks, 1/tick_rate (16.666666ms at 60 Hz);
// 0 for a tick rate Validate would refuse.
func (c *Config) TickPeriod() time.Duration {
	if c.Server.TickRate <= 0 {
		return 0
	}
	return time.Second / time.Duration(c.Server.TickRate)
}

// ClientTimeoutDuration is server.client_timeout as a time.Duration.
func (c *Config) ClientTimeoutDuration() time.Duration { return seconds(c.Server.ClientTimeout) }

// HeartbeatDuration is server.heartbeat_interval as a time.Duration.
func (c *Config) HeartbeatDuration() time.Duration { return seconds(c.Server.HeartbeatInterval) }

// WarmupDuration is match.warmup_seconds as a time.Duration.
func (c *Config) WarmupDuration() time.Duration { return seconds(c.Match.WarmupSeconds) }

// IntermissionDuration is match.intermission_seconds as a time.Duration.
func (c *Config) IntermissionDuration() time.Duration { return seconds(c.Match.IntermissionSeconds) }

// TimeLimit is match.time_limit_minutes as a time.Duration; 0 means no limit.
func (c *Config) TimeLimit() time.Duration { return seconds(c.Match.TimeLimitMinutes * 60) }

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
