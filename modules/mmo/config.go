package mmo

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sparkhost/sparkhost/internal/tomlkeys"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// ConfigFile is the module's optional configuration, in its data directory
// (DATA_DIR/modules/mmo/config.toml). Every key is optional; docs/mmo.md §11
// lists them with their defaults.
const ConfigFile = "config.toml"

// Config is the module's configuration.
type Config struct {
	// MinIterations is the lowest SCRAM iteration count a registration may
	// use (4096..10,000,000; default 4096).
	MinIterations int `toml:"min_iterations"`
	// Width and Height bound the area (default 1000 × 1000).
	Width  float64 `toml:"width"`
	Height float64 `toml:"height"`
	// Speed in units per second (default 10).
	Speed float64 `toml:"speed"`
	// InterestRadius: how far a character sees others (default 100).
	InterestRadius float64 `toml:"interest_radius"`
	// GreetRadius: how far a greeting reaches (default 20).
	GreetRadius float64 `toml:"greet_radius"`
	// ReplicationRate: position updates per second (1..tick rate; default 10).
	ReplicationRate int `toml:"replication_rate"`
	// SaveInterval: seconds between saves of every position (default 10).
	SaveInterval float64 `toml:"save_interval"`
	// Iterations is the SCRAM iteration count of a verifier today: what an
	// unknown name's challenge says, and what an account with another count
	// is upgraded to at its next login (min_iterations..10,000,000; default
	// 600,000, the sparkhost client's).
	Iterations int `toml:"iterations"`
	// LoginFreeFailures failures of one account from one address cost
	// nothing; each further one makes that pair wait LoginBackoff seconds,
	// doubling up to LoginBackoffMax (defaults 3, 1, 300).
	LoginFreeFailures int     `toml:"login_free_failures"`
	LoginBackoff      float64 `toml:"login_backoff"`
	LoginBackoffMax   float64 `toml:"login_backoff_max"`
	// AddressFreeFailures: the same growing delays for one address over
	// every account it tries, after this many failures (default 10).
	AddressFreeFailures int `toml:"address_free_failures"`
	// AccountAttempts: the addresses without a recent login of an account
	// share at most this many login attempts at it in any AccountWindow
	// seconds, however many addresses they are (defaults 10, 60). An
	// address that logged into the account within TrustedFor seconds
	// (default 30 days) keeps its own allowance.
	AccountAttempts int     `toml:"account_attempts"`
	AccountWindow   float64 `toml:"account_window"`
	TrustedFor      float64 `toml:"trusted_for"`
	// MaxLoginFailures, FailureWindow and Lockout were a loose per-account
	// lockout; they are accepted, checked and ignored (a warning says so).
	MaxLoginFailures int     `toml:"max_login_failures"`
	FailureWindow    float64 `toml:"failure_window"`
	Lockout          float64 `toml:"lockout"`
	// MaxRegistrations per source address within RegistrationWindow
	// seconds (a token bucket; defaults 5, 3600; 0 turns the limit off).
	MaxRegistrations   int     `toml:"max_registrations"`
	RegistrationWindow float64 `toml:"registration_window"`
	// Database chooses where accounts and characters live.
	Database DatabaseConfig `toml:"database"`
	// World splits the world into areas, one per server (areas.go).
	World WorldConfig `toml:"world"`

	// retired lists the keys the file set that no longer apply.
	retired []string
	// file and lines locate the keys of the file the config was read
	// from (none: the defaults), for errors found after reading it.
	file  string
	lines tomlkeys.Lines
}

// located prefixes err with the config file and the line of key (or of
// its table when the file does not set the key): one line naming the
// file, the line and the key. A config without a file returns err.
func (c Config) located(err error, key ...string) error {
	if c.file == "" {
		return err
	}
	if line := c.lines.LineOf(toml.Key(key)); line > 0 {
		return fmt.Errorf("%s:%d: %w", c.file, line, err)
	}
	return fmt.Errorf("%s: %w", c.file, err)
}

// passwordEnv is the variable the database password is read from.
func (c DatabaseConfig) passwordEnv() string {
	if c.PasswordEnv != "" {
		return c.PasswordEnv
	}
	return DatabasePasswordEnv
}

// databaseError says why the database r did not open, where it is
// configured, and, when no password was given, which variable to set.
func (c Config) databaseError(r ResolvedDatabase, getenv func(string) string, err error) error {
	if r.URL != "" && r.Password == "" {
		err = fmt.Errorf("%w; no password was given: set %s", err, c.Database.passwordEnv())
	}
	if getenv(DatabaseURLEnv) != "" {
		return fmt.Errorf("%s: %w", DatabaseURLEnv, err)
	}
	return c.located(fmt.Errorf("[database] url: %w", err), "database", "url")
}

