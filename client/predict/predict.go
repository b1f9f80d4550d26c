package predict

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// Defaults and bounds of Config.
const (
	DefaultMaxPending   = 128 // ≈ 2 s of inputs at 60 Hz
	MaxMaxPending       = 1 << 16
	DefaultSnapDistance = 4.0 // units
)

// Errors of Predictor; match them with errors.Is.
var (
	ErrInvalidConfig = errors.New("predict: invalid config")
	// ErrInvalidAck: an InputAck with a non-finite field, refused.
	ErrInvalidAck = errors.New("predict: InputAck has a non-finite field")
	// ErrAckNotSent: an InputAck for a sequence this Predictor never sent
	// (ahead of the newest input, or before anything was sent), refused.
	ErrAckNotSent = errors.New("predict: InputAck for an input never sent")
)

// Config configures a Predictor. Its zero value keeps 128 pending inputs and
// snaps corrections without smoothing.
type Config struct {
	// MaxPending bounds the inputs awaiting acknowledgement; 0 means 128, at
	// most 65536. When full, Predict drops the oldest pending input (counted
	// in Stats.Dropped) rather than refusing the new one: the local player
	// never freezes because the link stalls, and the price is paid once, as
	// a correction, when acks resume (the replay then lacks the dropped
	// inputs, as the server probably does too).
	MaxPending int
	// SmoothTime is how long a correction takes to fade from the rendered
	// position (linearly); 0 snaps at once.
	SmoothTime time.Duration
	// SnapDistance in units: a correction longer than this is snapped even
	// with smoothing (a respawn must not glide across the map). 0 means 4.
	SnapDistance float32
	// FirstSeq is the sequence of the first input; 0 means 1. Sequences wrap
	// around uint32 and are compared in serial-number arithmetic, so a
	// reconnecting client may continue where it stopped.
	FirstSeq uint32
}

// Stats counts a Predictor's work.
type Stats struct {
	Predicted   uint64 // inputs predicted and recorded
	Acks        uint64 // InputAcks reconciled
	StaleAcks   uint64 // InputAcks older than the last reconciled one, ignored
	InvalidAcks uint64 // InputAcks refused (ErrInvalidAck, ErrAckNotSent)
	Dropped     uint64 // pending inputs dropped by the MaxPending cap
	Replayed    uint64 // inputs re-simulated during reconciliation
	Corrections uint64 // reconciliations that moved the predicted position

	// LastCorrection is the correction of the last reconciliation, in units:
	// the distance between the predicted position just before it and just
	// after it (snapped and replayed). That is the jump the player would see
	// without smoothing; it is exactly 0 when the server agreed.
	LastCorrection float32
	MaxCorrection  float32 // largest LastCorrection so far
}

// Predictor predicts the local player. Create it with New.
type Predictor struct {
	world *movement.World
	cfg   Config
	state movement.State

	pending ring
	nextSeq uint32
	sent    bool   // an input was ever predicted
	acked   bool   // an ack was ever reconciled
	lastAck uint32 // sequence of the last reconciled ack
	// resetAt: lastAck is the last input sent before a Reset, not an ack;
	// an ack of it is stale too.
	resetAt bool

	offset    [3]float64 // render offset, decaying
	remaining time.Duration

	stats Stats
}

