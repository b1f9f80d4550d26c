package lagcomp

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The lag-compensation scenario. A target runs along +X at a constant speed, 10 units in
// front of a shooter at the origin, and the server records both every tick.
// The shooter has a 150 ms RTT, so it saw the target as it was 75 ms before
// its shot reached the server (RewindTime). Geometry, chosen so that hit and
// miss are decided by a margin, not by rounding:
//
//   - target box: half-width 0.4 in X and Z, centred on z = 10; speed 10 u/s,
//     so in 75 ms it moves 0.75, nearly twice its half-width;
//   - shots are fired while the target is within 2 units of x = 0, so a ray
//     aimed at its centre stays within 0.04·|x| ≤ 0.08 of that centre's x
//     across the box's depth (z 9.6..10.4).
//
// Aimed where the shooter saw it, the ray passes within 0.08 of the rewound
// centre (inside the half-width 0.4): a hit, whose point we know exactly.
// Aimed where the target is at server time, it passes 0.75 ± 0.08 from the
// rewound centre (outside 0.4): a miss.
const (
	targetID, shooterID = 2, 1
	targetSpeed         = 10.0 // units/s along +X
	targetStartX        = -15.0
	targetZ             = 10.0
	targetHalf          = 0.4
	eyeY                = 1.0
)

func targetX(at time.Duration) float64 { return targetStartX + targetSpeed*at.Seconds() }

func targetBox(at time.Duration) AABB {
	x := float32(targetX(at))
	return AABB{Min: v3(x-targetHalf, 0, targetZ-targetHalf), Max: v3(x+targetHalf, 2, targetZ+targetHalf)}
}

var shooterBox = AABB{Min: v3(-0.4, 0, -0.4), Max: v3(0.4, 1.8, 0.4)}

func TestLagCompensationScenario(t *testing.T) {
	const rtt = 150 * time.Millisecond
	for _, rate := range []int{60, 40, 128} { // 75 ms falls between snapshots at 60 and 128 Hz, on one at 40 Hz
		t.Run(fmt.Sprintf("%dHz", rate), func(t *testing.T) {
			h := newHistory(t, Config{TickRate: rate})
			tickAt := func(i int) time.Duration { return time.Duration(i) * time.Second / time.Duration(rate) }
			shots := 0
			for i := 0; tickAt(i) <= 2*time.Second; i++ {
				now := tickAt(i)
				record(t, h, now, Entity{ID: shooterID, Box: shooterBox}, Entity{ID: targetID, Box: targetBox(now)})
				if math.Abs(targetX(now)) > 2 {
					continue
				}
				shots++
				at := RewindTime(now, rtt)
				if at != now-75*time.Millisecond {
					t.Fatalf("RewindTime = %v", at)
				}
				eye := v3(0, eyeY, 0) // inside the shooter's own box: excluded
				seen := targetX(at)
				aimSeen := v3(float32(seen), 0, targetZ) // level shot: dir.Y = 0
				hit, ok, err := h.Raycast(eye, aimSeen, 100, at, shooterID)
				if err != nil || !ok || hit.Entity != targetID {
					t.Fatalf("tick %d: shot where the shooter saw the target: %+v %v %v, want a hit on %d", i, hit, ok, err, targetID)
				}
				// The ray enters the front face z = 9.6 at x = seen·0.96.
				want := v3(float32(seen*(targetZ-targetHalf)/targetZ), eyeY, targetZ-targetHalf)
				if d := dist(hit.Point, want); d > 1e-4 {
					t.Fatalf("tick %d: hit point %+v, want %+v (off by %v)", i, hit.Point, want, d)
				}
				aimNow := v3(float32(targetX(now)), 0, targetZ)
				if hit, ok, err := h.Raycast(eye, aimNow, 100, at, shooterID); err != nil || ok {
					t.Fatalf("tick %d: shot where the target is now (server time): %+v %v %v, want a miss", i, hit, ok, err)
				}
				// Without lag compensation the same aim would have hit: the
				// test is not passing because the target is unhittable.
				if hit, ok, _ := h.Raycast(eye, aimNow, 100, now, shooterID); !ok || hit.Entity != targetID {
					t.Fatalf("tick %d: aim at the present target at the present time missed", i)
				}
				if _, ok, _ := h.Raycast(eye, aimSeen, 100, at, NoEntity); !ok {
					t.Fatalf("tick %d: no hit at all without exclusion", i)
				}
			}
			if shots < rate*2/5-1 { // |x| ≤ 2 lasts 0.4 s
				t.Fatalf("only %d shots", shots)
			}
			// Beyond the history window the shot is refused, not clamped.
			_, now, _ := h.Span()
			for _, rtt := range []time.Duration{2*time.Second + time.Millisecond, 5 * time.Second} {
				_, _, err := h.Raycast(v3(0, eyeY, 0), v3(0, 0, 1), 100, RewindTime(now, rtt), shooterID)
				if !errors.Is(err, ErrTooOld) {
					t.Fatalf("RTT %v: %v, want ErrTooOld", rtt, err)
				}
			}
			if _, _, err := h.Raycast(v3(0, eyeY, 0), v3(0, 0, 1), 100, RewindTime(now, 2*time.Second), shooterID); err != nil {
				t.Fatalf("RTT 2 s, exactly the 1 s window: %v", err)
			}
			if _, _, err := h.Raycast(v3(0, eyeY, 0), v3(0, 0, 1), 100, now+time.Millisecond, shooterID); !errors.Is(err, ErrFuture) {
				t.Fatalf("future shot: %v", err)
			}
		})
	}
}