// retiredKeys no longer apply; a file that sets them loads with a warning.
var retiredKeys = []string{"max_login_failures", "failure_window", "lockout"}

// Retired returns the keys the file set that no longer apply.
func (c Config) Retired() []string { return c.retired }

// DatabaseConfig is the [database] table: the embedded SQLite file by
// default, or a PostgreSQL database that several servers share.
type DatabaseConfig struct {
	// URL is a postgres:// URL (without a password); empty means SQLite in
	// the data directory. The environment variable SPARK_MMO_DATABASE_URL,
	// when set, takes its place and may hold the password.
	URL string `toml:"url"`
	// PasswordEnv names the environment variable holding the password
	// (default SPARK_MMO_DATABASE_PASSWORD; it may be unset).
	PasswordEnv string `toml:"password_env"`
	// Lease in seconds: how long a server that stopped renewing (it died,
	// or lost the database) keeps its characters before another server may
	// take them over (2..600; default 10).
	Lease float64 `toml:"lease"`
}

// Environment variables of the database configuration.
const (
	DatabaseURLEnv      = "SPARK_MMO_DATABASE_URL"
	DatabasePasswordEnv = "SPARK_MMO_DATABASE_PASSWORD"
)

// ResolvedDatabase is the database to open: URL empty means SQLite.
type ResolvedDatabase struct {
	URL, Password string
	Lease         time.Duration
}

// Resolve applies the environment (getenv) to c. A password written into
// config.toml's url is refused: secrets come from the environment.
func (c DatabaseConfig) Resolve(getenv func(string) string) (ResolvedDatabase, error) {
	r := ResolvedDatabase{URL: c.URL, Lease: seconds(c.Lease)}
	if u, err := url.Parse(c.URL); c.URL != "" && (err != nil || u.User != nil && hasPassword(u) || u.Query().Has("password")) {
		return r, fmt.Errorf("[database] url %s: do not write the password into config.toml; set %s (or the variable password_env names) instead", store.Redact(c.URL), DatabasePasswordEnv)
	}
	if env := getenv(DatabaseURLEnv); env != "" {
		r.URL = env
	}
	r.Password = getenv(c.passwordEnv())
	if r.URL == "" && c.PasswordEnv != "" {
		return r, errors.New("[database] password_env is set but there is no url: the SQLite default needs no password")
	}
	return r, nil
}

func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MinIterations: scram.DefaultMinIterations, Width: 1000, Height: 1000, Speed: 10,
		InterestRadius: 100, GreetRadius: 20, ReplicationRate: 10, SaveInterval: 10,
		Iterations: scram.DefaultIterations, LoginFreeFailures: 3, LoginBackoff: 1, LoginBackoffMax: 300,
		AddressFreeFailures: 10, AccountAttempts: 10, AccountWindow: 60, TrustedFor: 30 * 86400,
		MaxLoginFailures: 100, FailureWindow: 60, Lockout: 60,
		MaxRegistrations: 5, RegistrationWindow: 3600,
		Database: DatabaseConfig{Lease: 10},
	}
}

// LoadConfig reads dir/config.toml over the defaults; a missing file means
// the defaults. Unknown keys and out-of-range values are errors.
func LoadConfig(dir string) (Config, error) {
	cfg := DefaultConfig()
	path := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	lines := tomlkeys.Locate(b)
	md, err := toml.Decode(string(b), &cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return cfg, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, oneLine(pe.Message))
		}
		return cfg, fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return cfg, fmt.Errorf("%s:%d: unknown key %s (docs/mmo.md lists the keys)", path, lines.LineOf(und[0]), und[0])
	}
	for _, k := range retiredKeys {
		if md.IsDefined(k) {
			cfg.retired = append(cfg.retired, k)
		}
	}
	cfg.file, cfg.lines = path, lines
	if err := cfg.validate(); err != nil {
		return cfg, atKey(path, lines, err)
	}
	if _, err := cfg.areas(dir); err != nil {
		return cfg, atKey(path, lines, err)
	}
	return cfg, nil
}

