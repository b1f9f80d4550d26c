// Package world is the mmo module's game logic: one rectangular area, the
// characters in it, server-timed movement on a fixed-step clock, interest
// management (who sees whom) and greetings. It is pure: no I/O, no goroutines,
// no wall clock; the caller calls Step once per tick and Replicate at the
// replication rate, from one goroutine (the game thread).
//
// Movement is authoritative here: a client only states an intent (a direction
// or stop) and the world advances the position by Speed·dt each step, clamped
// to the area. Interest uses a uniform grid whose cells are at least the
// interest radius wide, so a query looks at a handful of cells and Step and
// Replicate stay cheap for hundreds of characters; in steady state neither
// allocates.
package world

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ID identifies a character while it is in the world. IDs start at 1 and are
// never reused while the World exists.
type ID uint32

// Config configures a World. The zero value means the documented defaults.
type Config struct {
	// Width and Height bound the area [0,Width]×[0,Height], in units; 0 means 1000.
	Width, Height float64
	// Speed of a moving character in units per second; 0 means 10.
	Speed float64
	// InterestRadius in units: an observer sees the characters at most this
	// far away, itself included; 0 means 100.
	InterestRadius float64
	// GreetRadius in units: the farthest a greeting reaches; 0 means 20.
	GreetRadius float64
	// TickRate in steps per second (Hz); 0 means 60. Step advances 1/TickRate s.
	TickRate int
	// MaxCharacters in the world at once; 0 means 10,000.
	MaxCharacters int
}

// Defaults of Config's zero fields.
const (
	DefaultSize           = 1000
	DefaultSpeed          = 10
	DefaultInterestRadius = 100
	DefaultGreetRadius    = 20
	DefaultTickRate       = 60
	DefaultMaxCharacters  = 10_000

	maxCharacters = 1 << 24
)

// Errors. Every one of them is an answer to a client's request, not a fault.
var (
	ErrBadConfig      = errors.New("world: invalid config")
	ErrNotInWorld     = errors.New("world: character is not in the world")
	ErrAlreadyInWorld = errors.New("world: a character of that name is already in the world")
	ErrFull           = errors.New("world: the world is full")
	ErrBadPosition    = errors.New("world: position is not finite")
	ErrBadName        = errors.New("world: character name is empty")
	ErrBadIntent      = errors.New("world: movement intent must be finite with each component in -1..1")
	ErrUnknownTarget  = errors.New("world: no character of that name is in the world")
	ErrSelf           = errors.New("world: a character cannot greet itself")
	ErrTooFar         = errors.New("world: target is beyond the greeting radius")
)

func (c *Config) populate() error {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Width, DefaultSize)
	def(&c.Height, DefaultSize)
	def(&c.Speed, DefaultSpeed)
	def(&c.InterestRadius, DefaultInterestRadius)
	def(&c.GreetRadius, DefaultGreetRadius)
	if c.TickRate == 0 {
		c.TickRate = DefaultTickRate
	}
	if c.MaxCharacters == 0 {
		c.MaxCharacters = DefaultMaxCharacters
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Width", c.Width}, {"Height", c.Height}, {"Speed", c.Speed}, {"InterestRadius", c.InterestRadius}, {"GreetRadius", c.GreetRadius}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: %s = %v must be a positive finite number", ErrBadConfig, f.name, f.v)
		}
	}
	if c.TickRate < 1 || c.TickRate > 1000 {
		return fmt.Errorf("%w: TickRate = %d must be 1..1000 Hz", ErrBadConfig, c.TickRate)
	}
	if c.MaxCharacters < 1 || c.MaxCharacters > maxCharacters {
		return fmt.Errorf("%w: MaxCharacters = %d must be 1..%d", ErrBadConfig, c.MaxCharacters, maxCharacters)
	}
	return nil
}

// Snapshot is a character's public state.
type Snapshot struct {
	ID     ID
	Name   string
	X, Y   float64
	DX, DY float64 // unit direction while moving; 0, 0 when stopped
}

// Moving reports whether the character has a movement intent.
func (s Snapshot) Moving() bool { return s.DX != 0 || s.DY != 0 }

// character is one character in the world. Invariants: it is chars[index],
// byID[id], byKey[key] and cells[cell][slot]; known is sorted ascending.
type character struct {
	id     ID
	name   string
	key    string // lower-case name
	x, y   float64
	dx, dy float64
	// movedAt is the replication pass after which the position last
	// changed (World.pass+1 when it moved); seenAt the pass that last
	// told this observer what it sees.
	movedAt, seenAt uint64
	index           int
	cell            int
	slot            int
	known           []ID // what this observer was last told it sees
}

func (c *character) snapshot() Snapshot {
	return Snapshot{ID: c.id, Name: c.name, X: c.x, Y: c.y, DX: c.dx, DY: c.dy}
}

// World is one area and its characters. It is not safe for concurrent use.
type World struct {
	cfg    Config
	dt     float64 // seconds per step
	tick   uint64
	nextID ID
	pass   uint64 // replication passes so far (ReplicatePart)
	chars  []*character
	byID   map[ID]*character
	byKey  map[string]*character
	grid   grid

	// Reused by Replicate and the queries so that steady state allocates nothing.
	seen  []*character
	keys  []uint64 // id<<32 | index, see grid.withinKeys
	delta Delta
}

