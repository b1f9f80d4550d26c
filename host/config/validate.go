package config

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sparkhost/sparkhost/netstack/policy"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Limits of the Connect budget; netstack/ratelimit accepts exactly these (its
// Validate runs too, as a backstop should it ever narrow them). The messages
// spell the refill limits as "0.001..1e9".
const (
	maxConnectBurst  = 1 << 20
	minConnectRefill = 1e-3
	maxConnectRefill = 1e9
	// maxGlobalRate bounds the global budgets: their burst is one second's
	// worth and a burst is at most maxConnectBurst.
	maxGlobalRate = 1e6
	// maxHalfOpen bounds the half-open caps (a few hundred bytes each).
	maxHalfOpen = 65536
	// maxClients bounds the admission caps.
	maxClients = 4096
	// maxServerClients bounds server.max_clients: an idle session costs
	// the server a few KiB (docs/performance.md, "Capacity").
	maxServerClients = 65536
)

// maxMapNameLen bounds one match.map_rotation entry, in bytes.
const maxMapNameLen = 64

var logLevels = [...]string{"debug", "info", "warn", "error"}

// Validate checks every value against its range and the rules that tie keys
// together, and returns the first problem in section order as an *Error. Its
// message names where the value came from: a file line as the "file:line: "
// prefix, otherwise "(default)", "(--port)" or "(SPARK_NETWORK_BIND_ADDRESS)"
// after the value. A rule comparing two keys reports the first; when that one
// is a default, the line is the other's, the one the file set.
func (c *Config) Validate() error {
	for _, check := range [...]func(*Config) *Error{
		(*Config).checkServer, (*Config).checkNetwork, (*Config).checkMatch,
		(*Config).checkLAN, (*Config).checkLogging, (*Config).checkModules,
		(*Config).checkLimits,
		(*Config).checkOps, (*Config).checkAgones, (*Config).checkRooms, (*Config).checkWeb,
	} {
		if e := check(c); e != nil {
			return e
		}
	}
	return nil
}

func (c *Config) checkServer() *Error {
	s := &c.Server
	switch {
	case len(s.Name) < 1 || len(s.Name) > gamemsg.MaxServerNameLen:
		return c.refuse("server.name", s.Name, fmt.Sprintf("must be 1..%d bytes, not %d", gamemsg.MaxServerNameLen, len(s.Name)))
	case len(s.MOTD) > gamemsg.MaxMOTDLen:
		return c.refuse("server.motd", nil, fmt.Sprintf("must be at most %d bytes, not %d", gamemsg.MaxMOTDLen, len(s.MOTD)))
	}
	if e := c.intIn("server.port", s.Port, 0, 65535, ""); e != nil {
		return e
	}
	if e := c.intIn("server.max_clients", s.MaxClients, 1, maxServerClients, ""); e != nil {
		return e
	}
	if e := c.intIn("server.tick_rate", s.TickRate, 1, 1000, " Hz"); e != nil {
		return e
	}
	if e := c.floatIn("server.client_timeout", s.ClientTimeout, 1, 600, " seconds"); e != nil {
		return e
	}
	switch {
	case !(s.HeartbeatInterval > 0):
		return c.refuse("server.heartbeat_interval", s.HeartbeatInterval, "must be above 0 seconds")
	case s.HeartbeatInterval >= s.ClientTimeout:
		return c.refuseVs("server.heartbeat_interval", s.HeartbeatInterval, "server.client_timeout",
			"must be below server.client_timeout ("+formatFloat(s.ClientTimeout)+")")
	case s.DataDir == "":
		return c.refuse("server.data_dir", s.DataDir, "must not be empty")
	}
	if s.GameThreadSliceMS != 0 {
		if e := c.floatIn("server.game_thread_slice_ms", s.GameThreadSliceMS, 0.1, 100, " ms (or 0: the kernel's default)"); e != nil {
			return e
		}
	}
	if s.MemoryLimitMiB != 0 && s.MemoryLimitMiB != MemoryLimitAuto {
		return c.intIn("server.memory_limit_mib", s.MemoryLimitMiB, 16, 1<<20, " MiB (or 0: no limit, -1: automatic)")
	}
	return nil
}

