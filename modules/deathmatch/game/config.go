package game

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/sim/movement"
)

// Defaults of Config.
const (
	DefaultTickRate     = 60
	DefaultMaxHealth    = 100
	DefaultRespawnDelay = 3 * time.Second
	// MaxInputBurst is how many inputs a player may bank: each Tick grants
	// one, each Input spends one, and an input with none left is dropped
	// (ErrInputFlood). It absorbs network jitter without letting a client
	// move faster than the tick rate.
	MaxInputBurst = 8
	// MaxRange bounds Weapon.Range, in units: the diagonal of the largest map.
	MaxRange = 2 * movement.MaxCoordinate * 1.7320508
)

// ErrInvalidConfig is what New's config errors match.
var ErrInvalidConfig = errors.New("game: invalid config")

// Weapon is a hitscan weapon.
type Weapon struct {
	Name   string
	Damage int // health points per hit; 1..10000
	// FireInterval is the least time between two shots, rounded up to whole
	// ticks (at least one).
	FireInterval time.Duration
	Range        float32 // units; (0, MaxRange]
}

// DefaultWeapon is the rifle everybody carries unless configured otherwise:
// four hits kill a player of 100 health.
func DefaultWeapon() Weapon {
	return Weapon{Name: "rifle", Damage: 25, FireInterval: 250 * time.Millisecond, Range: 100}
}

// Config configures a Game. The zero value is free-for-all with the
// documented defaults.
type Config struct {
	// TickRate in Hz: how often Tick is called; it must be the server's
	// (one ClientInput is one tick). 0 means 60.
	TickRate int
	// Teams plays TeamDeathmatch (red, team 1, against blue, team 2);
	// otherwise every player is on team 0 and everyone is an enemy.
	Teams bool
	// FriendlyFire lets teammates damage each other (team kills cost the
	// killer a point).
	FriendlyFire bool
	// AutoBalance moves a player to the smaller team when the teams differ
	// by two or more (the most recent joiner, a dead one first).
	AutoBalance bool
	// RespawnDelay between death and respawn, rounded up to whole ticks;
	// 0 means 3 s.
	RespawnDelay time.Duration
	// MaxHealth a player spawns with; 0 means 100.
	MaxHealth int
	// Weapon everybody carries; the zero value means DefaultWeapon().
	Weapon Weapon
	// Movement constants; zero fields mean sim/movement's defaults, and
	// TickRate is forced to this Config's TickRate.
	Movement movement.Params
	// Seed of the spawn choice among equally good points.
	Seed uint64
}

// populate fills in the defaults and checks the ranges.
func (c Config) populate() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.TickRate == 0 {
		c.TickRate = DefaultTickRate
	}
	if c.RespawnDelay == 0 {
		c.RespawnDelay = DefaultRespawnDelay
	}
	if c.MaxHealth == 0 {
		c.MaxHealth = DefaultMaxHealth
	}
	if c.Weapon == (Weapon{}) {
		c.Weapon = DefaultWeapon()
	}
	c.Movement.TickRate = c.TickRate
	w := c.Weapon
	switch {
	case c.TickRate < 1 || c.TickRate > movement.MaxTickRate:
		return bad("TickRate %d Hz outside 1..%d", c.TickRate, movement.MaxTickRate)
	case c.RespawnDelay < 0 || c.RespawnDelay > time.Hour:
		return bad("RespawnDelay %v outside (0, 1h]", c.RespawnDelay)
	case c.MaxHealth < 1 || c.MaxHealth > 10000:
		return bad("MaxHealth %d outside 1..10000", c.MaxHealth)
	case w.Damage < 1 || w.Damage > 10000:
		return bad("weapon %q: Damage %d outside 1..10000", w.Name, w.Damage)
	case w.FireInterval <= 0 || w.FireInterval > time.Minute:
		return bad("weapon %q: FireInterval %v outside (0, 1m]", w.Name, w.FireInterval)
	case !(w.Range > 0 && w.Range <= MaxRange) || math.IsNaN(float64(w.Range)):
		return bad("weapon %q: Range %v outside (0, %g]", w.Name, w.Range, float32(MaxRange))
	}
	return c, nil
}

// ticks converts d to whole ticks at rate, rounding up, at least 1.
func ticks(d time.Duration, rate int) uint64 {
	n := (int64(d)*int64(rate) + int64(time.Second) - 1) / int64(time.Second)
	return uint64(max(n, 1))
}
