package config

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// values returns c without its record of where values came from, for
// comparing values alone.
func values(c Config) Config {
	c.origin = nil
	return c
}

func TestDefaultTOMLParsesToDefault(t *testing.T) {
	got, err := Parse(DefaultTOML, "config.toml")
	if err != nil {
		t.Fatalf("Parse(DefaultTOML): %v", err)
	}
	if want := Default(); !reflect.DeepEqual(values(got), want) {
		t.Errorf("Parse(DefaultTOML) =\n%+v\nwant Default() =\n%+v", values(got), want)
	}
	d := Default()
	if err := d.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

// The repository's config.toml is the documented default; the embedded copy
// must never drift from it.
func TestRepoConfigIsDefaultTOML(t *testing.T) {
	repo, err := os.ReadFile("../../config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(repo, DefaultTOML) {
		t.Error("config.toml at the repository root differs from host/config/default.toml; copy one over the other")
	}
}

// Every key of the schema appears in DefaultTOML, sections in Config's order.
func TestDefaultTOMLDocumentsEveryKey(t *testing.T) {
	var raw map[string]any
	md, err := toml.Decode(string(DefaultTOML), &raw)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, k := range md.Keys() {
		got = append(got, k.String())
	}
	for _, sec := range schema {
		want = append(want, sec.key)
		for _, f := range sec.fields {
			want = append(want, sec.key+"."+f.key)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultTOML keys, in order:\n%v\nwant\n%v", got, want)
	}
}

func TestDefaultIsFresh(t *testing.T) {
	a := Default()
	a.Match.MapRotation[0] = "changed"
	a.Modules.Load = append(a.Modules.Load, "x")
	a.Modules.SHA256["x"] = digest
	if b := Default(); b.Match.MapRotation[0] != "arena" || len(b.Modules.Load) != 0 || len(b.Modules.SHA256) != 0 {
		t.Errorf("Default() shares slices or maps between calls: %v %v %v", b.Match.MapRotation, b.Modules.Load, b.Modules.SHA256)
	}
}

// The restart keys and the [modules.sha256] table, in each of TOML's
// spellings of a table.
func TestModuleRestartAndDigestKeys(t *testing.T) {
	const other = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	want := Default()
	want.Modules.Load = []string{"plugins/ctf", "./mods/stats"}
	want.Modules.PluginHangTimeout = 30
	want.Modules.PluginMemoryMiB = 64
	want.Modules.PluginLogLinesPerSecond = 10
	want.Modules.PluginLogBurst = 20
	want.Modules.RestartBackoff = 0.5
	want.Modules.RestartBackoffMax = 8
	want.Modules.MaxRestarts = 3
	want.Modules.RestartWindow = 60
	want.Modules.SHA256 = map[string]string{"plugins/ctf": digest, "./mods/stats": other}
	head := "[modules]\nload = [\"plugins/ctf\", \"./mods/stats\"]\nplugin_hang_timeout = 30\nplugin_memory_mib = 64\n" +
		"plugin_log_lines_per_second = 10\nplugin_log_burst = 20\nrestart_backoff = 0.5\n" +
		"restart_backoff_max = 8\nmax_restarts = 3\nrestart_window = 60\n"
	for name, table := range map[string]string{
		"sub-table":    "\n[modules.sha256]\n\"plugins/ctf\" = \"" + digest + "\"\n'./mods/stats' = \"" + other + "\"\n",
		"inline table": "sha256 = { \"plugins/ctf\" = \"" + digest + "\", \"./mods/stats\" = \"" + other + "\" }\n",
		"dotted keys":  "sha256.\"plugins/ctf\" = \"" + digest + "\"\nsha256.\"./mods/stats\" = \"" + other + "\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(head+table), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(values(c), want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", values(c).Modules, want.Modules)
			}
			sum, ok := c.PluginSHA256("plugins/ctf")
			if !ok || hex.EncodeToString(sum[:]) != digest {
				t.Errorf("PluginSHA256(plugins/ctf) = %x, %v", sum, ok)
			}
			if _, ok := c.PluginSHA256("plugins/ctf.exe"); ok {
				t.Error("PluginSHA256 of an unlisted path reported a digest")
			}
		})
	}
}

const hint = "; bind to 127.0.0.1 or a LAN host/prefix like 192.168.1.20/24"

// internetHint follows the refusal of a bind that only internet mode allows.
const internetHint = `; to face the internet, set network.exposure = "internet" (sparkhost run --internet)`

