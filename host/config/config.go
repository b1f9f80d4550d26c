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
	"crypto/sha256"
	_ "embed" // DefaultTOML
	"encoding/hex"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
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
	Limits  LimitsSection  `toml:"limits"`
	Ops     OpsSection     `toml:"ops"`
	Agones  AgonesSection  `toml:"agones"`
	Rooms   RoomsSection   `toml:"rooms"`
	Web     WebSection     `toml:"web"`

	origin *origin // where values came from; nil for a Config built in code
}

// ServerSection is [server]: identity, slots and timing of the game server.
type ServerSection struct {
	Name              string  `toml:"name"`               // shown to clients; 1..64 bytes
	MOTD              string  `toml:"motd"`               // message of the day; at most 256 bytes
	Port              int     `toml:"port"`               // UDP game port; 0 means any free port; 0..65535
	MaxClients        int     `toml:"max_clients"`        // admitted clients (half-open handshakes do not count); 1..65536
	TickRate          int     `toml:"tick_rate"`          // simulation ticks per second (Hz); 1..1000
	ClientTimeout     float64 `toml:"client_timeout"`     // seconds without an authenticated packet; 1..600
	HeartbeatInterval float64 `toml:"heartbeat_interval"` // seconds between heartbeats; > 0 and < ClientTimeout
	DataDir           string  `toml:"data_dir"`           // identity key, known hosts, bans; not empty
	// MemoryLimitMiB is the soft limit, in MiB, within which the Go runtime
	// keeps the server process by collecting sooner and returning free
	// memory (runtime/debug.SetMemoryLimit, what GOMEMLIMIT sets); 0 leaves
	// the runtime's own (GOMEMLIMIT if set, else none); MemoryLimitAuto (-1)
	// keeps it at what the last collection found live plus a headroom
	// (host/memory.go); -1, 0 or 16..1048576.
	MemoryLimitMiB int `toml:"memory_limit_mib"`
	// GameThreadSliceMS is the scheduling slice, in milliseconds, the server
	// asks Linux (6.12 and later) for, for its game thread: a thread with a
	// short slice that wakes on a busy CPU runs before threads with the
	// default slice instead of waiting for them, so a tick starts and ends
	// on time while the server's other threads, its plugins or other
	// processes share the core. It needs no privilege and gives no larger
	// CPU share. 0 leaves the game thread to the kernel's default; 0 or
	// 0.1..100.
	GameThreadSliceMS float64 `toml:"game_thread_slice_ms"`
}