// New returns a Predictor that starts at state start (the spawn the server
// announced) in world, which must be the server's World.
func New(world *movement.World, start movement.State, cfg Config) (*Predictor, error) {
	if world == nil {
		return nil, fmt.Errorf("%w: nil World", ErrInvalidConfig)
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.SnapDistance == 0 {
		cfg.SnapDistance = DefaultSnapDistance
	}
	if cfg.FirstSeq == 0 {
		cfg.FirstSeq = 1
	}
	switch {
	case cfg.MaxPending < 0 || cfg.MaxPending > MaxMaxPending:
		return nil, fmt.Errorf("%w: MaxPending %d outside 1..%d", ErrInvalidConfig, cfg.MaxPending, MaxMaxPending)
	case cfg.SmoothTime < 0:
		return nil, fmt.Errorf("%w: negative SmoothTime %v", ErrInvalidConfig, cfg.SmoothTime)
	case !(cfg.SnapDistance > 0) || math.IsInf(float64(cfg.SnapDistance), 0):
		return nil, fmt.Errorf("%w: SnapDistance %v, want a finite value > 0", ErrInvalidConfig, cfg.SnapDistance)
	case !start.IsFinite():
		return nil, fmt.Errorf("%w: start state is not finite", ErrInvalidConfig)
	}
	return &Predictor{
		world:   world,
		cfg:     cfg,
		state:   start,
		pending: newRing(cfg.MaxPending),
		nextSeq: cfg.FirstSeq,
	}, nil
}

// Predict numbers in with the next sequence, simulates it from the current
// predicted state, keeps it until acknowledged, and returns it as it must be
// sent. The caller fills everything but InputSeq (one input per server tick:
// the server simulates each input over one tick whatever its dt says). A
// malformed input (movement.ErrInvalidInput) is refused: nothing changes and
// no sequence is used.
func (p *Predictor) Predict(in gamemsg.ClientInput) (gamemsg.ClientInput, error) {
	in.InputSeq = p.nextSeq
	next, err := p.world.Step(p.state, in)
	if err != nil {
		return in, err
	}
	if p.pending.full() {
		p.pending.popFront()
		p.stats.Dropped++
	}
	p.pending.push(in)
	p.state = next
	p.nextSeq++
	p.sent = true
	p.stats.Predicted++
	return in, nil
}

// Reconcile applies the server's InputAck: the state after it applied input
// ack.LastInputSeq. It drops every pending input up to that sequence, snaps
// to the acknowledged state, replays the remaining pending inputs, and
// records the correction. It returns whether the ack was applied:
//
//   - an ack older than the last one applied is stale (reordered) and
//     ignored: false, nil;
//   - an ack for the same sequence as the last one is applied again, since
//     the server may have moved the player since (a push); a duplicate
//     changes nothing and costs one replay;
//   - an ack with a non-finite field (ErrInvalidAck) or for a sequence never
//     sent (ErrAckNotSent) is refused: false and the error.
func (p *Predictor) Reconcile(ack gamemsg.InputAck) (bool, error) {
	auth := movement.StateFromAck(ack)
	if !auth.IsFinite() {
		p.stats.InvalidAcks++
		return false, ErrInvalidAck
	}
	seq := ack.LastInputSeq
	if !p.sent || serialAfter(seq, p.nextSeq-1) {
		p.stats.InvalidAcks++
		return false, fmt.Errorf("%w: ack %d, newest input %d", ErrAckNotSent, seq, p.nextSeq-1)
	}
	if p.acked && serialAfter(p.lastAck, seq) || p.resetAt && seq == p.lastAck {
		p.stats.StaleAcks++
		return false, nil
	}
	p.acked, p.lastAck, p.resetAt = true, seq, false
	for p.pending.len() > 0 && !serialAfter(p.pending.front().InputSeq, seq) {
		p.pending.popFront()
	}

	before := p.state.Position
	st := auth
	for i := range p.pending.len() {
		// Cannot fail: inputs were validated by Predict, and st is finite.
		st, _ = p.world.Step(st, p.pending.at(i))
	}
	p.stats.Replayed += uint64(p.pending.len())
	p.stats.Acks++
	p.state = st
	p.correct(before, st.Position)
	return true, nil
}

// correct records the correction from before to after and updates the render
// offset so that the rendered position does not jump.
func (p *Predictor) correct(before, after wire.Vec3) {
	d := [3]float64{
		float64(before.X) - float64(after.X),
		float64(before.Y) - float64(after.Y),
		float64(before.Z) - float64(after.Z),
	}
	// Saturated: two finite float32 positions can be further apart than the
	// largest float32 (an absurd ack), and a correction must stay finite.
	c := float32(min(math.Sqrt(d[0]*d[0]+d[1]*d[1]+d[2]*d[2]), math.MaxFloat32))
	p.stats.LastCorrection = c
	p.stats.MaxCorrection = max(p.stats.MaxCorrection, c)
	if c == 0 {
		return
	}
	p.stats.Corrections++
	if p.cfg.SmoothTime == 0 || c > p.cfg.SnapDistance {
		p.offset, p.remaining = [3]float64{}, 0
		return
	}
	for a := range d {
		p.offset[a] += d[a]
	}
	p.remaining = p.cfg.SmoothTime
}

// Elapse advances the smoothing clock by d (call it once per rendered frame
// with the frame's duration): the render offset shrinks linearly to zero over
// what remains of SmoothTime. A non-positive d does nothing.
func (p *Predictor) Elapse(d time.Duration) {
	if d <= 0 || p.remaining <= 0 {
		return
	}
	if d >= p.remaining {
		p.offset, p.remaining = [3]float64{}, 0
		return
	}
	k := float64(p.remaining-d) / float64(p.remaining)
	for a := range p.offset {
		p.offset[a] *= k
	}
	p.remaining -= d
}

// State returns the predicted state after the newest input.
func (p *Predictor) State() movement.State { return p.state }

// RenderPosition returns where to draw the player: the predicted position
// plus the render offset that smooths the last corrections away.
func (p *Predictor) RenderPosition() wire.Vec3 {
	pos := p.state.Position
	return wire.Vec3{
		X: float32(float64(pos.X) + p.offset[0]),
		Y: float32(float64(pos.Y) + p.offset[1]),
		Z: float32(float64(pos.Z) + p.offset[2]),
	}
}

// LastCorrection returns the correction of the last reconciliation in units
// (see Stats.LastCorrection).
func (p *Predictor) LastCorrection() float32 { return p.stats.LastCorrection }

// Pending returns the number of inputs awaiting acknowledgement.
func (p *Predictor) Pending() int { return p.pending.len() }

// AppendPending appends the inputs awaiting acknowledgement to dst, oldest
// first. Sending them all (or the newest few) with every new input makes the
// server's view survive datagram loss: it applies each sequence once and
// skips those it already has, so no input is lost unless every datagram
// carrying it is.
func (p *Predictor) AppendPending(dst []gamemsg.ClientInput) []gamemsg.ClientInput {
	for i := range p.pending.len() {
		dst = append(dst, p.pending.at(i))
	}
	return dst
}

// LastAcked returns the sequence of the last reconciled InputAck (after a
// Reset, of the last input sent before it: acks up to it are stale); ok is
// false before the first.
func (p *Predictor) LastAcked() (seq uint32, ok bool) { return p.lastAck, p.acked }

// Stats returns the Predictor's counters.
func (p *Predictor) Stats() Stats { return p.stats }

// Reset restarts prediction from s (say, on PlayerRespawn): pending inputs
// and the render offset are dropped; sequence numbering continues. An
// InputAck for an input sent before the reset is stale (counted in
// Stats.StaleAcks, ignored): it may describe the world before the teleport
// — a respawn's ack of the corpse, packed after the PlayerRespawn — and
// taking it would jump the player back there until the next ack. The first
// ack of an input sent after the reset reconciles as usual.
func (p *Predictor) Reset(s movement.State) error {
	if !s.IsFinite() {
		return fmt.Errorf("%w: reset state is not finite", ErrInvalidConfig)
	}
	if p.sent {
		p.acked, p.lastAck, p.resetAt = true, p.nextSeq-1, true
	}
	p.state = s
	for p.pending.len() > 0 {
		p.pending.popFront()
	}
	p.offset, p.remaining = [3]float64{}, 0
	return nil
}

// serialAfter reports whether sequence a comes after b in serial-number
// arithmetic (RFC 1982 over uint32): within half the space ahead of it.
func serialAfter(a, b uint32) bool { return int32(a-b) > 0 }