// digest is a well-formed SHA-256 in lowercase hex (of "test").
const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestBadFiles(t *testing.T) {
	cases := []struct {
		name, file string
		want       string // exact Error()
		line       int
		key        string
	}{
		{"unknown key in a section", "[server]\nport = 27015\ncolour = \"red\"\n",
			`config.toml:3: unknown key "server.colour" (known keys in [server]: name, motd, port, max_clients, tick_rate, client_timeout, heartbeat_interval, data_dir, memory_limit_mib, game_thread_slice_ms)`,
			3, "server.colour"},
		{"unknown key at the top level", "port = 27015\n\n[server]\nname = \"x\"\n",
			`config.toml:1: unknown key "port" outside any section (known sections: server, network, match, lan, logging, modules, limits, ops, agones, rooms, web)`,
			1, "port"},
		{"unknown section", "[server]\nport = 27015\n\n[colour]\nsky = \"blue\"\n",
			`config.toml:4: unknown section [colour] (known sections: server, network, match, lan, logging, modules, limits, ops, agones, rooms, web)`,
			4, "colour"},
		{"unknown sub-table", "[server]\nport = 27015\n\n[server.extra]\nx = 1\n",
			`config.toml:4: unknown key "server.extra" (known keys in [server]: name, motd, port, max_clients, tick_rate, client_timeout, heartbeat_interval, data_dir, memory_limit_mib, game_thread_slice_ms)`,
			4, "server.extra"},
		{"string for an integer", "[server]\nname = \"x\"\nport = \"high\"\n",
			`config.toml:3: server.port: expected an integer, got a string`, 3, "server.port"},
		{"integer for a string", "[server]\nname = 5\n",
			`config.toml:2: server.name: expected a string, got an integer`, 2, "server.name"},
		{"string for an array", "[match]\nmap_rotation = \"arena\"\n",
			`config.toml:2: match.map_rotation: expected an array of strings, got a string`, 2, "match.map_rotation"},
		{"integer in an array of strings", "[match]\nmap_rotation = [\n  \"arena\",\n  3,\n]\n",
			`config.toml:2: match.map_rotation[1]: expected a string, got an integer`, 2, "match.map_rotation"},
		{"float for an integer", "[server]\nmax_clients = 32.0\n",
			`config.toml:2: server.max_clients: expected an integer, got a float`, 2, "server.max_clients"},
		{"string for a number", "[server]\nclient_timeout = \"10s\"\n",
			`config.toml:2: server.client_timeout: expected a number, got a string`, 2, "server.client_timeout"},
		{"string for a boolean", "[lan]\nenabled = \"yes\"\n",
			`config.toml:2: lan.enabled: expected a boolean, got a string`, 2, "lan.enabled"},
		{"table for an integer", "[server]\nport.low = 1\n",
			`config.toml:2: server.port: expected an integer, got a table`, 2, "server.port"},
		{"section that is not a table", "server = 27015\n",
			`config.toml:1: server: expected a table, got an integer`, 1, "server"},
		{"port above range", "[server]\nname = \"x\"\n\n# the game port\nport = 70000\n",
			`config.toml:5: server.port = 70000: must be 0..65535`, 5, "server.port"},
		{"port below range", "[server]\nport = -1\n",
			`config.toml:2: server.port = -1: must be 0..65535`, 2, "server.port"},
		{"no client slots", "[server]\nmax_clients = 0\n",
			`config.toml:2: server.max_clients = 0: must be 1..65536`, 2, "server.max_clients"},
		{"no ticks", "[server]\ntick_rate = 0\n",
			`config.toml:2: server.tick_rate = 0: must be 1..1000 Hz`, 2, "server.tick_rate"},
		{"client timeout too short", "[server]\nclient_timeout = 0.5\n",
			`config.toml:2: server.client_timeout = 0.5: must be 1..600 seconds`, 2, "server.client_timeout"},
		{"heartbeat equal to timeout", "[server]\nclient_timeout = 5\nheartbeat_interval = 5.0\n",
			`config.toml:3: server.heartbeat_interval = 5: must be below server.client_timeout (5)`, 3, "server.heartbeat_interval"},
		{"default heartbeat above the file's timeout", "[server]\nclient_timeout = 1\n",
			`config.toml:2: server.heartbeat_interval = 1 (default): must be below server.client_timeout (1)`, 2, "server.heartbeat_interval"},
		{"heartbeat zero", "[server]\nheartbeat_interval = 0\n",
			`config.toml:2: server.heartbeat_interval = 0: must be above 0 seconds`, 2, "server.heartbeat_interval"},
		{"empty data dir", "[server]\ndata_dir = \"\"\n",
			`config.toml:2: server.data_dir = "": must not be empty`, 2, "server.data_dir"},
		{"wildcard bind", "[network]\nbind_address = \"0.0.0.0\"\n",
			`config.toml:2: network.bind_address: policy: "0.0.0.0": wildcard address not allowed` + hint + internetHint, 2, "network.bind_address"},
		{"public bind", "[network]\nbind_address = \"8.8.8.8\"\n",
			`config.toml:2: network.bind_address: policy: "8.8.8.8": public address not allowed: sparkhost serves loopback and LAN peers only` + hint + internetHint,
			2, "network.bind_address"},
		{"shorthand bind", "[network]\nbind_address = \"127.1\"\n",
			`config.toml:2: network.bind_address: policy: "127.1": not a canonical IPv4 address: 2 octets, want 4 (shorthand like 127.1 is not allowed); write canonical dotted-decimal IPv4 such as 127.0.0.1 or 192.168.1.20/24`,
			2, "network.bind_address"},
		{"empty bind", "[network]\nbind_address = \"\"\n",
			`config.toml:2: network.bind_address = "": must not be empty; write "127.0.0.1" or a LAN host/prefix like "192.168.1.20/24"`,
			2, "network.bind_address"},
		{"datagram below 1200", "[network]\ndatagram_size = 576\n",
			`config.toml:2: network.datagram_size = 576: must be 1200..65507 bytes of UDP payload (1200 crosses every path)`, 2, "network.datagram_size"},
		{"resume over an hour", "[network]\nresume_seconds = 3601\n",
			`config.toml:2: network.resume_seconds = 3601: must be 0..3600 seconds (0 = no resumption)`, 2, "network.resume_seconds"},
		{"no connect burst", "[network]\nconnect_burst = 0\n",
			`config.toml:2: network.connect_burst = 0: must be 1..1048576 datagrams`, 2, "network.connect_burst"},
		{"no connect refill", "[network]\nconnect_refill_per_second = 0.0\n",
			`config.toml:2: network.connect_refill_per_second = 0: must be 0.001..1e9 datagrams per second`, 2, "network.connect_refill_per_second"},
		{"nan connect refill", "[network]\nconnect_refill_per_second = nan\n",
			`config.toml:2: network.connect_refill_per_second = nan: must be 0.001..1e9 datagrams per second`, 2, "network.connect_refill_per_second"},
		{"unknown game mode", "[match]\ngame_mode = \"quake\"\n",
			`config.toml:2: match.game_mode = "quake": must be one of deathmatch, team_deathmatch, capture_the_flag, domination, search_and_destroy, free_for_all, custom`,
			2, "match.game_mode"},
		{"negative score limit", "[match]\nscore_limit = -5\n",
			`config.toml:2: match.score_limit = -5: must be 0 or more (0 = no limit)`, 2, "match.score_limit"},
		{"time limit above a day", "[match]\ntime_limit_minutes = 1441\n",
			`config.toml:2: match.time_limit_minutes = 1441: must be 0..1440 minutes (0 = no limit)`, 2, "match.time_limit_minutes"},
		{"no rounds", "[match]\nround_count = 0\n",
			`config.toml:2: match.round_count = 0: must be 1..100 rounds`, 2, "match.round_count"},
		{"empty map rotation", "[match]\nmap_rotation = []\n",
			`config.toml:2: match.map_rotation = []: must name at least one map`, 2, "match.map_rotation"},
		{"duplicate map", "[match]\nmap_rotation = [\"arena\", \"warehouse\", \"arena\"]\n",
			`config.toml:2: match.map_rotation[2] = "arena": duplicate of match.map_rotation[0]`, 2, "match.map_rotation"},
		{"empty map name", "[match]\nmap_rotation = [\"arena\", \"\"]\n",
			`config.toml:2: match.map_rotation[1] = "": must not be empty`, 2, "match.map_rotation"},
		{"long map name", "[match]\nmap_rotation = [\"" + strings.Repeat("m", 65) + "\"]\n",
			`config.toml:2: match.map_rotation[0] = "` + strings.Repeat("m", 65) + `": must be 1..64 bytes, not 65`, 2, "match.map_rotation"},
		{"replication above tick rate", "[server]\ntick_rate = 30\n\n[match]\nreplication_rate = 31\n",
			`config.toml:5: match.replication_rate = 31: must be 1..server.tick_rate (30) Hz`, 5, "match.replication_rate"},
		{"default replication above the file's tick rate", "[server]\ntick_rate = 10\n",
			`config.toml:2: match.replication_rate = 20 (default): must be 1..server.tick_rate (10) Hz`, 2, "match.replication_rate"},
		{"no snapshot history", "[match]\nsnapshot_history_size = 0\n",
			`config.toml:2: match.snapshot_history_size = 0: must be 1..4096 snapshots`, 2, "match.snapshot_history_size"},
		{"negative warmup", "[match]\nwarmup_seconds = -1\n",
			`config.toml:2: match.warmup_seconds = -1: must be 0..600 seconds`, 2, "match.warmup_seconds"},
		{"long intermission", "[match]\nintermission_seconds = 601\n",
			`config.toml:2: match.intermission_seconds = 601: must be 0..600 seconds`, 2, "match.intermission_seconds"},
		{"lan port is the game port", "[server]\nport = 27015\n\n[lan]\nenabled = true\nport = 27015\n",
			`config.toml:6: lan.port = 27015: must differ from server.port (27015)`, 6, "lan.port"},
		{"game port is the default lan port", "[server]\nport = 27016\n",
			`config.toml:2: lan.port = 27016 (default): must differ from server.port (27016)`, 2, "lan.port"},
		{"lan port zero", "[lan]\nport = 0\n",
			`config.toml:2: lan.port = 0: must be 1..65535`, 2, "lan.port"},
		{"bad log level", "[logging]\nlevel = \"verbose\"\n",
			`config.toml:2: logging.level = "verbose": must be one of debug, info, warn, error`, 2, "logging.level"},
		{"duplicate module", "[modules]\nload = [\"ctf\", \"./mods/ctf\", \"ctf\"]\n",
			`config.toml:2: modules.load[2] = "ctf": duplicate of modules.load[0]`, 2, "modules.load"},
		{"small inbox", "[modules]\ninbox_capacity = 8\n",
			`config.toml:2: modules.inbox_capacity = 8: must be 16..1000000 events`, 2, "modules.inbox_capacity"},
		{"no tick budget", "[modules]\ntick_budget_fraction = 0.0\n",
			`config.toml:2: modules.tick_budget_fraction = 0: must be above 0 and at most 1`, 2, "modules.tick_budget_fraction"},
		{"unknown key in [modules]", "[modules]\ncolour = 1\n",
			`config.toml:2: unknown key "modules.colour" (known keys in [modules]: load, inbox_capacity, tick_budget_fraction, restart_backoff, restart_backoff_max, max_restarts, restart_window, plugin_hang_timeout, plugin_memory_mib, plugin_log_lines_per_second, plugin_log_burst, plugin_answers, plugin_nice, sha256)`,
			2, "modules.colour"},
		{"removed tick_deadline", "[modules]\ntick_deadline = 0.25\n",
			`config.toml:2: modules.tick_deadline was removed: the server no longer kills a Go plugin for one slow tick. ` +
				`It waits for a plugin's answer modules.tick_budget_fraction of the tick (a later answer applies at a later tick) ` +
				`and kills only a plugin that leaves a call unanswered for modules.plugin_hang_timeout seconds (default 10); delete the line`,
			2, "modules.tick_deadline"},
		{"hang timeout too short", "[modules]\nplugin_hang_timeout = 0.5\n",
			`config.toml:2: modules.plugin_hang_timeout = 0.5: must be 1..3600 seconds`, 2, "modules.plugin_hang_timeout"},
		{"server memory limit too small", "[server]\nmemory_limit_mib = 8\n",
			`config.toml:2: server.memory_limit_mib = 8: must be 16..1048576 MiB (or 0: no limit, -1: automatic)`, 2, "server.memory_limit_mib"},
		{"game thread slice below the kernel's least", "[server]\ngame_thread_slice_ms = 0.05\n",
			`config.toml:2: server.game_thread_slice_ms = 0.05: must be 0.1..100 ms (or 0: the kernel's default)`, 2, "server.game_thread_slice_ms"},
		{"game thread slice above the kernel's most", "[server]\ngame_thread_slice_ms = 150.0\n",
			`config.toml:2: server.game_thread_slice_ms = 150: must be 0.1..100 ms (or 0: the kernel's default)`, 2, "server.game_thread_slice_ms"},
		{"memory cap too small", "[modules]\nplugin_memory_mib = 8\n",
			`config.toml:2: modules.plugin_memory_mib = 8: must be 16..1048576 MiB`, 2, "modules.plugin_memory_mib"},
		{"no log rate", "[modules]\nplugin_log_lines_per_second = 0\n",
			`config.toml:2: modules.plugin_log_lines_per_second = 0: must be 0.1..100000 lines per second`, 2, "modules.plugin_log_lines_per_second"},
		{"no log burst", "[modules]\nplugin_log_burst = 0\n",
			`config.toml:2: modules.plugin_log_burst = 0: must be 1..100000 lines`, 2, "modules.plugin_log_burst"},
		{"plugin nice past 19", "[modules]\nplugin_nice = 20\n",
			`config.toml:2: modules.plugin_nice = 20: must be 0..19`, 2, "modules.plugin_nice"},
		{"no restart backoff", "[modules]\nrestart_backoff = 0\n",
			`config.toml:2: modules.restart_backoff = 0: must be 0.01..3600 seconds`, 2, "modules.restart_backoff"},
		{"restart backoff above an hour", "[modules]\nrestart_backoff = 3601.0\n",
			`config.toml:2: modules.restart_backoff = 3601: must be 0.01..3600 seconds`, 2, "modules.restart_backoff"},
		{"restart backoff max below the backoff", "[modules]\nrestart_backoff = 10\nrestart_backoff_max = 5\n",
			`config.toml:3: modules.restart_backoff_max = 5: must be modules.restart_backoff (10)..86400 seconds`, 3, "modules.restart_backoff_max"},
		{"default restart backoff max below the file's backoff", "[modules]\nrestart_backoff = 60\n",
			`config.toml:2: modules.restart_backoff_max = 30 (default): must be modules.restart_backoff (60)..86400 seconds`, 2, "modules.restart_backoff_max"},
		{"restart backoff max above a day", "[modules]\nrestart_backoff_max = 86401\n",
			`config.toml:2: modules.restart_backoff_max = 86401: must be modules.restart_backoff (1)..86400 seconds`, 2, "modules.restart_backoff_max"},
		{"no restarts", "[modules]\nmax_restarts = 0\n",
			`config.toml:2: modules.max_restarts = 0: must be 1..1000 crashes`, 2, "modules.max_restarts"},
		{"float for max restarts", "[modules]\nmax_restarts = 5.0\n",
			`config.toml:2: modules.max_restarts: expected an integer, got a float`, 2, "modules.max_restarts"},
		{"short restart window", "[modules]\nrestart_window = 0.5\n",
			`config.toml:2: modules.restart_window = 0.5: must be 1..86400 seconds`, 2, "modules.restart_window"},
		{"long restart window", "[modules]\nrestart_window = 86401\n",
			`config.toml:2: modules.restart_window = 86401: must be 1..86400 seconds`, 2, "modules.restart_window"},
		{"sha256 not a table", "[modules]\nsha256 = \"abc\"\n",
			`config.toml:2: modules.sha256: expected a table of strings, got a string`, 2, "modules.sha256"},
		{"sha256 array of tables", "[[modules.sha256]]\nx = \"a\"\n",
			`config.toml:1: modules.sha256: expected a table of strings, got an array of tables`, 1, "modules.sha256"},
		{"sha256 entry not a string", "[modules.sha256]\n# the ctf plugin\n\"plugins/ctf\" = 5\n",
			`config.toml:3: modules.sha256."plugins/ctf": expected a string, got an integer`, 3, `modules.sha256."plugins/ctf"`},
		{"sha256 entry a table", "[modules.sha256]\nctf.x = \"a\"\n",
			`config.toml:2: modules.sha256.ctf: expected a string, got a table`, 2, "modules.sha256.ctf"},
		{"sha256 inline table entry not a string", "[modules]\nsha256 = { ctf = 1 }\n",
			`config.toml:2: modules.sha256.ctf: expected a string, got an integer`, 2, "modules.sha256.ctf"},
		{"short sha256", "[modules]\nload = [\"plugins/ctf\"]\n\n[modules.sha256]\n\"plugins/ctf\" = \"abc\"\n",
			`config.toml:5: modules.sha256."plugins/ctf" = "abc": must be a SHA-256 in lowercase hex: 64 digits, not 3`, 5, `modules.sha256."plugins/ctf"`},
		{"upper-case sha256", "[modules.sha256]\nctf = \"" + strings.ToUpper(digest) + "\"\n",
			`config.toml:2: modules.sha256.ctf = "` + strings.ToUpper(digest) + `": must be a SHA-256 in lowercase hex: digits 0-9 and a-f only`, 2, "modules.sha256.ctf"},
		{"empty sha256 path", "[modules.sha256]\n\"\" = \"" + digest + "\"\n",
			`config.toml:2: modules.sha256."" = "` + digest + `": the path must not be empty; write the plugin's path as modules.load or --module names it`, 2, `modules.sha256.""`},
		{"first bad sha256 in file order", "[modules.sha256]\nzz = \"x\"\naa = \"y\"\n",
			`config.toml:2: modules.sha256.zz = "x": must be a SHA-256 in lowercase hex: 64 digits, not 1`, 2, "modules.sha256.zz"},
		{"syntax error in a value", "[server]\nname = \"x\"\nport = \n",
			`config.toml:3: server.port: syntax error: expected value but found '\n' instead`, 3, "server.port"},
		{"syntax error in a header", "[server]\nport = 27015\n[match\n",
			`config.toml:4: syntax error: expected '.' or ']' to end table name, but got '\n' instead`, 4, ""},
		{"unterminated string", "[server]\nname = \"sparkhost\nport = 1\n",
			`config.toml:2: server.name: syntax error: strings cannot contain newlines`, 2, "server.name"},
		{"key defined twice", "[server]\nport = 1\nport = 2\n",
			`config.toml:3: syntax error: Key 'server.port' has already been defined.`, 3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), "config.toml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tc.file)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, want *Error", err)
			}
			if e.File != "config.toml" || e.Line != tc.line || e.Key != tc.key {
				t.Errorf("Error{File: %q, Line: %d, Key: %q}, want {config.toml, %d, %q}", e.File, e.Line, e.Key, tc.line, tc.key)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message spans lines: %q", err)
			}
		})
	}
}