// NetworkSection is [network]: where the server binds, who may reach it, and
// the budgets and caps of the handshake (docs/protocol.md §3.6).
type NetworkSection struct {
	// Exposure is "private" (loopback and LAN binds only) or "internet"
	// (wildcard, public and IPv6 binds; protocol v4 with address validation
	// only). The --internet flag sets "internet".
	Exposure string `toml:"exposure"`
	// BindAddress is "127.0.0.1" (loopback peers only) or one RFC1918
	// host/prefix such as "192.168.1.20/24"; checked by netstack/policy.Parse.
	// In internet mode also "::" (IPv4 and IPv6), "0.0.0.0" or any address of
	// the host (netstack/policy.ParseInternet).
	BindAddress string `toml:"bind_address"`
	// AllowV3 accepts protocol v3 clients on a private bind; internet mode
	// never does (setting it there is refused).
	AllowV3 bool `toml:"allow_v3"`
	// AddressValidation makes every v4 source echo a cookie before any key
	// agreement or signature; false is refused in internet mode.
	AddressValidation bool `toml:"address_validation"`
	// ConnectBurst is how many Connect datagrams one source address may send at once.
	ConnectBurst int `toml:"connect_burst"`
	// ConnectRefillPerSecond is the rate, in datagrams per second, at which a
	// source's Connect budget refills.
	ConnectRefillPerSecond float64 `toml:"connect_refill_per_second"`
	// PrefixBurst and PrefixRefillPerSecond are the Connect budget of one
	// IPv4 /24 or IPv6 /64, beside the per-address one.
	PrefixBurst           int     `toml:"prefix_burst"`
	PrefixRefillPerSecond float64 `toml:"prefix_refill_per_second"`
	// HandshakesPerSecond is the global budget of handshake signatures across
	// all sources (burst: one second's worth); 1..1e6.
	HandshakesPerSecond float64 `toml:"handshakes_per_second"`
	// UnvalidatedRepliesPerSecond is the global budget of datagrams sent to
	// sources that have not proven their address (burst: one second's
	// worth); 1..1e6.
	UnvalidatedRepliesPerSecond float64 `toml:"unvalidated_replies_per_second"`
	// RefusalsPerSecond (unvalidated_refusals_per_second) is the global
	// budget of ConnectRejected answers to such sources (burst: one second's
	// worth), charged before UnvalidatedRepliesPerSecond so that tiny
	// requests cannot take the CookieReplies' tokens; 1..1e6.
	RefusalsPerSecond float64 `toml:"unvalidated_refusals_per_second"`
	// HalfOpenMax bounds the handshakes answered but not finished; they never
	// count toward server.max_clients. 1..65536.
	HalfOpenMax int `toml:"half_open_max"`
	// HalfOpenPerAddress and HalfOpenPerPrefix bound those of one address and
	// of one /24 or /64; 1..65536.
	HalfOpenPerAddress int `toml:"half_open_per_address"`
	HalfOpenPerPrefix  int `toml:"half_open_per_prefix"`
	// HalfOpenTimeout is how long, in seconds, a handshake may stay half-open; 1..60.
	HalfOpenTimeout float64 `toml:"half_open_timeout"`
	// AdmittedPerAddress and AdmittedPerPrefix cap the admitted clients of
	// one address and of one IPv4 /24 or IPv6 /64 (0 = no cap; 0..4096).
	// They apply in internet mode, and on a private bind only with
	// AdmittedCapsPrivate (every peer of a private bind is local).
	AdmittedPerAddress  int  `toml:"admitted_per_address"`
	AdmittedPerPrefix   int  `toml:"admitted_per_prefix"`
	AdmittedCapsPrivate bool `toml:"admitted_caps_private"`
	// DatagramSize is the largest UDP payload, in bytes, of a v4 datagram the
	// server sends (docs/protocol.md §5.5); 1200..65507.
	DatagramSize int `toml:"datagram_size"`
	// ResumeSeconds is how long after a player's last datagram its seat is
	// held for a resumption (docs/protocol.md §3.15): the longest outage a
	// player survives with its id, room, team, score and entity. A held
	// seat keeps its slot. 0 turns resumption off; 0..3600.
	ResumeSeconds int `toml:"resume_seconds"`
}

// DefaultPluginNice is modules.plugin_nice's default: a plugin busy on a
// full core leaves the server's tick about three quarters of it (CFS
// weights 1024 against 335), and the tick's wake-up preempts the plugin
// instead of waiting for its time slice to end.
const DefaultPluginNice = 5

// Exposure values of network.exposure.
const (
	ExposurePrivate  = "private"
	ExposureInternet = "internet"
)

// Internet reports whether network.exposure is "internet".
func (c *Config) Internet() bool { return c.Network.Exposure == ExposureInternet }