// New returns an empty World, or ErrBadConfig naming the bad field.
func New(cfg Config) (*World, error) {
	if err := cfg.populate(); err != nil {
		return nil, err
	}
	w := &World{
		cfg:   cfg,
		dt:    1 / float64(cfg.TickRate),
		byID:  make(map[ID]*character),
		byKey: make(map[string]*character),
	}
	w.grid.init(cfg.Width, cfg.Height, cfg.InterestRadius)
	return w, nil
}

// Config returns the configuration with defaults filled in.
func (w *World) Config() Config { return w.cfg }

// Tick returns the number of steps taken.
func (w *World) Tick() uint64 { return w.tick }

// Len returns the number of characters in the world.
func (w *World) Len() int { return len(w.chars) }

// Enter places a character named name at (x, y), clamped to the area, and
// returns its ID. Names are unique without regard to ASCII case.
func (w *World) Enter(name string, x, y float64) (ID, error) {
	key := strings.ToLower(name)
	switch {
	case name == "":
		return 0, ErrBadName
	case w.byKey[key] != nil:
		return 0, ErrAlreadyInWorld
	case len(w.chars) >= w.cfg.MaxCharacters:
		return 0, ErrFull
	case math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0):
		return 0, ErrBadPosition
	}
	w.nextID++
	if w.nextID == 0 {
		w.nextID = 1 // 2^32 entries in one run: wrap rather than hand out 0
	}
	c := &character{id: w.nextID, name: name, key: key, index: len(w.chars)}
	c.x, c.y = w.clamp(x, y)
	w.chars = append(w.chars, c)
	w.byID[c.id] = c
	w.byKey[key] = c
	w.grid.add(c)
	return c.id, nil
}

// Leave removes a character and returns its last state (to be saved).
func (w *World) Leave(id ID) (Snapshot, error) {
	c := w.byID[id]
	if c == nil {
		return Snapshot{}, ErrNotInWorld
	}
	w.grid.remove(c)
	last := len(w.chars) - 1
	w.chars[c.index] = w.chars[last]
	w.chars[c.index].index = c.index
	w.chars[last] = nil
	w.chars = w.chars[:last]
	delete(w.byID, id)
	delete(w.byKey, c.key)
	return c.snapshot(), nil
}

// Get returns a character's state.
func (w *World) Get(id ID) (Snapshot, bool) {
	c := w.byID[id]
	if c == nil {
		return Snapshot{}, false
	}
	return c.snapshot(), true
}

// Lookup returns the ID of the character named name (ASCII case ignored).
func (w *World) Lookup(name string) (ID, bool) {
	c := w.byKey[strings.ToLower(name)]
	if c == nil {
		return 0, false
	}
	return c.id, true
}

// Each calls fn with every character's state, in no particular order.
func (w *World) Each(fn func(Snapshot)) {
	for _, c := range w.chars {
		fn(c.snapshot())
	}
}

// SetIntent sets a character's movement intent from a client's (dx, dy):
// each component must be finite and within -1..1 (ErrBadIntent); (0, 0)
// stops; anything else is normalised to a unit direction, so the speed is
// always Config.Speed.
func (w *World) SetIntent(id ID, dx, dy float64) error {
	c := w.byID[id]
	if c == nil {
		return ErrNotInWorld
	}
	if !(dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1) { // also false for NaN
		return ErrBadIntent
	}
	if dx == 0 && dy == 0 {
		c.dx, c.dy = 0, 0
		return nil
	}
	l := math.Hypot(dx, dy)
	c.dx, c.dy = dx/l, dy/l
	return nil
}

// Stop clears a character's movement intent.
func (w *World) Stop(id ID) error { return w.SetIntent(id, 0, 0) }

// Step advances the clock by one tick: every moving character goes
// Speed/TickRate units along its direction, clamped to the area.
func (w *World) Step() {
	w.tick++
	step := w.cfg.Speed * w.dt
	for _, c := range w.chars {
		if c.dx == 0 && c.dy == 0 {
			continue
		}
		x, y := w.clamp(c.x+c.dx*step, c.y+c.dy*step)
		if x == c.x && y == c.y {
			continue // pressed against a wall
		}
		c.x, c.y, c.movedAt = x, y, w.pass+1
		w.grid.move(c)
	}
}

func (w *World) clamp(x, y float64) (float64, float64) {
	return min(max(x, 0), w.cfg.Width), min(max(y, 0), w.cfg.Height)
}

// Place moves a character to (x, y), clamped to the area, keeping its
// intent (an area server keeps its characters inside its own area this
// way, docs/mmo.md §13).
func (w *World) Place(id ID, x, y float64) error {
	c := w.byID[id]
	if c == nil {
		return ErrNotInWorld
	}
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return ErrBadPosition
	}
	x, y = w.clamp(x, y)
	if x == c.x && y == c.y {
		return nil
	}
	c.x, c.y, c.movedAt = x, y, w.pass+1
	w.grid.move(c)
	return nil
}
