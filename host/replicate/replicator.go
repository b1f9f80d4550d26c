package replicate

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Defaults and bounds of Config.
const (
	DefaultRate        = 20
	DefaultTickRate    = 60
	DefaultRepeats     = 3
	MaxRepeats         = 64
	DefaultRefresh     = time.Second
	DefaultMaxEntities = 8192
	MaxMaxEntities     = lagcomp.MaxMaxEntities
	// LeaveFactor: a known entity stays relevant until it is this many
	// interest radii away (hysteresis at the border).
	LeaveFactor = 1.1
)

// Config configures a Replicator. Zero values mean the documented defaults.
type Config struct {
	// TickRate in Hz is how often Tick is called; 0 means 60.
	TickRate int
	// Rate in Hz is how many replication frames are sent per second, at most
	// TickRate; 0 means 20 (match.replication_rate).
	Rate int
	// InterestRadius in world units: entities farther than this from a
	// client's viewpoint are not relevant to it. 0 means unlimited.
	InterestRadius float32
	// Repeats is how many consecutive frames carry a changed field (its
	// latest value); 0 means 3, at most 64.
	Repeats int
	// Refresh is the period of the full refresh of every relevant entity;
	// 0 means 1 s, negative disables it.
	Refresh time.Duration
	// LagWindow is how far back Raycast may rewind; 0 means 1 s, at most
	// lagcomp.MaxWindow.
	LagWindow time.Duration
	// MaxEntities bounds the live entities, all modules together; 0 means
	// 8192, at most 65536.
	MaxEntities int
	// Send hands one message to the transport for one admitted client.
	Send func(client uint32, t wire.MessageType, ch wire.Channel, payload []byte) error
	// SendState, when set, sends EntityStateUpdate instead of Send: state
	// about entity key carrying the fields of covers, which a newer state of
	// the same entity replaces while it waits in the transport's queue
	// (netstack.Server.SendState).
	SendState func(client uint32, t wire.MessageType, key, covers uint64, payload []byte) error
	// Backlogged, when set, reports whether a client's state waits in the
	// transport's queue (its link is slower than what it is sent): its
	// updates then carry every visible field of a changed entity, so that
	// the newest replaces the queued one without losing a field.
	Backlogged func(client uint32) bool
	// GameStateSync appends a GameStateSync for client (with the current
	// Schemas) to dst; nil sends none when the types change.
	GameStateSync func(client uint32, dst []byte) []byte
	// RTT returns a client's round-trip time (its ping); ok is false for a
	// client that is not admitted.
	RTT func(client uint32) (rtt time.Duration, ok bool)
	// Log receives send failures at debug level; nil discards.
	Log *slog.Logger
}

// Errors of the entity API; returned errors wrap them.
var (
	ErrInvalidConfig   = errors.New("replicate: invalid config")
	ErrNoBlock         = errors.New("replicate: no free entity id block (at most 255 modules)")
	ErrBadBlock        = errors.New("replicate: entity id block not reserved")
	ErrNotYours        = errors.New("replicate: entity id outside the module's block")
	ErrNoEntity        = errors.New("replicate: no such entity")
	ErrIDInUse         = errors.New("replicate: entity id in use")
	ErrUnknownType     = errors.New("replicate: entity type not declared by this module")
	ErrBadField        = errors.New("replicate: invalid field value")
	ErrBadPosition     = errors.New("replicate: position is not finite")
	ErrTooManyEntities = errors.New("replicate: too many entities")
	ErrNoClient        = fmt.Errorf("replicate: %w", module.ErrNoClient)
	ErrNoHitboxes      = fmt.Errorf("replicate: %w", module.ErrNoHitboxes)
)

// Stats counts a Replicator's work since it was created.
type Stats struct {
	Frames     uint64 // replication frames run
	Spawns     uint64 // EntitySpawn sent
	Updates    uint64 // EntityStateUpdate sent
	Destroys   uint64 // EntityDestroy sent
	Syncs      uint64 // GameStateSync sent because the types changed
	Bytes      uint64 // payload bytes of all of the above
	SendErrors uint64 // sends the transport refused (other than a departed client)
	Entities   int    // live entities now
	Clients    int    // clients now
}

// Replicator is the entity world of one server. Create it with New; every
// method but Schemas belongs to the game thread.
type Replicator struct {
	cfg           Config
	radius2       float64 // InterestRadius², 0 for unlimited
	leave2        float64
	refreshFrames uint32 // 0: no refresh

	types   map[uint16]*typeInfo
	schemas atomic.Pointer[schemaSet]
	blocks  [256]blockState // index 0 unused

	byID map[uint32]*entity
	list []*entity // by id
	gone []gone    // destroyed, until every client had a frame since

	viewers map[uint32]*viewer
	order   []*viewer // by client id
	// tick counts the ticks run (and Flushes); a change made during the
	// next one is stamped tick+1.
	tick  uint64
	now   time.Duration
	buf   []byte
	stats Stats
}

// gone is an entity destroyed during a tick.
type gone struct {
	id   uint32
	tick uint64
}

