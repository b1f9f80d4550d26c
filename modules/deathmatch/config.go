package deathmatch

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sparkhost/sparkhost/internal/tomlkeys"

	"github.com/sparkhost/sparkhost/modules/deathmatch/game"
)

// ConfigFile is the module's optional config file, in its data directory
// (the server's data_dir/modules/deathmatch/). A missing file means every
// default.
const ConfigFile = "deathmatch.toml"

// Config is the module's configuration: what the server's config.toml does
// not tell a module (the SDK passes the game mode, the map and the tick rate,
// but not friendly_fire or auto_balance_teams, so they are repeated here with
// the same defaults). Shots are validated by the server's lag compensation,
// whose window is the server's (match.snapshot_history_size over
// server.tick_rate; docs/replication.md).
//
//	maps_dir = ""                  # "" = the maps built into the binary
//	friendly_fire = false
//	auto_balance_teams = true
//	respawn_seconds = 3.0
//
//	[weapon]
//	name = "rifle"
//	damage = 25                    # health points per hit (players have 100)
//	fire_interval_seconds = 0.25
//	range = 100.0                  # units
type Config struct {
	// MapsDir is a directory of NAME.toml maps (relative to the server's
	// working directory); "" uses the maps built into the binary.
	MapsDir          string  `toml:"maps_dir"`
	FriendlyFire     bool    `toml:"friendly_fire"`
	AutoBalanceTeams bool    `toml:"auto_balance_teams"`
	RespawnSeconds   float64 `toml:"respawn_seconds"`
	Weapon           struct {
		Name                string  `toml:"name"`
		Damage              int     `toml:"damage"`
		FireIntervalSeconds float64 `toml:"fire_interval_seconds"`
		Range               float64 `toml:"range"`
	} `toml:"weapon"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	c := Config{AutoBalanceTeams: true, RespawnSeconds: 3}
	w := game.DefaultWeapon()
	c.Weapon.Name, c.Weapon.Damage = w.Name, w.Damage
	c.Weapon.FireIntervalSeconds, c.Weapon.Range = w.FireInterval.Seconds(), float64(w.Range)
	return c
}

// LoadConfig reads dir/deathmatch.toml over the defaults; a missing file (or
// dir "") gives the defaults. Errors are one line naming the file.
func LoadConfig(dir string) (Config, error) {
	c := DefaultConfig()
	if dir == "" {
		return c, nil
	}
	file := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("deathmatch config: %w", err)
	}
	return ParseConfig(data, file)
}

// ParseConfig is LoadConfig for text already read. An error is one line
// naming the file, the line and the key ("deathmatch.toml:3: unknown key
// "respawn_secs"").
func ParseConfig(data []byte, file string) (Config, error) {
	c := DefaultConfig()
	lines := tomlkeys.Locate(data)
	at := func(key toml.Key) string {
		if line := lines.LineOf(key); line > 0 {
			return fmt.Sprintf("%s:%d", file, line)
		}
		return file
	}
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return c, fmt.Errorf("%s:%d: %s", file, pe.Position.Line, strings.Join(strings.Fields(pe.Message), " "))
		}
		return c, fmt.Errorf("%s: %s", file, strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "toml: ")), " "))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return c, fmt.Errorf("%s: unknown key %q", at(und[0]), und[0].String())
	}
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("%s: %s = %v: %s", at(toml.Key(strings.Split(key, "."))), key, v, want)
	}
	switch {
	case !inRange(c.RespawnSeconds, 0.001, 3600):
		return c, bad("respawn_seconds", c.RespawnSeconds, "want 0.001..3600")
	case c.Weapon.Damage < 1 || c.Weapon.Damage > 10000:
		return c, bad("weapon.damage", c.Weapon.Damage, "want 1..10000")
	case !inRange(c.Weapon.FireIntervalSeconds, 0.001, 60):
		return c, bad("weapon.fire_interval_seconds", c.Weapon.FireIntervalSeconds, "want 0.001..60")
	case !inRange(c.Weapon.Range, 0.001, game.MaxRange):
		return c, bad("weapon.range", c.Weapon.Range, fmt.Sprintf("want 0.001..%g", float32(game.MaxRange)))
	}
	return c, nil
}

func inRange(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// gameConfig is the game.Config of c for a server of the given tick rate.
func (c Config) gameConfig(tickRate int, teams bool, seed uint64) game.Config {
	return game.Config{
		TickRate: tickRate, Teams: teams, FriendlyFire: c.FriendlyFire, AutoBalance: c.AutoBalanceTeams,
		RespawnDelay: seconds(c.RespawnSeconds), Seed: seed,
		Weapon: game.Weapon{
			Name: c.Weapon.Name, Damage: c.Weapon.Damage,
			FireInterval: seconds(c.Weapon.FireIntervalSeconds), Range: float32(c.Weapon.Range),
		},
	}
}
