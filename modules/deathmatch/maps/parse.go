package maps

import (
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// ErrInvalidMap is what every content error of a map file matches (errors.Is).
var ErrInvalidMap = errors.New("invalid map")

// Error is a map file's content error: one line, "FILE: REASON".
type Error struct {
	File   string
	Reason string
}

func (e *Error) Error() string { return e.File + ": " + e.Reason }

// Unwrap makes an *Error match ErrInvalidMap.
func (e *Error) Unwrap() error { return ErrInvalidMap }

// The file's shape, as decoded. Vectors are slices so that a wrong length is
// reported as such rather than as a decoder type error.
type (
	fileMap struct {
		Name      string      `toml:"name"`
		Bounds    *fileBox    `toml:"bounds"`
		Obstacles []fileBox   `toml:"obstacle"`
		Spawns    []fileSpawn `toml:"spawn"`
		Waypoints []filePoint `toml:"waypoint"`
	}
	fileBox struct {
		Min []float64 `toml:"min"`
		Max []float64 `toml:"max"`
	}
	fileSpawn struct {
		Position []float64 `toml:"position"`
		Yaw      float64   `toml:"yaw"`
		Team     int64     `toml:"team"`
	}
	filePoint struct {
		Position []float64 `toml:"position"`
	}
)

// Parse decodes and validates the map file content data; file is the file's
// path, used in messages and to check the map's name (the base name without
// .toml). Every content error is an *Error.
func Parse(data []byte, file string) (*Map, error) {
	p := parser{file: file}
	m, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	return m, nil
}

type parser struct{ file string }

func (p *parser) fail(format string, args ...any) error {
	return &Error{File: p.file, Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) parse(data []byte) (*Map, error) {
	if len(data) > MaxFileSize {
		return nil, p.fail("%d bytes, above the %d-byte limit of a map file", len(data), MaxFileSize)
	}
	var f fileMap
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, p.fail("%s", decodeMessage(err))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, p.fail("unknown key %q (known: name, [bounds] min/max, [[obstacle]] min/max, [[spawn]] position/yaw/team, [[waypoint]] position)", und[0].String())
	}
	m := &Map{Name: f.Name, Source: p.file}
	if err := p.name(f.Name); err != nil {
		return nil, err
	}
	if f.Bounds == nil {
		return nil, p.fail("no [bounds]: give the playable box as min = [x, y, z] and max = [x, y, z]")
	}
	if m.Bounds, err = p.box("bounds", *f.Bounds); err != nil {
		return nil, err
	}
	if err := p.boundsFitPlayer(m.Bounds); err != nil {
		return nil, err
	}
	if len(f.Obstacles) > MaxObstacles {
		return nil, p.fail("%d obstacles, above the limit of %d", len(f.Obstacles), MaxObstacles)
	}
	m.Obstacles = make([]movement.Box, len(f.Obstacles))
	for i, o := range f.Obstacles {
		if m.Obstacles[i], err = p.box(fmt.Sprintf("obstacle %d", i+1), o); err != nil {
			return nil, err
		}
	}
	if err := p.spawns(m, f.Spawns); err != nil {
		return nil, err
	}
	if len(f.Waypoints) > MaxWaypoints {
		return nil, p.fail("%d waypoints, above the limit of %d", len(f.Waypoints), MaxWaypoints)
	}
	m.Waypoints = make([]wire.Vec3, len(f.Waypoints))
	for i, w := range f.Waypoints {
		what := fmt.Sprintf("waypoint %d", i+1)
		if m.Waypoints[i], err = p.vec(what+" position", w.Position); err != nil {
			return nil, err
		}
		if err := p.standable(m, what, m.Waypoints[i]); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// decodeMessage makes the decoder's error one line without its "toml: " prefix.
func decodeMessage(err error) string {
	var pe toml.ParseError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("line %d: syntax error: %s", pe.Position.Line, pe.Message)
	}
	return strings.Join(strings.Fields(strings.TrimPrefix(msg, "toml: ")), " ")
}

// name checks the map's name: a file-name-safe word equal to the file's.
func (p *parser) name(name string) error {
	if name == "" {
		return p.fail(`no name: add name = "%s"`, baseName(p.file))
	}
	if len(name) > MaxNameLen || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return p.fail("name %q: use 1..%d letters, digits, '_' or '-'", name, MaxNameLen)
	}
	if base := baseName(p.file); name != base {
		return p.fail("name %q differs from the file name %q: a rotation finds a map by its file, NAME.toml", name, base)
	}
	return nil
}

func baseName(file string) string {
	return strings.TrimSuffix(path.Base(filepath.ToSlash(file)), ".toml")
}

// vec checks a [x, y, z] of finite numbers within ±MaxCoordinate.
func (p *parser) vec(what string, v []float64) (wire.Vec3, error) {
	if len(v) != 3 {
		return wire.Vec3{}, p.fail("%s: want three numbers [x, y, z], got %d", what, len(v))
	}
	for i, c := range v {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return wire.Vec3{}, p.fail("%s: %c is %v, not a finite number", what, "xyz"[i], c)
		}
		if math.Abs(c) > movement.MaxCoordinate {
			return wire.Vec3{}, p.fail("%s: %c = %g is beyond ±%d", what, "xyz"[i], c, movement.MaxCoordinate)
		}
	}
	return wire.Vec3{X: float32(v[0]), Y: float32(v[1]), Z: float32(v[2])}, nil
}

