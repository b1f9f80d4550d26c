// Package maps owns the deathmatch map files: their format, a strict loader
// and the geometry queries the rules and the bots need (line of sight, where
// a shot meets a wall).
//
// A map is one TOML file named NAME.toml:
//
//	name = "arena"                  # must equal the file name without .toml
//
//	[bounds]                        # the playable box; the floor is min.y
//	min = [-24, 0, -24]             # [x, y, z]; Y is up
//	max = [24, 12, 24]
//
//	[[obstacle]]                    # an axis-aligned box players collide with
//	min = [-2, 0, -2]               # and shots stop at; 0..MaxObstacles of them
//	max = [2, 8, 2]
//
//	[[spawn]]                       # 1..MaxSpawns spawn points
//	position = [-21, 0, -21]        # the bottom centre of the player's box
//	yaw = 45                        # degrees; 0 faces +Z, 90 faces +X
//	team = 0                        # optional: 0 either team (default), 1 or 2
//
//	[[waypoint]]                    # optional places bots walk between
//	position = [-8, 0, -8]          # (the spawns are waypoints too)
//
// Units and conventions are sim/movement's. Loading is strict, and the first
// problem is one line naming the file and the reason, for example
//
//	maps/arena.toml: spawn 3 at (1, 0, 2): the player box overlaps obstacle 2 [(0, 0, 0)..(4, 2, 4)]
//
// Refused: a syntax error, an unknown key, a wrong type, a vector that is
// not three numbers, a non-finite number (TOML allows inf and nan), a name
// that differs from the file's, bounds or obstacles that are inverted or
// flat (min ≥ max on an axis) or beyond movement.MaxCoordinate, bounds
// smaller than a player, more than MaxObstacles obstacles, no spawn or more
// than MaxSpawns, a spawn or waypoint whose player box leaves the bounds or
// overlaps an obstacle, a team other than 0, 1 or 2, and team spawns that
// leave a team with nowhere to spawn. Spawns are checked against the
// default player box (movement.DefaultHalfWidth, movement.DefaultHeight).
//
// The maps shipped with sparkhost live in the repository's maps/ directory
// and are embedded in the binary (package github.com/sparkhost/sparkhost/maps);
// Builtin loads them, LoadDir loads a directory of your own instead.
//
// A Map is immutable once loaded and safe for concurrent use. The package
// must never panic on a file's content.
package maps