func (c *Config) checkNetwork() *Error {
	n := &c.Network
	if n.Exposure != ExposurePrivate && n.Exposure != ExposureInternet {
		return c.refuse("network.exposure", n.Exposure, `must be "private" or "internet"`)
	}
	if n.BindAddress == "" {
		return c.refuse("network.bind_address", n.BindAddress,
			`must not be empty; write "127.0.0.1" or a LAN host/prefix like "192.168.1.20/24"`)
	}
	if c.Internet() {
		if _, err := policy.ParseInternet(n.BindAddress); err != nil {
			return c.refuse("network.bind_address", nil, err.Error())
		}
		if n.AllowV3 && c.givenExplicitly("network.allow_v3") {
			return c.refuse("network.allow_v3", n.AllowV3,
				`internet mode never accepts protocol v3 (it has no address validation); remove the key or set it to false`)
		}
		if !n.AddressValidation {
			return c.refuse("network.address_validation", n.AddressValidation,
				`internet mode always validates addresses; remove the key or set it to true`)
		}
	} else if _, err := policy.Parse(n.BindAddress); err != nil {
		msg := err.Error()
		if errors.Is(err, policy.ErrWildcard) || errors.Is(err, policy.ErrPublic) || errors.Is(err, policy.ErrIPv6) {
			msg += `; to face the internet, set network.exposure = "internet" (sparkhost run --internet)`
		}
		return c.refuse("network.bind_address", nil, msg)
	}
	if n.ConnectBurst < 1 || n.ConnectBurst > maxConnectBurst {
		return c.refuse("network.connect_burst", n.ConnectBurst, fmt.Sprintf("must be 1..%d datagrams", maxConnectBurst))
	}
	if !(n.ConnectRefillPerSecond >= minConnectRefill && n.ConnectRefillPerSecond <= maxConnectRefill) {
		return c.refuse("network.connect_refill_per_second", n.ConnectRefillPerSecond,
			"must be 0.001..1e9 datagrams per second")
	}
	budget := ratelimit.Config{Burst: n.ConnectBurst, RefillPerSecond: n.ConnectRefillPerSecond}
	if err := budget.Validate(); err != nil {
		return c.refuse("network.connect_burst", nil, err.Error())
	}
	if n.PrefixBurst < 1 || n.PrefixBurst > maxConnectBurst {
		return c.refuse("network.prefix_burst", n.PrefixBurst, fmt.Sprintf("must be 1..%d datagrams", maxConnectBurst))
	}
	if !(n.PrefixRefillPerSecond >= minConnectRefill && n.PrefixRefillPerSecond <= maxConnectRefill) {
		return c.refuse("network.prefix_refill_per_second", n.PrefixRefillPerSecond,
			"must be 0.001..1e9 datagrams per second")
	}
	if e := c.floatIn("network.handshakes_per_second", n.HandshakesPerSecond, 1, maxGlobalRate, " signatures per second"); e != nil {
		return e
	}
	if e := c.floatIn("network.unvalidated_replies_per_second", n.UnvalidatedRepliesPerSecond, 1, maxGlobalRate, " datagrams per second"); e != nil {
		return e
	}
	if e := c.floatIn("network.unvalidated_refusals_per_second", n.RefusalsPerSecond, 1, maxGlobalRate, " datagrams per second"); e != nil {
		return e
	}
	if e := c.intIn("network.admitted_per_address", n.AdmittedPerAddress, 0, maxClients, " clients (0 = no cap)"); e != nil {
		return e
	}
	if e := c.intIn("network.admitted_per_prefix", n.AdmittedPerPrefix, 0, maxClients, " clients (0 = no cap)"); e != nil {
		return e
	}
	if e := c.intIn("network.resume_seconds", n.ResumeSeconds, 0, 3600, " seconds (0 = no resumption)"); e != nil {
		return e
	}
	for _, cap := range []struct {
		key string
		v   int
	}{{"network.half_open_max", n.HalfOpenMax}, {"network.half_open_per_address", n.HalfOpenPerAddress}, {"network.half_open_per_prefix", n.HalfOpenPerPrefix}} {
		if e := c.intIn(cap.key, cap.v, 1, maxHalfOpen, " handshakes"); e != nil {
			return e
		}
	}
	if e := c.intIn("network.datagram_size", n.DatagramSize, wire.MinDatagramSize, wire.MaxDatagram, " bytes of UDP payload (1200 crosses every path)"); e != nil {
		return e
	}
	return c.floatIn("network.half_open_timeout", n.HalfOpenTimeout, 1, 60, " seconds")
}

// givenExplicitly reports whether key's value came from the file, a flag or
// the environment rather than the default (or code).
func (c *Config) givenExplicitly(key string) bool {
	line, label := c.origin.source(key)
	return line > 0 || (label != "" && label != "default")
}

