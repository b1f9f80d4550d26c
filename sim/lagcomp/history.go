package lagcomp

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Defaults and bounds of Config.
const (
	DefaultWindow      = time.Second
	MaxWindow          = 10 * time.Second
	DefaultTickRate    = 60
	MaxTickRate        = 1000
	DefaultMaxEntities = 4096
	MaxMaxEntities     = 1 << 16
)

// NoEntity is the entity id 0, which this package reserves to mean "none":
// Record refuses it, and Raycast excludes nothing when given it.
const NoEntity uint32 = 0

// Errors of History; match them with errors.Is.
var (
	ErrInvalidConfig   = errors.New("lagcomp: invalid config")
	ErrNotIncreasing   = errors.New("lagcomp: snapshot time not after the previous one")
	ErrInvalidEntity   = errors.New("lagcomp: invalid entity (id 0, a duplicate id, or a box that is not finite with min ≤ max)")
	ErrTooManyEntities = errors.New("lagcomp: more entities than Config.MaxEntities")
	ErrNoHistory       = errors.New("lagcomp: nothing recorded yet")
	ErrTooOld          = errors.New("lagcomp: time is older than the history window")
	ErrFuture          = errors.New("lagcomp: time is after the newest snapshot")
	ErrInvalidRay      = errors.New("lagcomp: invalid ray (non-finite, zero direction, or max distance not finite and > 0)")
)

// Config configures a History. Its zero value is a 1 s window at 60 Hz.
type Config struct {
	// Window is how far back before the newest snapshot Rewind may go;
	// 0 means 1 s, at most MaxWindow.
	Window time.Duration
	// TickRate in Hz is how often Record is called; with Window it sizes the
	// ring (Window·TickRate + 2 snapshots). 0 means 60, at most MaxTickRate.
	// Recording faster than TickRate shortens the history below Window.
	TickRate int
	// MaxEntities bounds the entities of one snapshot, and so the memory;
	// 0 means 4096, at most 65536.
	MaxEntities int
}

// Entity is one entity's box in a snapshot.
type Entity struct {
	ID  uint32 // not NoEntity
	Box AABB
	// Teleported marks a jump since the previous snapshot (a respawn, a
	// teleporter): Rewind does not interpolate across it, and reports the
	// entity at its previous box until the snapshot that shows it moved.
	Teleported bool
}

// snapshot is the entities of one tick, sorted by ID.
type snapshot struct {
	at       time.Duration
	entities []Entity
}

// History is the ring of recent snapshots. Create it with NewHistory.
type History struct {
	window      time.Duration
	maxEntities int
	ring        []snapshot
	head        int // index in ring of the oldest snapshot
	n           int // snapshots held
	scratch     []Entity
}

// NewHistory returns an empty History configured by cfg.
func NewHistory(cfg Config) (*History, error) {
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.TickRate == 0 {
		cfg.TickRate = DefaultTickRate
	}
	if cfg.MaxEntities == 0 {
		cfg.MaxEntities = DefaultMaxEntities
	}
	switch {
	case cfg.Window < 0 || cfg.Window > MaxWindow:
		return nil, fmt.Errorf("%w: Window %v outside (0, %v]", ErrInvalidConfig, cfg.Window, MaxWindow)
	case cfg.TickRate < 0 || cfg.TickRate > MaxTickRate:
		return nil, fmt.Errorf("%w: TickRate %d Hz outside 1..%d", ErrInvalidConfig, cfg.TickRate, MaxTickRate)
	case cfg.MaxEntities < 0 || cfg.MaxEntities > MaxMaxEntities:
		return nil, fmt.Errorf("%w: MaxEntities %d outside 1..%d", ErrInvalidConfig, cfg.MaxEntities, MaxMaxEntities)
	}
	// Enough snapshots to bracket any time in the window: the window spans
	// ⌈Window·TickRate⌉ periods, hence one more snapshot, plus one of slack
	// for a tick recorded a little early.
	periods := (int64(cfg.Window)*int64(cfg.TickRate) + int64(time.Second) - 1) / int64(time.Second)
	return &History{
		window:      cfg.Window,
		maxEntities: cfg.MaxEntities,
		ring:        make([]snapshot, periods+2),
	}, nil
}

// Window returns how far back Rewind may go before the newest snapshot.
func (h *History) Window() time.Duration { return h.window }

// Len returns the number of snapshots held.
func (h *History) Len() int { return h.n }

// Span returns the times of the oldest and newest snapshots held; ok is false
// when nothing has been recorded.
func (h *History) Span() (oldest, newest time.Duration, ok bool) {
	if h.n == 0 {
		return 0, 0, false
	}
	return h.get(0).at, h.get(h.n - 1).at, true
}

// Reset forgets every snapshot (a map change), keeping the memory.
func (h *History) Reset() { h.head, h.n = 0, 0 }

// get returns the i-th snapshot held, oldest first.
func (h *History) get(i int) *snapshot { return &h.ring[(h.head+i)%len(h.ring)] }

// Record stores the boxes of every entity at server time now, which must be
// after the previous snapshot's. entities is copied, in any order. The whole
// snapshot is refused (and nothing changes) if an entity has id NoEntity, a
// duplicate id, or a box that is not finite with Min ≤ Max. Once the ring is
// full the oldest snapshot is overwritten. Record allocates only while the
// ring's buffers grow to the largest entity count seen.
func (h *History) Record(now time.Duration, entities []Entity) error {
	if h.n > 0 && now <= h.get(h.n-1).at {
		return fmt.Errorf("%w: %v after %v", ErrNotIncreasing, now, h.get(h.n-1).at)
	}
	if len(entities) > h.maxEntities {
		return fmt.Errorf("%w: %d > %d", ErrTooManyEntities, len(entities), h.maxEntities)
	}
	s := append(h.scratch[:0], entities...)
	slices.SortFunc(s, func(a, b Entity) int { return cmp.Compare(a.ID, b.ID) })
	for i := range s {
		if s[i].ID == NoEntity || !s[i].Box.valid() || (i > 0 && s[i].ID == s[i-1].ID) {
			h.scratch = s
			return fmt.Errorf("%w: entity %d box %+v", ErrInvalidEntity, s[i].ID, s[i].Box)
		}
	}
	var slot *snapshot
	if h.n < len(h.ring) {
		slot = h.get(h.n)
		h.n++
	} else {
		slot = h.get(0)
		h.head = (h.head + 1) % len(h.ring)
	}
	// Swap buffers: the slot takes the sorted copy, scratch takes the slot's
	// old buffer for the next Record.
	h.scratch = slot.entities[:0]
	slot.at, slot.entities = now, s
	return nil
}