// atKey prefixes a config error with the file and the line of the key it
// is about (every message starts with the key: "speed = 0: …",
// "[database] lease = 1: …", "[[world.areas]] …"); a key the file does
// not set (a default that another key makes wrong) has no line.
func atKey(path string, lines tomlkeys.Lines, err error) error {
	if line := lines.LineOf(messageKey(err.Error())); line > 0 {
		return fmt.Errorf("%s:%d: %w", path, line, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// messageKey reads the key a config error message starts with.
func messageKey(msg string) toml.Key {
	if rest, ok := strings.CutPrefix(msg, "[["); ok {
		table, _, _ := strings.Cut(rest, "]]")
		return toml.Key(strings.Split(table, "."))
	}
	var key toml.Key
	if rest, ok := strings.CutPrefix(msg, "["); ok {
		table, after, _ := strings.Cut(rest, "]")
		key, msg = toml.Key{table}, strings.TrimLeft(after, " ")
	}
	name := msg
	if i := strings.IndexAny(msg, " =:"); i >= 0 {
		name = msg[:i]
	}
	if name != "" {
		key = append(key, name)
	}
	return key
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (c Config) validate() error {
	pos := func(name string, v, maxV float64) error {
		if math.IsNaN(v) || v <= 0 || v > maxV {
			return fmt.Errorf("%s = %v: must be above 0, at most %v", name, v, maxV)
		}
		return nil
	}
	for _, e := range []error{
		pos("width", c.Width, 1e6), pos("height", c.Height, 1e6), pos("speed", c.Speed, 1e4),
		pos("interest_radius", c.InterestRadius, 1e6), pos("greet_radius", c.GreetRadius, 1e6),
		pos("save_interval", c.SaveInterval, 3600), pos("failure_window", c.FailureWindow, 86400), pos("lockout", c.Lockout, 86400),
		pos("login_backoff", c.LoginBackoff, 3600), pos("login_backoff_max", c.LoginBackoffMax, 86400),
		pos("registration_window", c.RegistrationWindow, 7*86400),
		pos("account_window", c.AccountWindow, 86400), pos("trusted_for", c.TrustedFor, 365*86400),
		pos("[database] lease", c.Database.Lease, 600),
	} {
		if e != nil {
			return e
		}
	}
	switch {
	case c.MinIterations < scram.DefaultMinIterations || c.MinIterations > scram.MaxIterations:
		return fmt.Errorf("min_iterations = %d: must be %d..%d", c.MinIterations, scram.DefaultMinIterations, scram.MaxIterations)
	case c.ReplicationRate < 1 || c.ReplicationRate > 1000:
		return fmt.Errorf("replication_rate = %d: must be 1..1000", c.ReplicationRate)
	case c.Iterations < c.MinIterations || c.Iterations > scram.MaxIterations:
		return fmt.Errorf("iterations = %d: must be min_iterations (%d)..%d", c.Iterations, c.MinIterations, scram.MaxIterations)
	case c.LoginFreeFailures < 1 || c.LoginFreeFailures > 1000:
		return fmt.Errorf("login_free_failures = %d: must be 1..1000", c.LoginFreeFailures)
	case c.AddressFreeFailures < 1 || c.AddressFreeFailures > 100000:
		return fmt.Errorf("address_free_failures = %d: must be 1..100000", c.AddressFreeFailures)
	case c.LoginBackoffMax < c.LoginBackoff:
		return fmt.Errorf("login_backoff_max = %v: must be at least login_backoff (%v)", c.LoginBackoffMax, c.LoginBackoff)
	case c.AccountAttempts < 1 || c.AccountAttempts > 1000:
		return fmt.Errorf("account_attempts = %d: must be 1..1000", c.AccountAttempts)
	case c.MaxLoginFailures < 1 || c.MaxLoginFailures > 100000:
		return fmt.Errorf("max_login_failures = %d: must be 1..100000", c.MaxLoginFailures)
	case c.MaxRegistrations < 0 || c.MaxRegistrations > 100000:
		return fmt.Errorf("max_registrations = %d: must be 0 (no limit)..100000", c.MaxRegistrations)
	case c.Database.Lease < 2:
		return fmt.Errorf("[database] lease = %v: must be 2..600 seconds", c.Database.Lease)
	case c.Database.URL != "" && !strings.HasPrefix(c.Database.URL, "postgres://") && !strings.HasPrefix(c.Database.URL, "postgresql://"):
		return fmt.Errorf("[database] url %s: must be a postgres:// URL (or empty for SQLite)", store.Redact(c.Database.URL))
	case c.Database.PasswordEnv != "" && !validEnvName(c.Database.PasswordEnv):
		return fmt.Errorf("[database] password_env = %q: not an environment variable name", c.Database.PasswordEnv)
	}
	return nil
}

func validEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != "" && len(s) <= 128
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