// A file sets only what it names; integers are accepted for numbers; an array
// replaces the default one rather than merging into it.
func TestPartialFile(t *testing.T) {
	const file = `
[server]
port = 0              # any free port
client_timeout = 30   # an integer for a number
game_thread_slice_ms = 0.3  # a short slice

[match]
game_mode = "capture_the_flag"
map_rotation = [
  "docks", # comments between elements
]

[modules]
load = ["ctf"]
`
	got, err := Parse([]byte(file), "partial.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Server.Port = 0
	want.Server.ClientTimeout = 30
	want.Server.GameThreadSliceMS = 0.3
	want.Match.GameMode = "capture_the_flag"
	want.Match.MapRotation = []string{"docks"}
	want.Modules.Load = []string{"ctf"}
	if !reflect.DeepEqual(values(got), want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", values(got), want)
	}
	if got.GameMode() != gamemsg.ModeCaptureTheFlag {
		t.Errorf("GameMode() = %v", got.GameMode())
	}
	if got.GameThreadSlice() != 300*time.Microsecond {
		t.Errorf("GameThreadSlice() = %v, want 300µs", got.GameThreadSlice())
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	got, err := Parse(nil, "empty.toml")
	if err != nil || !reflect.DeepEqual(values(got), Default()) {
		t.Errorf("Parse(empty) = %+v, %v; want Default()", got, err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("[server]\nport = 70000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := path + ":2: server.port = 70000: must be 0..65535"; err == nil || err.Error() != want {
		t.Errorf("Load = %v; want %s", err, want)
	}
	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "config: open ") {
		t.Errorf("Load(missing) = %v; want a wrapped fs.ErrNotExist", err)
	}
	if err := os.WriteFile(path, DefaultTOML, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || !reflect.DeepEqual(values(c), Default()) {
		t.Errorf("Load(default file) = %v", err)
	}
}

func TestDurations(t *testing.T) {
	c := Default()
	c.Match.TimeLimitMinutes = 1.5
	c.Match.WarmupSeconds = 2.5
	checks := []struct {
		name      string
		got, want time.Duration
	}{
		{"TickPeriod", c.TickPeriod(), 16666666 * time.Nanosecond},
		{"ClientTimeoutDuration", c.ClientTimeoutDuration(), 10 * time.Second},
		{"HeartbeatDuration", c.HeartbeatDuration(), time.Second},
		{"WarmupDuration", c.WarmupDuration(), 2500 * time.Millisecond},
		{"IntermissionDuration", c.IntermissionDuration(), 10 * time.Second},
		{"TimeLimit", c.TimeLimit(), 90 * time.Second},
		{"PluginHangTimeout", c.PluginHangTimeout(), 10 * time.Second},
		{"RestartBackoff", c.RestartBackoff(), time.Second},
		{"RestartBackoffMax", c.RestartBackoffMax(), 30 * time.Second},
		{"RestartWindow", c.RestartWindow(), 10 * time.Minute},
		{"GameThreadSlice", c.GameThreadSlice(), 0},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s() = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if got := c.PluginMemoryLimit(); got != 512<<20 {
		t.Errorf("PluginMemoryLimit() = %d, want 512 MiB", got)
	}
	c.Match.TimeLimitMinutes = 0
	c.Server.TickRate = 0
	if c.TimeLimit() != 0 || c.TickPeriod() != 0 {
		t.Errorf("TimeLimit() = %v, TickPeriod() = %v; want 0 for no limit and an invalid rate", c.TimeLimit(), c.TickPeriod())
	}
}

func TestGameModes(t *testing.T) {
	modes := map[string]gamemsg.GameMode{
		"deathmatch": gamemsg.ModeDeathmatch, "team_deathmatch": gamemsg.ModeTeamDeathmatch,
		"capture_the_flag": gamemsg.ModeCaptureTheFlag, "domination": gamemsg.ModeDomination,
		"search_and_destroy": gamemsg.ModeSearchAndDestroy, "free_for_all": gamemsg.ModeFreeForAll,
		"custom": gamemsg.ModeCustom,
	}
	for name, want := range modes {
		c := Default()
		c.Match.GameMode = name
		if err := c.Validate(); err != nil || c.GameMode() != want {
			t.Errorf("game_mode %q: GameMode() = %v, Validate() = %v; want %v", name, c.GameMode(), err, want)
		}
	}
	if len(modes) != len(gameModeNames) {
		t.Errorf("%d modes tested, %d known", len(modes), len(gameModeNames))
	}
}

func ptr[T any](v T) *T { return &v }

// envOf is an environment holding only SPARK_NETWORK_BIND_ADDRESS=bind, or
// nothing for "".
func envOf(bind string) func(string) string {
	return func(name string) string {
		if name == "SPARK_NETWORK_BIND_ADDRESS" {
			return bind
		}
		return ""
	}
}

func TestBindPrecedence(t *testing.T) {
	cases := []struct {
		name            string
		flag            *string // --bind; nil: not given
		env, file, want string  // "": not set
	}{
		{name: "default", want: "127.0.0.1"},
		{name: "file over default", file: "192.168.1.20/24", want: "192.168.1.20/24"},
		{name: "env over file", env: "10.0.0.5/8", file: "192.168.1.20/24", want: "10.0.0.5/8"},
		{name: "env over default", env: "10.0.0.5/8", want: "10.0.0.5/8"},
		{name: "flag over env and file", flag: ptr("127.0.0.2"), env: "10.0.0.5/8", file: "192.168.1.20/24", want: "127.0.0.2"},
		{name: "flag over default", flag: ptr("127.0.0.2"), want: "127.0.0.2"},
		{name: "empty flag is not given", flag: ptr(""), env: "10.0.0.5/8", file: "192.168.1.20/24", want: "10.0.0.5/8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = "[network]\nbind_address = \"" + tc.file + "\"\n"
			}
			c, err := Parse([]byte(file), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			c.Apply(Overrides{Bind: tc.flag}, envOf(tc.env))
			if c.Network.BindAddress != tc.want {
				t.Errorf("bind_address = %q, want %q", c.Network.BindAddress, tc.want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

// A refused value names where it came from; a bad higher-precedence value is
// an error, never a silent fallback to a lower one.
func TestRefusedOverrideNamesItsSource(t *testing.T) {
	file := []byte("[server]\nport = 27020\n\n[network]\nbind_address = \"192.168.1.20/24\"\n")
	cases := []struct {
		name string
		o    Overrides
		env  string
		want string
		line int
	}{
		{"bind from env", Overrides{}, "0.0.0.0",
			`network.bind_address (SPARK_NETWORK_BIND_ADDRESS): policy: "0.0.0.0": wildcard address not allowed` + hint + internetHint, 0},
		{"bind from flag", Overrides{Bind: ptr("localhost")}, "10.0.0.5/8",
			`network.bind_address (--bind): policy: "localhost": host names are not resolved; write the IPv4 address itself, e.g. 127.0.0.1 (for "localhost") or 192.168.1.20/24`, 0},
		{"port from flag", Overrides{Port: ptr(70000)}, "",
			`server.port = 70000 (--port): must be 0..65535`, 0},
		{"max clients from flag", Overrides{MaxClients: ptr(0)}, "",
			`server.max_clients = 0 (--max-clients): must be 1..65536`, 0},
		{"data dir from flag", Overrides{DataDir: ptr("")}, "",
			`server.data_dir = "" (--data-dir): must not be empty`, 0},
		{"modules from flags", Overrides{Modules: []string{"ctf", "ctf"}}, "",
			`modules.load[1] = "ctf" (--module): duplicate of modules.load[0]`, 0},
		{"lan port clash with a flag port", Overrides{Port: ptr(27016)}, "",
			`lan.port = 27016 (default): must differ from server.port (27016)`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(file, "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			c.Apply(tc.o, envOf(tc.env))
			err = c.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Validate() = %v\nwant %s", err, tc.want)
			}
			if e := err.(*Error); e.Line != tc.line {
				t.Errorf("Line = %d, want %d", e.Line, tc.line)
			}
		})
	}
}

func TestApplyFlags(t *testing.T) {
	file := []byte("[server]\nport = 27020\nmax_clients = 8\ndata_dir = \"/srv/spark\"\n\n[modules]\nload = [\"ctf\", \"stats\"]\n")
	cases := []struct {
		name string
		o    Overrides
		want func(c *Config)
	}{
		{"no flags keep the file", Overrides{}, func(c *Config) {}},
		{"port", Overrides{Port: ptr(0)}, func(c *Config) { c.Server.Port = 0 }},
		{"data dir", Overrides{DataDir: ptr("/tmp/d")}, func(c *Config) { c.Server.DataDir = "/tmp/d" }},
		{"max clients", Overrides{MaxClients: ptr(64)}, func(c *Config) { c.Server.MaxClients = 64 }},
		{"modules replace the file's list", Overrides{Modules: []string{"dm"}}, func(c *Config) { c.Modules.Load = []string{"dm"} }},
		{"empty modules keep the file's list", Overrides{Modules: []string{}}, func(c *Config) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(file, "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			want := values(c)
			want.Modules.Load = slicesClone(want.Modules.Load)
			tc.want(&want)
			c.Apply(tc.o, nil)
			if !reflect.DeepEqual(values(c), want) {
				t.Errorf("after Apply:\n%+v\nwant\n%+v", values(c), want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
	// A flag-only override over the default works without a file.
	c := Default()
	c.Apply(Overrides{Port: ptr(70000)}, nil)
	if err := c.Validate(); err == nil || err.Error() != "server.port = 70000 (--port): must be 0..65535" {
		t.Errorf("Validate() = %v", err)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// Apply on a copy must not change what the original reports.
func TestApplyDoesNotLeakIntoCopies(t *testing.T) {
	orig, err := Parse([]byte("[server]\nport = 27020\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	mods := []string{"ctf"}
	cp := orig
	cp.Apply(Overrides{Port: ptr(70000), Modules: mods}, nil)
	mods[0] = "changed"
	if cp.Modules.Load[0] != "ctf" {
		t.Error("Apply keeps the caller's Modules slice")
	}
	orig.Server.Port = 70000 // as if set in code: still attributed to the file
	if err := orig.Validate(); err == nil || err.Error() != "config.toml:2: server.port = 70000: must be 0..65535" {
		t.Errorf("original after Apply on a copy: %v", err)
	}
}

// A Config built in code has no record of sources: no line, no label.
func TestValidateWithoutOrigin(t *testing.T) {
	c := Default()
	c.Server.HeartbeatInterval = 20
	if err := c.Validate(); err == nil || err.Error() != "server.heartbeat_interval = 20: must be below server.client_timeout (10)" {
		t.Errorf("Validate() = %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	cases := []struct {
		e    Error
		want string
	}{
		{Error{File: "a.toml", Line: 3, Key: "server.port", Msg: "m"}, "a.toml:3: m"},
		{Error{File: "a.toml", Line: 0, Key: "server.port", Msg: "m"}, "m"},
		{Error{File: "", Line: 3, Msg: "m"}, "line 3: m"},
	}
	for _, tc := range cases {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML)
	f.Add([]byte("[server]\nport = \"high\"\n"))
	f.Add([]byte("[server]\nmotd = \"\"\"\nport = 5\n\"\"\"\nport = 70000\n"))
	f.Add([]byte("server = { port = 1, x = 2 }\n[[lan]]\n"))
	f.Add([]byte("[match]\nmap_rotation = ['a', \"b\", 'a']\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.toml")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("message spans lines: %q", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a Config Validate refuses: %v", err)
		}
	})
}
