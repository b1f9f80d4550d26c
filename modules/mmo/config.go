package mmo

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
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
	// MaxLoginFailures within FailureWindow seconds lock an account name or a
	// source address for Lockout seconds (defaults 5, 60, 30).
	MaxLoginFailures int     `toml:"max_login_failures"`
	FailureWindow    float64 `toml:"failure_window"`
	Lockout          float64 `toml:"lockout"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MinIterations: scram.DefaultMinIterations, Width: 1000, Height: 1000, Speed: 10,
		InterestRadius: 100, GreetRadius: 20, ReplicationRate: 10, SaveInterval: 10,
		MaxLoginFailures: 5, FailureWindow: 60, Lockout: 30,
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
	md, err := toml.Decode(string(b), &cfg)
	if err != nil {
		return cfg, fmt.Errorf("%s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return cfg, fmt.Errorf("%s: unknown key %s", path, strings.Join(keys, ", "))
	}
	if err := cfg.validate(); err != nil {
		return cfg, fmt.Errorf("%s: %v", path, err)
	}
	return cfg, nil
}

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
	case c.MaxLoginFailures < 1 || c.MaxLoginFailures > 1000:
		return fmt.Errorf("max_login_failures = %d: must be 1..1000", c.MaxLoginFailures)
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