// box checks a box: both corners valid and min < max on every axis.
func (p *parser) box(what string, b fileBox) (movement.Box, error) {
	if b.Min == nil || b.Max == nil {
		return movement.Box{}, p.fail("%s: needs both min = [x, y, z] and max = [x, y, z]", what)
	}
	lo, err := p.vec(what+" min", b.Min)
	if err != nil {
		return movement.Box{}, err
	}
	hi, err := p.vec(what+" max", b.Max)
	if err != nil {
		return movement.Box{}, err
	}
	l, h := [3]float32{lo.X, lo.Y, lo.Z}, [3]float32{hi.X, hi.Y, hi.Z}
	for a := range 3 {
		if l[a] >= h[a] {
			return movement.Box{}, p.fail("%s is inverted or flat: min %c = %g is not below max %c = %g",
				what, "xyz"[a], l[a], "xyz"[a], h[a])
		}
	}
	return movement.Box{Min: lo, Max: hi}, nil
}

func (p *parser) boundsFitPlayer(b movement.Box) error {
	const w, h = 2 * movement.DefaultHalfWidth, movement.DefaultHeight
	if b.Max.X-b.Min.X < w || b.Max.Z-b.Min.Z < w || b.Max.Y-b.Min.Y < h {
		return p.fail("bounds %s are smaller than a player (%g × %g × %g)", boxString(b), w, h, w)
	}
	return nil
}

func (p *parser) spawns(m *Map, spawns []fileSpawn) error {
	switch {
	case len(spawns) == 0:
		return p.fail("no spawn points: add at least one [[spawn]] with position = [x, y, z]")
	case len(spawns) > MaxSpawns:
		return p.fail("%d spawn points, above the limit of %d", len(spawns), MaxSpawns)
	}
	m.Spawns = make([]Spawn, len(spawns))
	var teams [3]int
	for i, s := range spawns {
		what := fmt.Sprintf("spawn %d", i+1)
		pos, err := p.vec(what+" position", s.Position)
		if err != nil {
			return err
		}
		if math.IsNaN(s.Yaw) || math.IsInf(s.Yaw, 0) || math.Abs(s.Yaw) > 1e6 {
			return p.fail("%s: yaw %v: want a finite number of degrees within ±1e6", what, s.Yaw)
		}
		if s.Team < 0 || s.Team > int64(TeamBlue) {
			return p.fail("%s: team %d: use 0 (either team), 1 (red) or 2 (blue)", what, s.Team)
		}
		if err := p.standable(m, what, pos); err != nil {
			return err
		}
		m.Spawns[i] = Spawn{Position: pos, Yaw: float32(s.Yaw), Team: uint8(s.Team)}
		teams[s.Team]++
	}
	if teams[TeamRed]+teams[TeamBlue] > 0 && teams[AnyTeam] == 0 {
		for t, name := range [...]string{TeamRed: "1 (red)", TeamBlue: "2 (blue)"} {
			if t != 0 && teams[t] == 0 {
				return p.fail("team %s has no spawn point: tag one with team = %d or leave one untagged (team 0)", name, t)
			}
		}
	}
	return nil
}

// standable checks that a player standing at pos fits: inside the bounds and
// overlapping no obstacle.
func (p *parser) standable(m *Map, what string, pos wire.Vec3) error {
	b := playerBox(pos)
	if !inside(b, m.Bounds) {
		return p.fail("%s at %s: the player box %s leaves the bounds %s", what, vecString(pos), boxString(b), boxString(m.Bounds))
	}
	for i, o := range m.Obstacles {
		if overlaps(b, o) {
			return p.fail("%s at %s: the player box overlaps obstacle %d %s", what, vecString(pos), i+1, boxString(o))
		}
	}
	return nil
}

func vecString(v wire.Vec3) string { return fmt.Sprintf("(%g, %g, %g)", v.X, v.Y, v.Z) }

func boxString(b movement.Box) string { return "[" + vecString(b.Min) + ".." + vecString(b.Max) + "]" }