// HalfOpenTimeoutDuration is network.half_open_timeout as a time.Duration.
func (c *Config) HalfOpenTimeoutDuration() time.Duration { return seconds(c.Network.HalfOpenTimeout) }

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
	// InterestRadius in world units: an entity farther than this from a
	// player's viewpoint is not replicated to it; 0 means no limit. 0..1e6.
	InterestRadius float64 `toml:"interest_radius"`
	// UpdateRepeats is how many consecutive replication frames carry each
	// changed entity field (EntityStateUpdate is unreliable); 1..64.
	UpdateRepeats int `toml:"update_repeats"`
	// RefreshSeconds is the period, in seconds, of the full refresh of every
	// entity a player is sent; 0 means never. 0..60.
	RefreshSeconds float64 `toml:"refresh_seconds"`
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
	// TickBudgetFraction is the share of the tick period a module may take
	// per tick: a Lua module's work is stopped there, and the server waits
	// that long for a Go plugin's answer (a later answer applies at a later
	// tick). Above 0, at most 1.
	TickBudgetFraction float64 `toml:"tick_budget_fraction"`
	// RestartBackoff is how long, in seconds, a crashed module waits before
	// it is started again; the wait doubles after each crash or failed start
	// in a row. 0.01..3600.
	RestartBackoff float64 `toml:"restart_backoff"`
	// RestartBackoffMax caps that wait, in seconds; a module that has run
	// this long without crashing starts again from RestartBackoff.
	// RestartBackoff..86400.
	RestartBackoffMax float64 `toml:"restart_backoff_max"`
	// MaxRestarts crashes (failed starts included) within RestartWindow leave
	// a module failed, not restarted, until an operator runs `module load`;
	// 1..1000.
	MaxRestarts int `toml:"max_restarts"`
	// RestartWindow is the span, in seconds, over which MaxRestarts counts
	// crashes; 1..86400.
	RestartWindow float64 `toml:"restart_window"`
	// PluginHangTimeout is how long, in seconds, a Go plugin may leave a
	// call unanswered before it is killed as hung and restarted; 1..3600.
	PluginHangTimeout float64 `toml:"plugin_hang_timeout"`
	// PluginMemoryMiB caps the resident memory of a Go plugin (its process
	// and the processes it started), in MiB; past it the plugin is killed
	// and restarted. Its GOMEMLIMIT is set to three quarters of the cap.
	// 16..1048576.
	PluginMemoryMiB int `toml:"plugin_memory_mib"`
	// PluginLogLinesPerSecond is the rate, in lines per second, at which a
	// Go plugin's log budget refills (records, stdout and stderr lines
	// together); lines over budget are dropped and counted. 0.1..100000.
	PluginLogLinesPerSecond float64 `toml:"plugin_log_lines_per_second"`
	// PluginLogBurst is how many lines a Go plugin may log at once;
	// 1..100000.
	PluginLogBurst int `toml:"plugin_log_burst"`
	// PluginAnswers is when a Go plugin's answer to a tick is applied:
	// "same_tick" (the server waits for it up to the module budget) or
	// "next_tick" (the server never waits: the plugin works while the
	// server sleeps between ticks, and its actions apply at the start of
	// the next tick — one tick more of latency, a shorter tick).
	PluginAnswers string `toml:"plugin_answers"`
	// PluginNice is how far below the server's a Go plugin's CPU priority
	// is, as a Unix nice increment: under CPU contention the server's tick
	// runs first. 0..19; 0 leaves them equal. Linux only.
	PluginNice int `toml:"plugin_nice"`
	// SHA256 maps a Go plugin's path, exactly as written in Load or a
	// --module flag, to the SHA-256 its executable must have, in lowercase
	// hex (64 digits). The [modules.sha256] sub-table; empty by default.
	SHA256 map[string]string `toml:"sha256"`
}

// LimitsSection is [limits]: what one client may send the server's game
// side. Messages over a limit are dropped and counted.
type LimitsSection struct {
	// ChatPerSecond is the rate, in messages per second, at which a
	// client's chat budget refills; 0.01..1000.
	ChatPerSecond float64 `toml:"chat_per_second"`
	// ChatBurst is how many chat messages a client may send at once; 1..1000.
	ChatBurst int `toml:"chat_burst"`
	// ChatKickAfter is how many chat messages over budget within a minute
	// disconnect the client with RateLimited; 0 means never; 0..100000.
	ChatKickAfter int `toml:"chat_kick_after"`
	// ModuleMessagesPerTick is how many messages of module types one client
	// may have delivered to the modules per tick, all modules together;
	// 1..100000.
	ModuleMessagesPerTick int `toml:"module_messages_per_tick"`
}

