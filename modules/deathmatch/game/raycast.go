package game

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// Raycaster validates a hitscan shot: the first player other than the
// shooter that the ray from origin along dir (unit length) meets within
// maxDist, as the shooter saw the world (lag-compensated), and where.
// The Game has already stopped the ray at the map's obstacles, so maxDist
// never reaches through a wall. The host's lag compensation implements it
// for the module; LagComp implements it over a sim/lagcomp History that
// the Game records itself.
type Raycaster interface {
	Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (victim uint32, point wire.Vec3, ok bool)
}

// Recorder is an optional capability of a Raycaster: a Game whose Raycaster
// is a Recorder hands it every living player's box at the end of every
// Tick, at the Game's time (Teleported set on a spawn). bodies is reused
// after the call.
type Recorder interface {
	Record(now time.Duration, bodies []lagcomp.Entity) error
}

// Resetter is an optional capability of a Raycaster: the Game calls Reset
// on a map change, when the recorded past no longer applies.
type Resetter interface {
	Reset()
}

// LagComp is a Raycaster and Recorder over a sim/lagcomp History: shots
// are traced against the boxes rewound to lagcomp.RewindTime(newest, RTT)
// minus InterpDelay, where newest is the last Record's time — the latest
// world the shooter can have seen.
type LagComp struct {
	h *lagcomp.History
	// RTT returns a shooter's round-trip time as the server measures it
	// (its ping); nil means 0.
	RTT func(shooter uint32) time.Duration
	// InterpDelay is how far in the past clients render other players;
	// shots rewind that much further.
	InterpDelay time.Duration

	now     time.Duration
	refused uint64
}

var (
	_ Raycaster = (*LagComp)(nil)
	_ Recorder  = (*LagComp)(nil)
	_ Resetter  = (*LagComp)(nil)
)

// NewLagComp returns a LagComp with an empty History configured by cfg.
func NewLagComp(cfg lagcomp.Config, rtt func(shooter uint32) time.Duration) (*LagComp, error) {
	h, err := lagcomp.NewHistory(cfg)
	if err != nil {
		return nil, err
	}
	return &LagComp{h: h, RTT: rtt}, nil
}

// Record stores a snapshot (see Recorder).
func (l *LagComp) Record(now time.Duration, bodies []lagcomp.Entity) error {
	if err := l.h.Record(now, bodies); err != nil {
		return err
	}
	l.now = now
	return nil
}

// Raycast traces a shot at the shooter's rewound time. A shot the History
// refuses (older than its window, nothing recorded) misses and is counted
// in Refused.
func (l *LagComp) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (uint32, wire.Vec3, bool) {
	var rtt time.Duration
	if l.RTT != nil {
		rtt = l.RTT(shooter)
	}
	at := lagcomp.RewindTime(l.now, rtt) - l.InterpDelay
	hit, ok, err := l.h.Raycast(origin, dir, maxDist, at, shooter)
	if err != nil {
		l.refused++
		return 0, wire.Vec3{}, false
	}
	return hit.Entity, hit.Point, ok
}

// Reset forgets the recorded past.
func (l *LagComp) Reset() { l.h.Reset() }

// Refused counts the shots the History refused.
func (l *LagComp) Refused() uint64 { return l.refused }

// History is the underlying History.
func (l *LagComp) History() *lagcomp.History { return l.h }