func (c *Config) checkMatch() *Error {
	m := &c.Match
	if _, ok := parseGameMode(m.GameMode); !ok {
		return c.refuse("match.game_mode", m.GameMode, "must be one of "+strings.Join(gameModeNames[:], ", "))
	}
	if m.ScoreLimit < 0 {
		return c.refuse("match.score_limit", m.ScoreLimit, "must be 0 or more (0 = no limit)")
	}
	if e := c.floatIn("match.time_limit_minutes", m.TimeLimitMinutes, 0, 1440, " minutes (0 = no limit)"); e != nil {
		return e
	}
	if e := c.intIn("match.round_count", m.RoundCount, 1, 100, " rounds"); e != nil {
		return e
	}
	if len(m.MapRotation) == 0 {
		return c.refuse("match.map_rotation", m.MapRotation, "must name at least one map")
	}
	if e := c.checkList("match.map_rotation", m.MapRotation, maxMapNameLen); e != nil {
		return e
	}
	if m.ReplicationRate < 1 || m.ReplicationRate > c.Server.TickRate {
		return c.refuseVs("match.replication_rate", m.ReplicationRate, "server.tick_rate",
			fmt.Sprintf("must be 1..server.tick_rate (%d) Hz", c.Server.TickRate))
	}
	if e := c.intIn("match.snapshot_history_size", m.SnapshotHistorySize, 1, 4096, " snapshots"); e != nil {
		return e
	}
	if e := c.floatIn("match.warmup_seconds", m.WarmupSeconds, 0, 600, " seconds"); e != nil {
		return e
	}
	if e := c.floatIn("match.intermission_seconds", m.IntermissionSeconds, 0, 600, " seconds"); e != nil {
		return e
	}
	if e := c.floatIn("match.interest_radius", m.InterestRadius, 0, 1e6, " units (0 = no limit)"); e != nil {
		return e
	}
	if e := c.intIn("match.update_repeats", m.UpdateRepeats, 1, 64, " frames"); e != nil {
		return e
	}
	return c.floatIn("match.refresh_seconds", m.RefreshSeconds, 0, 60, " seconds (0 = never)")
}

func (c *Config) checkLAN() *Error {
	if e := c.intIn("lan.port", c.LAN.Port, 1, 65535, ""); e != nil {
		return e
	}
	if c.LAN.Enabled && c.Internet() {
		return c.refuseVs("lan.enabled", c.LAN.Enabled, "network.exposure",
			`LAN discovery is for private binds; set it to false in internet mode`)
	}
	if c.LAN.Port == c.Server.Port {
		return c.refuseVs("lan.port", c.LAN.Port, "server.port",
			fmt.Sprintf("must differ from server.port (%d)", c.Server.Port))
	}
	return nil
}

func (c *Config) checkLogging() *Error {
	for _, l := range logLevels {
		if c.Logging.Level == l {
			return nil
		}
	}
	return c.refuse("logging.level", c.Logging.Level, "must be one of "+strings.Join(logLevels[:], ", "))
}

func (c *Config) checkModules() *Error {
	m := &c.Modules
	if e := c.checkList("modules.load", m.Load, 0); e != nil {
		return e
	}
	if e := c.intIn("modules.inbox_capacity", m.InboxCapacity, 16, 1_000_000, " events"); e != nil {
		return e
	}
	if !(m.TickBudgetFraction > 0 && m.TickBudgetFraction <= 1) {
		return c.refuse("modules.tick_budget_fraction", m.TickBudgetFraction, "must be above 0 and at most 1")
	}
	if e := c.floatIn("modules.plugin_hang_timeout", m.PluginHangTimeout, 1, 3600, " seconds"); e != nil {
		return e
	}
	if e := c.intIn("modules.plugin_memory_mib", m.PluginMemoryMiB, 16, 1<<20, " MiB"); e != nil {
		return e
	}
	if e := c.floatIn("modules.plugin_log_lines_per_second", m.PluginLogLinesPerSecond, 0.1, 100_000, " lines per second"); e != nil {
		return e
	}
	if e := c.intIn("modules.plugin_log_burst", m.PluginLogBurst, 1, 100_000, " lines"); e != nil {
		return e
	}
	if m.PluginAnswers != "same_tick" && m.PluginAnswers != "next_tick" {
		return c.refuse("modules.plugin_answers", m.PluginAnswers, `must be "same_tick" or "next_tick"`)
	}
	if e := c.intIn("modules.plugin_nice", m.PluginNice, 0, 19, ""); e != nil {
		return e
	}
	if e := c.floatIn("modules.restart_backoff", m.RestartBackoff, 0.01, 3600, " seconds"); e != nil {
		return e
	}
	if !(m.RestartBackoffMax >= m.RestartBackoff && m.RestartBackoffMax <= maxRestartSeconds) {
		return c.refuseVs("modules.restart_backoff_max", m.RestartBackoffMax, "modules.restart_backoff",
			fmt.Sprintf("must be modules.restart_backoff (%s)..%d seconds", formatFloat(m.RestartBackoff), maxRestartSeconds))
	}
	if e := c.intIn("modules.max_restarts", m.MaxRestarts, 1, 1000, " crashes"); e != nil {
		return e
	}
	if e := c.floatIn("modules.restart_window", m.RestartWindow, 1, maxRestartSeconds, " seconds"); e != nil {
		return e
	}
	return c.checkDigests("modules.sha256", m.SHA256)
}

