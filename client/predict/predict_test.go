package predict

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

func TestNewValidatesConfig(t *testing.T) {
	w := newWorld(t)
	nan := float32(math.NaN())
	for _, c := range []struct {
		name  string
		world *movement.World
		start movement.State
		cfg   Config
	}{
		{"nil world", nil, spawn, Config{}},
		{"negative MaxPending", w, spawn, Config{MaxPending: -1}},
		{"huge MaxPending", w, spawn, Config{MaxPending: MaxMaxPending + 1}},
		{"negative SmoothTime", w, spawn, Config{SmoothTime: -time.Millisecond}},
		{"NaN SnapDistance", w, spawn, Config{SnapDistance: nan}},
		{"negative SnapDistance", w, spawn, Config{SnapDistance: -1}},
		{"infinite SnapDistance", w, spawn, Config{SnapDistance: float32(math.Inf(1))}},
		{"NaN start", w, movement.State{Yaw: nan}, Config{}},
	} {
		if _, err := New(c.world, c.start, c.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", c.name, err)
		}
	}
	p, err := New(w, spawn, Config{})
	if err != nil || p.cfg.MaxPending != DefaultMaxPending || p.cfg.SnapDistance != DefaultSnapDistance || p.nextSeq != 1 {
		t.Fatalf("defaults: %+v %v", p.cfg, err)
	}
}