func dist(a, b wire.Vec3) float64 {
	return math.Sqrt(sq(a.X-b.X) + sq(a.Y-b.Y) + sq(a.Z-b.Z))
}

func sq(f float32) float64 { return float64(f) * float64(f) }

// sixtyFour returns 64 entities in an 8×8 grid around the origin at time i.
func sixtyFour(dst []Entity, i int) []Entity {
	dst = dst[:0]
	for k := range 64 {
		x, z := float32(k%8)*4-14, float32(k/8)*4-14
		x += float32(i%60) * 0.05
		dst = append(dst, Entity{ID: uint32(64 - k), Box: AABB{Min: v3(x-0.4, 0, z-0.4), Max: v3(x+0.4, 1.8, z+0.4)}})
	}
	return dst
}

func TestRecordRaycastAllocateNothing(t *testing.T) {
	h := newHistory(t, Config{})
	ents := sixtyFour(nil, 0)
	var out []Entity
	i := 0
	step := func() {
		i++
		now := time.Duration(i) * time.Second / 60
		ents = sixtyFour(ents, i)
		if err := h.Record(now, ents); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.Raycast(v3(-20, 1, -13.9), v3(1, 0, 0.01), 100, now-75*time.Millisecond, 64); err != nil && i > 5 {
			t.Fatal(err)
		}
		out, _ = h.Rewind(now, out[:0])
	}
	for range 200 { // grow every ring slot's buffer first
		step()
	}
	if n := testing.AllocsPerRun(500, step); n != 0 {
		t.Fatalf("Record+Raycast+Rewind allocate %v times per tick", n)
	}
}

// BenchmarkRecordRaycast64 is one tick of a 64-player server: record 64 boxes
// and validate one shot against the history 75 ms back (interpolated).
func BenchmarkRecordRaycast64(b *testing.B) {
	h := newHistory(b, Config{})
	ents := sixtyFour(nil, 0)
	for i := range 120 {
		_ = h.Record(time.Duration(i)*time.Second/60, sixtyFour(ents, i))
	}
	i := 120
	b.ReportAllocs()
	for b.Loop() {
		now := time.Duration(i) * time.Second / 60
		ents = sixtyFour(ents, i)
		if err := h.Record(now, ents); err != nil {
			b.Fatal(err)
		}
		if _, _, err := h.Raycast(v3(-20, 1, -13.9), v3(1, 0, 0.01), 100, now-75*time.Millisecond, 64); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRaycast64 is one shot against 64 rewound boxes.
func BenchmarkRaycast64(b *testing.B) {
	h := newHistory(b, Config{})
	ents := sixtyFour(nil, 0)
	for i := range 120 {
		_ = h.Record(time.Duration(i)*time.Second/60, sixtyFour(ents, i))
	}
	at := 119*time.Second/60 - 75*time.Millisecond
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := h.Raycast(v3(-20, 1, -13.9), v3(1, 0, 0.01), 100, at, 64); err != nil {
			b.Fatal(err)
		}
	}
}