func (c *Config) checkLimits() *Error {
	l := &c.Limits
	if e := c.floatIn("limits.chat_per_second", l.ChatPerSecond, 0.01, 1000, " messages per second"); e != nil {
		return e
	}
	if e := c.intIn("limits.chat_burst", l.ChatBurst, 1, 1000, " messages"); e != nil {
		return e
	}
	if e := c.intIn("limits.chat_kick_after", l.ChatKickAfter, 0, 100_000, " messages (0 = never)"); e != nil {
		return e
	}
	return c.intIn("limits.module_messages_per_tick", l.ModuleMessagesPerTick, 1, 100_000, " messages")
}

// maxRestartSeconds (a day) bounds modules.restart_backoff_max and
// modules.restart_window.
const maxRestartSeconds = 86400

// checkDigests refuses an entry of a path → SHA-256 table whose path is empty
// or whose digest is not 64 lowercase hex digits; entries are checked in the
// file's order.
func (c *Config) checkDigests(key string, table map[string]string) *Error {
	paths := slices.Collect(maps.Keys(table))
	entryKey := func(path string) string { return key + "." + toml.Key{path}.String() }
	slices.SortFunc(paths, func(a, b string) int {
		la, _ := c.origin.source(entryKey(a))
		lb, _ := c.origin.source(entryKey(b))
		return cmp.Or(cmp.Compare(la, lb), strings.Compare(a, b))
	})
	for _, path := range paths {
		entry, digest := entryKey(path), table[path]
		switch {
		case path == "":
			return c.refuse(entry, digest, "the path must not be empty; write the plugin's path as modules.load or --module names it")
		case len(digest) != 2*sha256.Size:
			return c.refuse(entry, digest, fmt.Sprintf("must be a SHA-256 in lowercase hex: %d digits, not %d", 2*sha256.Size, len(digest)))
		case strings.Trim(digest, "0123456789abcdef") != "":
			return c.refuse(entry, digest, "must be a SHA-256 in lowercase hex: digits 0-9 and a-f only")
		}
	}
	return nil
}

// checkList refuses empty entries, entries longer than maxLen bytes (0: no
// bound) and repeats.
func (c *Config) checkList(key string, list []string, maxLen int) *Error {
	for i, s := range list {
		elem := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case s == "":
			return c.refuseAt(key, elem, s, "", "must not be empty")
		case maxLen > 0 && len(s) > maxLen:
			return c.refuseAt(key, elem, s, "", fmt.Sprintf("must be 1..%d bytes, not %d", maxLen, len(s)))
		}
		for j := range i {
			if list[j] == s {
				return c.refuseAt(key, elem, s, "", fmt.Sprintf("duplicate of %s[%d]", key, j))
			}
		}
	}
	return nil
}

func (c *Config) intIn(key string, v, lo, hi int, unit string) *Error {
	if v < lo || v > hi {
		return c.refuse(key, v, fmt.Sprintf("must be %d..%d%s", lo, hi, unit))
	}
	return nil
}

// floatIn refuses v outside lo..hi, NaN included.
func (c *Config) floatIn(key string, v, lo, hi float64, unit string) *Error {
	if !(v >= lo && v <= hi) {
		return c.refuse(key, v, fmt.Sprintf("must be %s..%s%s", formatFloat(lo), formatFloat(hi), unit))
	}
	return nil
}

// refuse reports key's value v (nil: not shown) with reason.
func (c *Config) refuse(key string, v any, reason string) *Error {
	return c.refuseAt(key, key, v, "", reason)
}

// refuseVs reports key's value v, which a rule compares with related's.
func (c *Config) refuseVs(key string, v any, related, reason string) *Error {
	return c.refuseAt(key, key, v, related, reason)
}

// refuseAt builds the *Error: shown is what the message calls the value
// ("match.map_rotation[2]"), key whose source is looked up.
func (c *Config) refuseAt(key, shown string, v any, related, reason string) *Error {
	line, label := c.origin.source(key)
	if line == 0 && related != "" {
		line, _ = c.origin.source(related)
	}
	var b strings.Builder
	b.WriteString(shown)
	if v != nil {
		b.WriteString(" = ")
		b.WriteString(formatValue(v))
	}
	if label != "" {
		b.WriteString(" (" + label + ")")
	}
	b.WriteString(": " + reason)
	return &Error{File: c.origin.fileName(), Line: line, Key: key, Msg: b.String()}
}

// formatValue writes v as TOML would.
func formatValue(v any) string {
	switch v := v.(type) {
	case int:
		return strconv.Itoa(v)
	case float64:
		return formatFloat(v)
	case string:
		return strconv.Quote(v)
	case []string:
		quoted := make([]string, len(v))
		for i, s := range v {
			quoted[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