// BuiltIn is the configuration of a server run without a config file:
// Default, whose values count as defaults, not as keys an operator wrote
// (DefaultTOML writes every key, and parsing it would make each look
// chosen: `sparkhost run --internet` would then be refused for allow_v3).
func BuiltIn() Config { return Default() }

// Default returns the built-in configuration, the one DefaultTOML documents.
// Every call returns fresh slices and maps.
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
			GameThreadSliceMS: DefaultGameThreadSliceMS,
		},
		Network: NetworkSection{
			BindAddress:                 "127.0.0.1",
			ConnectBurst:                16,
			ConnectRefillPerSecond:      4,
			Exposure:                    ExposurePrivate,
			AllowV3:                     true,
			AddressValidation:           true,
			PrefixBurst:                 64,
			PrefixRefillPerSecond:       16,
			HandshakesPerSecond:         1000,
			UnvalidatedRepliesPerSecond: 2000,
			RefusalsPerSecond:           200,
			HalfOpenMax:                 1024,
			HalfOpenPerAddress:          16,
			HalfOpenPerPrefix:           64,
			HalfOpenTimeout:             5,
			AdmittedPerAddress:          8,
			AdmittedPerPrefix:           16,
			DatagramSize:                1200,
			ResumeSeconds:               30,
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
			InterestRadius:      150,
			UpdateRepeats:       3,
			RefreshSeconds:      1,
			WarmupSeconds:       10,
			IntermissionSeconds: 10,
		},
		LAN:     LANSection{Enabled: false, Port: 27016},
		Logging: LoggingSection{Level: "info", File: ""},
		Modules: ModulesSection{
			Load:                    []string{},
			InboxCapacity:           4096,
			TickBudgetFraction:      0.25,
			PluginHangTimeout:       10,
			PluginMemoryMiB:         512,
			PluginLogLinesPerSecond: 100,
			PluginLogBurst:          200,
			PluginAnswers:           "same_tick",
			PluginNice:              DefaultPluginNice,
			RestartBackoff:          1,
			RestartBackoffMax:       30,
			MaxRestarts:             5,
			RestartWindow:           600,
			SHA256:                  map[string]string{},
		},
		Limits: LimitsSection{
			ChatPerSecond:         2,
			ChatBurst:             5,
			ChatKickAfter:         30,
			ModuleMessagesPerTick: 64,
		},
		Ops:    defaultOps(),
		Agones: defaultAgones(),
		Rooms:  defaultRooms(),
		Web:    defaultWeb(),
	}
}

// gameModeNames are the values match.game_mode accepts, in gamemsg.GameMode
// order: gameModeNames[gamemsg.ModeDeathmatch] is "deathmatch", and so on.
var gameModeNames = [...]string{
	gamemsg.ModeDeathmatch:       "deathmatch",
	gamemsg.ModeTeamDeathmatch:   "team_deathmatch",
	gamemsg.ModeCaptureTheFlag:   "capture_the_flag",
	gamemsg.ModeDomination:       "domination",
	gamemsg.ModeSearchAndDestroy: "search_and_destroy",
	gamemsg.ModeFreeForAll:       "free_for_all",
	gamemsg.ModeCustom:           "custom",
}

// parseGameMode maps a match.game_mode value to its gamemsg.GameMode.
func parseGameMode(s string) (gamemsg.GameMode, bool) {
	for i, name := range gameModeNames {
		if name == s {
			return gamemsg.GameMode(i), true
		}
	}
	return gamemsg.ModeCustom, false
}

