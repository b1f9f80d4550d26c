package replicate

import (
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/lagcomp"
)

// A target runs along +X at 30 units/s; the shooter, with 200 ms RTT,
// fires straight down the Z axis at the X where it saw the
// target (100 ms ago), and at the X where the target is now.
func TestRaycastRewindsByHalfRTT(t *testing.T) {
	rtt := 200 * time.Millisecond
	w := newWorld(t, Config{Rate: 20, TickRate: 60, Refresh: -1})
	w.r.cfg.RTT = func(c uint32) (time.Duration, bool) { return rtt, c == 1 }
	w.join(1)
	w.join(2)
	shooter := w.spawn(module.Spawn{Owner: 1, Position: wire.Vec3{Z: -10}})
	target := w.spawn(module.Spawn{Owner: 2})
	period := time.Second / 60
	var now time.Duration
	for tick := range 120 {
		now = time.Duration(tick) * period
		w.r.BeginTick(now)
		w.move(target, float32(now.Seconds()*30), 0, 0)
		w.r.Tick(now)
	}
	now += period
	w.r.BeginTick(now)
	// Where the target was at now − 100 ms, and where it is now.
	seen := float32((now - rtt/2).Seconds() * 30)
	current := float32(now.Seconds() * 30)
	shoot := func(x float32) module.Hit {
		t.Helper()
		hit, err := w.r.Raycast(w.b, 1, wire.Vec3{X: x, Y: 1, Z: -10}, wire.Vec3{Z: 1}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return hit
	}
	if hit := shoot(seen); hit.Entity != target {
		t.Fatalf("aiming where the shooter saw the target: %+v", hit)
	}
	if hit := shoot(current); hit.Entity != 0 {
		t.Fatalf("aiming where the target is now hit %+v", hit)
	}
	// The shooter's own box is never hit, even from inside it.
	if hit, err := w.r.Raycast(w.b, 1, wire.Vec3{Y: 1, Z: -10}, wire.Vec3{Y: 1}, 0.5); err != nil || hit.Entity == shooter {
		t.Fatalf("hit itself: %+v %v", hit, err)
	}
	// A latency beyond the window is refused.
	rtt = 3 * time.Second
	if _, err := w.r.Raycast(w.b, 1, wire.Vec3{}, wire.Vec3{X: 1}, 10); !errors.Is(err, lagcomp.ErrTooOld) {
		t.Fatalf("3 s RTT: %v", err)
	}
	if _, err := w.r.Raycast(w.b, 7, wire.Vec3{}, wire.Vec3{X: 1}, 10); !errors.Is(err, ErrNoClient) {
		t.Fatalf("unknown shooter: %v", err)
	}
}

// A steady-state frame allocates nothing.
func TestFrameAllocatesNothing(t *testing.T) {
	w := newWorld(t, Config{InterestRadius: 30})
	w.net.loss = 1 // keep nothing: the transport's copies are not ours
	var ids []uint32
	for c := uint32(1); c <= 16; c++ {
		w.join(c)
		ids = append(ids, w.spawn(module.Spawn{Owner: c, Position: wire.Vec3{X: float32(c) * 5}}))
	}
	var now time.Duration
	for range 10 {
		now += time.Second / 20
		w.r.Tick(now)
	}
	w.net.send(0, 0, 0, nil)
	w.net.msgs = w.net.msgs[:0:0]
	send := w.r.cfg.Send
	w.r.cfg.Send = func(uint32, wire.MessageType, wire.Channel, []byte) error { return nil }
	defer func() { w.r.cfg.Send = send }()
	allocs := testing.AllocsPerRun(100, func() {
		for i, id := range ids {
			w.r.SetPosition(w.b, id, wire.Vec3{X: float32(i) * 5, Z: float32(now.Milliseconds() % 7)}, false)
			w.r.SetFields(w.b, id, i32(fHealth, int32(now.Milliseconds())))
		}
		now += time.Second / 20
		w.r.Tick(now)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per tick", allocs)
	}
}