// TestReconcileWithAgreeingServer: an ack carrying exactly what the server
// computed drops the acknowledged inputs, replays the rest, and corrects by
// exactly zero.
func TestReconcileWithAgreeingServer(t *testing.T) {
	p := newPredictor(t, Config{})
	srv := authority{world: newWorld(t), state: spawn}
	sc := newScript(1)
	var sent []gamemsg.ClientInput
	for tick := range 300 {
		in, err := p.Predict(sc.next(tick))
		if err != nil {
			t.Fatal(err)
		}
		if in.InputSeq != uint32(tick+1) {
			t.Fatalf("seq %d at tick %d", in.InputSeq, tick)
		}
		sent = append(sent, in)
		if tick%3 == 2 && tick > 4 { // the server is 4 inputs behind, acking every third tick
			for _, in := range sent[srv.last:max(0, len(sent)-4)] {
				srv.apply(t, in)
			}
			ok, err := p.Reconcile(srv.state.Ack(srv.last))
			if !ok || err != nil {
				t.Fatalf("Reconcile: %v %v", ok, err)
			}
			if p.LastCorrection() != 0 || p.Pending() != 4 {
				t.Fatalf("tick %d: correction %v, pending %d", tick, p.LastCorrection(), p.Pending())
			}
		}
	}
	for _, in := range sent[srv.last:] {
		srv.apply(t, in)
	}
	if ok, _ := p.Reconcile(srv.state.Ack(srv.last)); !ok || p.State() != srv.state || p.Pending() != 0 {
		t.Fatalf("final: client %+v server %+v pending %d", p.State(), srv.state, p.Pending())
	}
	st := p.Stats()
	if st.Corrections != 0 || st.MaxCorrection != 0 || st.Acks != 100 || st.Predicted != 300 || st.Replayed != 99*4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReconcileCorrectsAndReplays(t *testing.T) {
	p := newPredictor(t, Config{})
	for tick := range 10 {
		if _, err := p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02, ClientTime: float32(tick)}); err != nil {
			t.Fatal(err)
		}
	}
	// The server says that after input 4 the player stood 3 units further +X.
	w := newWorld(t)
	auth := spawn
	for range 4 {
		auth, _ = w.Step(auth, gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	auth.Position.X += 3
	before := p.State()
	if ok, err := p.Reconcile(auth.Ack(4)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	want := auth
	for range 6 {
		want, _ = w.Step(want, gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	if p.State() != want || p.Pending() != 6 {
		t.Fatalf("after reconcile %+v, want %+v", p.State(), want)
	}
	if c := p.LastCorrection(); math.Abs(float64(c)-3) > 1e-5 || before.Position.X != p.State().Position.X-3 {
		t.Fatalf("correction %v, want 3", c)
	}
	if s := p.Stats(); s.Corrections != 1 || s.MaxCorrection != p.LastCorrection() || s.Replayed != 6 {
		t.Fatalf("stats %+v", s)
	}
}

func TestStaleDuplicateAndRefusedAcks(t *testing.T) {
	p := newPredictor(t, Config{})
	if _, err := p.Reconcile(spawn.Ack(0)); !errors.Is(err, ErrAckNotSent) {
		t.Fatalf("ack before any input: %v", err)
	}
	for range 5 {
		p.Predict(gamemsg.ClientInput{MoveRight: 1, DT: 0.02})
	}
	moved := spawn
	moved.Position.X = 1
	if ok, _ := p.Reconcile(moved.Ack(3)); !ok {
		t.Fatal("ack 3 not applied")
	}
	state := p.State()
	if ok, err := p.Reconcile(spawn.Ack(2)); ok || err != nil || p.State() != state {
		t.Fatalf("stale ack 2: %v %v", ok, err)
	}
	if ok, err := p.Reconcile(moved.Ack(3)); !ok || err != nil || p.State() != state || p.LastCorrection() != 0 {
		t.Fatalf("duplicate ack 3: %v %v correction %v", ok, err, p.LastCorrection())
	}
	if _, err := p.Reconcile(moved.Ack(6)); !errors.Is(err, ErrAckNotSent) {
		t.Fatalf("ack for unsent input 6: %v", err)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, bad := range []gamemsg.InputAck{
		{LastInputSeq: 4, Position: wire.Vec3{X: nan}},
		{LastInputSeq: 4, Velocity: wire.Vec3{Y: -inf}},
		{LastInputSeq: 4, Yaw: inf},
		{LastInputSeq: 4, Pitch: nan},
	} {
		if ok, err := p.Reconcile(bad); ok || !errors.Is(err, ErrInvalidAck) || p.State() != state {
			t.Fatalf("ack %+v: %v %v", bad, ok, err)
		}
	}
	if s := p.Stats(); s.StaleAcks != 1 || s.InvalidAcks != 6 || s.Acks != 2 || p.Pending() != 2 {
		t.Fatalf("stats %+v pending %d", s, p.Pending())
	}
	if seq, ok := p.LastAcked(); seq != 3 || !ok {
		t.Fatalf("LastAcked %d %v", seq, ok)
	}
}

func TestHugeAckStaysFinite(t *testing.T) {
	p := newPredictor(t, Config{SmoothTime: 100 * time.Millisecond})
	for range 3 {
		p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	big := float32(math.MaxFloat32)
	ack := gamemsg.InputAck{LastInputSeq: 1, Position: wire.Vec3{X: big, Y: -big, Z: big}, Velocity: wire.Vec3{X: -big, Y: big, Z: big}, Yaw: big, Pitch: -big}
	if ok, err := p.Reconcile(ack); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if !p.State().IsFinite() || !(wire.Vec3{X: p.LastCorrection()}).IsFinite() || !p.RenderPosition().IsFinite() {
		t.Fatalf("state %+v correction %v render %+v", p.State(), p.LastCorrection(), p.RenderPosition())
	}
	// The replayed state was clamped back into the map's bounds.
	if x := p.State().Position.X; x > 20 {
		t.Fatalf("replay left the player outside the map: x=%v", x)
	}
	// With nothing to replay the absurd state is kept (the server is the
	// authority), and the correction saturates instead of overflowing.
	p.Reconcile(movement.State{}.Ack(3))
	ack.LastInputSeq = 3
	if ok, err := p.Reconcile(ack); !ok || err != nil || p.LastCorrection() != math.MaxFloat32 || !p.RenderPosition().IsFinite() {
		t.Fatalf("correction %v render %+v (%v %v)", p.LastCorrection(), p.RenderPosition(), ok, err)
	}
}

func TestMalformedInputIsRefused(t *testing.T) {
	p := newPredictor(t, Config{})
	for _, in := range []gamemsg.ClientInput{
		{MoveForward: 2, DT: 0.02},
		{MoveRight: float32(math.NaN()), DT: 0.02},
		{DT: 0},
		{DT: 0.02, LookPitch: 90},
		{DT: 0.02, Buttons: 0x80},
	} {
		if _, err := p.Predict(in); !errors.Is(err, movement.ErrInvalidInput) {
			t.Fatalf("Predict(%+v) = %v", in, err)
		}
	}
	if p.Pending() != 0 || p.State() != spawn || p.Stats().Predicted != 0 {
		t.Fatal("a refused input changed the predictor")
	}
	if in, _ := p.Predict(gamemsg.ClientInput{DT: 0.02}); in.InputSeq != 1 {
		t.Fatalf("refused inputs used sequences: next is %d", in.InputSeq)
	}
}

func TestPendingCapDropsOldest(t *testing.T) {
	p := newPredictor(t, Config{MaxPending: 4})
	for range 7 {
		p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	got := p.AppendPending(nil)
	if len(got) != 4 || got[0].InputSeq != 4 || got[3].InputSeq != 7 || p.Stats().Dropped != 3 {
		t.Fatalf("pending %v dropped %d", got, p.Stats().Dropped)
	}
	// An ack for a dropped input replays what is left: all four.
	if ok, _ := p.Reconcile(spawn.Ack(2)); !ok || p.Pending() != 4 || p.Stats().Replayed != 4 {
		t.Fatalf("pending %d replayed %d", p.Pending(), p.Stats().Replayed)
	}
	if ok, _ := p.Reconcile(spawn.Ack(6)); !ok || p.Pending() != 1 {
		t.Fatalf("pending %d after ack 6", p.Pending())
	}
}

func TestSequenceWrap(t *testing.T) {
	p := newPredictor(t, Config{FirstSeq: math.MaxUint32 - 2})
	var seqs []uint32
	for range 6 {
		in, _ := p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
		seqs = append(seqs, in.InputSeq)
	}
	if seqs[0] != math.MaxUint32-2 || seqs[3] != 0 || seqs[5] != 2 {
		t.Fatalf("sequences %v", seqs)
	}
	if ok, err := p.Reconcile(spawn.Ack(math.MaxUint32)); !ok || err != nil || p.Pending() != 3 {
		t.Fatalf("ack MaxUint32: %v %v pending %d", ok, err, p.Pending())
	}
	if ok, err := p.Reconcile(spawn.Ack(math.MaxUint32 - 1)); ok || err != nil {
		t.Fatalf("older ack across the wrap: %v %v", ok, err)
	}
	if ok, err := p.Reconcile(spawn.Ack(1)); !ok || err != nil || p.Pending() != 1 {
		t.Fatalf("ack 1 after the wrap: %v %v pending %d", ok, err, p.Pending())
	}
	if _, err := p.Reconcile(spawn.Ack(3)); !errors.Is(err, ErrAckNotSent) {
		t.Fatalf("ack 3 (unsent): %v", err)
	}
}

func TestSmoothCorrection(t *testing.T) {
	p := newPredictor(t, Config{SmoothTime: 100 * time.Millisecond, SnapDistance: 2})
	p.Predict(gamemsg.ClientInput{DT: 0.02})
	p.Predict(gamemsg.ClientInput{DT: 0.02})
	before := p.RenderPosition()
	auth := spawn
	auth.Position.X += 1 // the server put us 1 unit further +X at input 1
	p.Reconcile(auth.Ack(1))
	if p.LastCorrection() != 1 {
		t.Fatalf("correction %v", p.LastCorrection())
	}
	if got := p.RenderPosition(); got != before {
		t.Fatalf("rendered position jumped from %+v to %+v", before, got)
	}
	target := p.State().Position
	p.Elapse(25 * time.Millisecond)
	if got := p.RenderPosition(); math.Abs(float64(got.X-target.X)+0.75) > 1e-6 {
		t.Fatalf("after a quarter of SmoothTime: x %v, want %v", got.X, target.X-0.75)
	}
	p.Elapse(-time.Second) // ignored
	p.Elapse(50 * time.Millisecond)
	if got := p.RenderPosition(); math.Abs(float64(got.X-target.X)+0.25) > 1e-6 {
		t.Fatalf("after three quarters: x %v, want %v", got.X, target.X-0.25)
	}
	p.Elapse(time.Hour)
	if got := p.RenderPosition(); got != target {
		t.Fatalf("after SmoothTime: %+v, want %+v", got, target)
	}
	// Beyond SnapDistance the correction is snapped: no offset.
	auth.Position.X += 5
	p.Reconcile(auth.Ack(2))
	if p.RenderPosition() != p.State().Position || p.LastCorrection() < 2 {
		t.Fatalf("big correction smoothed: render %+v state %+v", p.RenderPosition(), p.State().Position)
	}
	// Without SmoothTime every correction snaps.
	q := newPredictor(t, Config{})
	q.Predict(gamemsg.ClientInput{DT: 0.02})
	q.Reconcile(auth.Ack(1))
	if q.RenderPosition() != q.State().Position || q.LastCorrection() == 0 {
		t.Fatal("correction smoothed without SmoothTime")
	}
}

func TestReset(t *testing.T) {
	p := newPredictor(t, Config{SmoothTime: time.Second})
	for range 3 {
		p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	p.Reconcile(movement.State{Position: wire.Vec3{X: 1}}.Ack(1))
	respawn := movement.State{Position: wire.Vec3{X: 10, Z: 10}, Grounded: true}
	if err := p.Reset(respawn); err != nil || p.Pending() != 0 || p.RenderPosition() != respawn.Position {
		t.Fatalf("Reset: %v pending %d render %+v", err, p.Pending(), p.RenderPosition())
	}
	if in, _ := p.Predict(gamemsg.ClientInput{DT: 0.02}); in.InputSeq != 4 {
		t.Fatalf("numbering restarted: %d", in.InputSeq)
	}
	if err := p.Reset(movement.State{Yaw: float32(math.NaN())}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Reset(NaN) = %v", err)
	}
}

// An InputAck of an input sent before a Reset describes the world before
// the teleport (a respawn: the corpse's position) and may arrive after the
// message that caused the Reset: it is stale, not a correction. The first
// ack of an input sent after the Reset reconciles as usual.
func TestAckBeforeResetIsStale(t *testing.T) {
	p := newPredictor(t, Config{})
	for range 3 {
		p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
	}
	corpse := movement.State{Position: wire.Vec3{X: 1}, Grounded: true}
	p.Reconcile(corpse.Ack(1))
	respawn := movement.State{Position: wire.Vec3{X: 40, Z: 40}, Grounded: true}
	if err := p.Reset(respawn); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint32{2, 3} {
		if ok, err := p.Reconcile(corpse.Ack(seq)); ok || err != nil || p.State().Position != respawn.Position {
			t.Fatalf("ack %d of an input before the reset: reconciled %v (%v), position %+v; want stale, at the respawn",
				seq, ok, err, p.State().Position)
		}
	}
	if st := p.Stats(); st.StaleAcks != 2 || st.Acks != 1 {
		t.Fatalf("stats %+v: want 2 stale acks, 1 reconciled", st)
	}
	in, _ := p.Predict(gamemsg.ClientInput{DT: 0.02})
	server := p.State() // the server agrees: it stepped the respawn with this input
	if ok, err := p.Reconcile(server.Ack(in.InputSeq)); !ok || err != nil {
		t.Fatalf("ack of the first input after the reset: %v %v", ok, err)
	}
	if c := p.LastCorrection(); c != 0 {
		t.Fatalf("correction %v after the reset, want 0", c)
	}
}

func TestPredictReconcileAllocateNothing(t *testing.T) {
	p := newPredictor(t, Config{SmoothTime: 50 * time.Millisecond})
	srv := authority{world: newWorld(t), state: spawn}
	sc := newScript(5)
	tick := 0
	step := func() {
		in, _ := p.Predict(sc.next(tick))
		tick++
		srv.apply(t, in)
		ack := srv.state.Ack(srv.last)
		ack.Position.X += 0.01 // force a correction and a replay each time
		p.Reconcile(ack)
		p.Elapse(20 * time.Millisecond)
	}
	if n := testing.AllocsPerRun(500, step); n != 0 {
		t.Fatalf("Predict+Reconcile allocate %v times", n)
	}
}
