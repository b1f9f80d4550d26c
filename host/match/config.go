package match

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// MaxRounds is the most rounds a match can have: MatchStart.round is a u8.
const MaxRounds = math.MaxUint8

// Errors of New and ChangeMap, for errors.Is.
var (
	ErrInvalidConfig = errors.New("match: invalid config")
	ErrUnknownMap    = errors.New("match: map is not in the rotation")
)

// Config configures a Match. Its zero value is invalid only for want of Maps:
// every other zero means the documented default.
type Config struct {
	Mode         gamemsg.GameMode // announced in MatchStart; must be one of §9.2
	ScoreLimit   int32            // points one player must score within a round to end it; 0 means none
	TimeLimit    time.Duration    // length of a round from its start; 0 means none
	RoundCount   int              // rounds in a match on one map, 1..MaxRounds; 0 means 1
	Maps         []string         // the rotation, in order; at least one, unique, each a §1 name of ≤ 64 bytes
	Shuffle      bool             // play each cycle of the rotation in a seeded random order
	Seed         uint64           // seed of the Shuffle order; the same seed gives the same order
	Warmup       time.Duration    // how long enough players must be present before round 1; 0 means start at once
	Intermission time.Duration    // pause between a match's end and the next map
	MinPlayers   int              // players needed to count down the warmup; 0 means 1
}

// populate returns cfg with its defaults filled in and its Maps copied, or an
// error matching ErrInvalidConfig that names the first bad field.
func (cfg Config) populate() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case !cfg.Mode.Valid():
		return bad("Mode %d is not a mode of §9.2 (0..6)", cfg.Mode)
	case cfg.ScoreLimit < 0:
		return bad("ScoreLimit %d is negative; use 0 for none", cfg.ScoreLimit)
	case cfg.TimeLimit < 0:
		return bad("TimeLimit %v is negative; use 0 for none", cfg.TimeLimit)
	case cfg.RoundCount < 0 || cfg.RoundCount > MaxRounds:
		return bad("RoundCount %d is outside 1..%d", cfg.RoundCount, MaxRounds)
	case cfg.Warmup < 0:
		return bad("Warmup %v is negative", cfg.Warmup)
	case cfg.Intermission < 0:
		return bad("Intermission %v is negative", cfg.Intermission)
	case cfg.MinPlayers < 0:
		return bad("MinPlayers %d is negative", cfg.MinPlayers)
	case len(cfg.Maps) == 0:
		return bad("Maps is empty; list at least one map")
	}
	seen := make(map[string]bool, len(cfg.Maps))
	for _, name := range cfg.Maps {
		if !wire.ValidName([]byte(name), gamemsg.MaxMapLen) {
			return bad("map %q is not a valid map name (1..%d bytes of UTF-8, no control characters, not blank)", name, gamemsg.MaxMapLen)
		}
		if seen[name] {
			return bad("map %q is listed twice", name)
		}
		seen[name] = true
	}
	cfg.Maps = append([]string(nil), cfg.Maps...)
	cfg.RoundCount = max(cfg.RoundCount, 1)
	cfg.MinPlayers = max(cfg.MinPlayers, 1)
	return cfg, nil
}