// New returns an empty Replicator.
func New(cfg Config) (*Replicator, error) {
	if cfg.TickRate == 0 {
		cfg.TickRate = DefaultTickRate
	}
	if cfg.Rate == 0 {
		cfg.Rate = min(DefaultRate, cfg.TickRate)
	}
	if cfg.Repeats == 0 {
		cfg.Repeats = DefaultRepeats
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.LagWindow == 0 {
		cfg.LagWindow = lagcomp.DefaultWindow
	}
	if cfg.MaxEntities == 0 {
		cfg.MaxEntities = DefaultMaxEntities
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.TickRate < 0 || cfg.TickRate > lagcomp.MaxTickRate:
		return nil, fmt.Errorf("%w: TickRate %d Hz outside 1..%d", ErrInvalidConfig, cfg.TickRate, lagcomp.MaxTickRate)
	case cfg.Rate < 0 || cfg.Rate > cfg.TickRate:
		return nil, fmt.Errorf("%w: Rate %d Hz outside 1..TickRate (%d)", ErrInvalidConfig, cfg.Rate, cfg.TickRate)
	case !(cfg.InterestRadius >= 0) || cfg.InterestRadius > 1e30:
		return nil, fmt.Errorf("%w: InterestRadius %v is not a finite distance ≥ 0", ErrInvalidConfig, cfg.InterestRadius)
	case cfg.Repeats < 0 || cfg.Repeats > MaxRepeats:
		return nil, fmt.Errorf("%w: Repeats %d outside 1..%d", ErrInvalidConfig, cfg.Repeats, MaxRepeats)
	case cfg.LagWindow < 0 || cfg.LagWindow > lagcomp.MaxWindow:
		return nil, fmt.Errorf("%w: LagWindow %v outside (0, %v]", ErrInvalidConfig, cfg.LagWindow, lagcomp.MaxWindow)
	case cfg.MaxEntities < 0 || cfg.MaxEntities > MaxMaxEntities:
		return nil, fmt.Errorf("%w: MaxEntities %d outside 1..%d", ErrInvalidConfig, cfg.MaxEntities, MaxMaxEntities)
	case cfg.Send == nil:
		return nil, fmt.Errorf("%w: no Send", ErrInvalidConfig)
	}
	r := &Replicator{
		cfg:     cfg,
		types:   make(map[uint16]*typeInfo),
		byID:    make(map[uint32]*entity),
		viewers: make(map[uint32]*viewer),
	}
	if cfg.InterestRadius > 0 {
		rad := float64(cfg.InterestRadius)
		r.radius2, r.leave2 = rad*rad, rad*rad*LeaveFactor*LeaveFactor
	}
	if cfg.Refresh > 0 {
		r.refreshFrames = uint32(max(1, (cfg.Refresh*time.Duration(cfg.Rate)+time.Second/2)/time.Second))
	}
	r.schemas.Store(&schemaSet{})
	return r, nil
}

// Stats returns the counters.
func (r *Replicator) Stats() Stats {
	s := r.stats
	s.Entities, s.Clients = len(r.list), len(r.order)
	return s
}

// BeginTick sets the server time of the tick that is starting (time since
// any fixed origin, increasing): Raycast rewinds from it.
func (r *Replicator) BeginTick(now time.Duration) { r.now = now }

// Tick ends a tick at server time now: it records every hitbox in the
// lag-compensation history and sends a replication frame to the clients
// whose frame is due. Each client gets Rate frames per TickRate ticks,
// evenly spread, and the clients' frames are staggered over the ticks (by
// client id), so that a tick serves only its share of them.
func (r *Replicator) Tick(now time.Duration) {
	r.now = now
	r.record(now)
	r.tick++
	r.serve(false)
}

// Flush sends every client its replication frame now, whatever the
// schedule (tests; it counts as a tick without a lag-compensation record).
func (r *Replicator) Flush() {
	r.tick++
	r.serve(true)
}

// stamp is the tick number of changes made now.
func (r *Replicator) stamp() uint64 { return r.tick + 1 }

// ResyncTypes as AddClient's typesVersion sends the client a fresh
// GameStateSync at its first frame whatever the version: a client entering
// a room's world (docs/protocol.md §13.4), which it starts from nothing.
const ResyncTypes = ^uint64(0)

// AddClient starts replicating to an admitted client. typesVersion is the
// Schemas version of the GameStateSync it was sent at admission (0 if
// unknown: it is sent a fresh one; ResyncTypes: always). It is sent every
// relevant entity at the next frame: a full resync.
func (r *Replicator) AddClient(id uint32, typesVersion uint64) {
	if _, ok := r.viewers[id]; ok {
		return
	}
	v := &viewer{id: id, types: typesVersion, known: make(map[uint32]known),
		phase: uint64(id) % uint64(r.cfg.TickRate), lastTick: r.tick}
	r.viewers[id] = v
	i, _ := slices.BinarySearchFunc(r.order, id, func(v *viewer, id uint32) int { return cmpU32(v.id, id) })
	r.order = slices.Insert(r.order, i, v)
}

// RemoveClient stops replicating to a client that left. Its entities stay
// (the module destroys them if it wants).
func (r *Replicator) RemoveClient(id uint32) {
	if _, ok := r.viewers[id]; !ok {
		return
	}
	delete(r.viewers, id)
	r.order = slices.DeleteFunc(r.order, func(v *viewer) bool { return v.id == id })
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