// GameMode returns match.game_mode as the wire's mode byte. For a name Validate
// would refuse it returns gamemsg.ModeCustom.
func (c *Config) GameMode() gamemsg.GameMode {
	m, _ := parseGameMode(c.Match.GameMode)
	return m
}

// DefaultGameThreadSliceMS is server.game_thread_slice_ms's default: none
// asked. 0.3 ms (about a tenth of a loaded tick's work) made no difference
// to the MMO benchmark's peak tick it was meant for (docs/performance.md
// § 4), so it is the operator's choice.
const DefaultGameThreadSliceMS = 0

// GameThreadSlice is server.game_thread_slice_ms as a duration; 0: none asked.
func (c *Config) GameThreadSlice() time.Duration {
	return time.Duration(math.Round(c.Server.GameThreadSliceMS * float64(time.Millisecond)))
}

// TickPeriod is the time between ticks, 1/tick_rate (16.666666ms at 60 Hz);
// 0 for a tick rate Validate would refuse.
func (c *Config) TickPeriod() time.Duration {
	if c.Server.TickRate <= 0 {
		return 0
	}
	return time.Second / time.Duration(c.Server.TickRate)
}

// LagWindow is how far back lag compensation rewinds: snapshot_history_size
// snapshots at tick_rate (64 at 60 Hz: 1.07 s), at most 10 s.
func (c *Config) LagWindow() time.Duration {
	if c.Server.TickRate <= 0 {
		return 0
	}
	return min(time.Duration(c.Match.SnapshotHistorySize)*time.Second/time.Duration(c.Server.TickRate), 10*time.Second)
}

// EntityRefresh is match.refresh_seconds as a time.Duration (0: never).
func (c *Config) EntityRefresh() time.Duration { return seconds(c.Match.RefreshSeconds) }

// ResumeHoldDuration is network.resume_seconds as the transport's
// ResumeHold (negative: resumption off).
func (c *Config) ResumeHoldDuration() time.Duration {
	if c.Network.ResumeSeconds == 0 {
		return -1
	}
	return time.Duration(c.Network.ResumeSeconds) * time.Second
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

// PluginHangTimeout is modules.plugin_hang_timeout as a time.Duration: how
// long a Go plugin may leave a call unanswered before it is killed.
func (c *Config) PluginHangTimeout() time.Duration { return seconds(c.Modules.PluginHangTimeout) }

// PluginMemoryLimit is modules.plugin_memory_mib in bytes.
func (c *Config) PluginMemoryLimit() int64 { return int64(c.Modules.PluginMemoryMiB) << 20 }

// MemoryLimitAuto is the server.memory_limit_mib that has the server keep
// the limit at what is live plus a headroom, rather than at a fixed value.
const MemoryLimitAuto = -1

// MemoryLimit is server.memory_limit_mib in bytes (0: none set; negative:
// MemoryLimitAuto).
func (c *Config) MemoryLimit() int64 { return int64(c.Server.MemoryLimitMiB) << 20 }

// RestartBackoff is modules.restart_backoff as a time.Duration.
func (c *Config) RestartBackoff() time.Duration { return seconds(c.Modules.RestartBackoff) }

// RestartBackoffMax is modules.restart_backoff_max as a time.Duration.
func (c *Config) RestartBackoffMax() time.Duration { return seconds(c.Modules.RestartBackoffMax) }

// RestartWindow is modules.restart_window as a time.Duration.
func (c *Config) RestartWindow() time.Duration { return seconds(c.Modules.RestartWindow) }

// PluginSHA256 returns the SHA-256 that [modules.sha256] expects of the
// plugin at path (as written in modules.load or --module). ok is false when
// the table does not list path, or lists a value Validate would refuse.
func (c *Config) PluginSHA256(path string) (sum [sha256.Size]byte, ok bool) {
	h, listed := c.Modules.SHA256[path]
	if !listed || len(h) != hex.EncodedLen(sha256.Size) {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return [sha256.Size]byte{}, false
	}
	return sum, true
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
