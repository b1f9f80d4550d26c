package movement

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// trace runs n random inputs from a fixed seed and returns a digest of every
// intermediate State's bits, checking the invariants on the way.
func trace(t *testing.T, n int) string {
	t.Helper()
	w := newArena(t, Params{})
	r := rand.New(rand.NewPCG(7, 11))
	s := State{Position: wire.Vec3{X: -15, Y: 3, Z: -15}}
	h := sha256.New()
	var buf []byte
	for i := range n {
		s = mustStep(t, w, s, randomInput(r, uint32(i)))
		assertSane(t, w, s)
		a := s.Ack(uint32(i))
		buf = gamemsg.AppendInputAck(buf[:0], &a)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// goldenTrace is trace(t, 20000) as computed on linux/amd64. The test pins the
// movement rules: a change to them (or a platform that computes a different
// bit anywhere) changes it. An intended rule change updates it, and every
// predicting client must ship the same change.
const goldenTrace = "58c8470f27f6848c7c312736ff164f741ab145d163f8505cf3ad37183f14ee88"

func TestDeterministicBitForBit(t *testing.T) {
	a, b := trace(t, 20000), trace(t, 20000)
	if a != b {
		t.Fatalf("two runs of the same inputs differ: %s vs %s", a, b)
	}
	if a != goldenTrace {
		t.Fatalf("trace digest %s, want %s: the movement rules or this platform's arithmetic changed", a, goldenTrace)
	}
}

func TestNeverEntersAnObstacle(t *testing.T) {
	w := newArena(t, Params{})
	r := rand.New(rand.NewPCG(3, 5))
	for run := range 20 {
		s := State{Position: wire.Vec3{X: float32(r.IntN(30) - 15), Y: float32(r.IntN(5)), Z: -15}}
		for i := range 2000 {
			s = mustStep(t, w, s, randomInput(r, uint32(i)))
			b := w.PlayerBox(s).box64()
			for j, o := range w.obstacles {
				// Touching within skin is allowed, overlapping is not.
				if overlapsOn(b, o, 0) && overlapsOn(b, o, 1) && overlapsOn(b, o, 2) {
					t.Fatalf("run %d step %d: player box %+v inside obstacle %d %+v", run, i, b, j, o)
				}
			}
		}
	}
}

func TestSinCosDeg(t *testing.T) {
	exact := []struct{ deg, sin, cos float64 }{
		{0, 0, 1}, {90, 1, 0}, {180, 0, -1}, {270, -1, 0}, {360, 0, 1}, {-90, -1, 0}, {720, 0, 1}, {-450, -1, 0},
	}
	for _, e := range exact {
		s, c := sinCosDeg(e.deg)
		if s != e.sin || c != e.cos {
			t.Errorf("sinCosDeg(%v) = %v, %v; want exactly %v, %v", e.deg, s, c, e.sin, e.cos)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		deg := r.Float64()*2000 - 1000
		s, c := sinCosDeg(deg)
		ws, wc := math.Sincos(math.Mod(deg, 360) * math.Pi / 180)
		if math.Abs(s-ws) > 4e-15 || math.Abs(c-wc) > 4e-15 {
			t.Fatalf("sinCosDeg(%v) = %v, %v; math says %v, %v", deg, s, c, ws, wc)
		}
	}
	for _, deg := range []float64{math.MaxFloat32, -math.MaxFloat32, 1e-300, -1e-300} {
		if s, c := sinCosDeg(deg); math.Abs(s*s+c*c-1) > 1e-15 {
			t.Errorf("sinCosDeg(%v) = %v, %v", deg, s, c)
		}
	}
}

func TestNormalizeYaw(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{0, 0}, {359.5, 359.5}, {360, 0}, {-90, 270}, {725, 5}, {-1e-30, 0}, {float32(math.Copysign(0, -1)), 0},
	} {
		if got := normalizeYaw(c.in); got != c.want {
			t.Errorf("normalizeYaw(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, y := range []float32{math.MaxFloat32, -math.MaxFloat32, 1e20, -3.3e7} {
		if got := normalizeYaw(y); !(got >= 0 && got < 360) {
			t.Errorf("normalizeYaw(%v) = %v", y, got)
		}
	}
}

// FuzzStep feeds arbitrary bits as a State and a ClientInput: Step either
// refuses them with the State unchanged, or returns a sane State.
func FuzzStep(f *testing.F) {
	seed := func(vals ...float32) []byte {
		var b []byte
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	f.Add(seed(0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 90, 0, 1.0/60), uint8(gamemsg.ButtonJump), true, false)
	f.Add(seed(1e30, -1e30, 5, 3e38, -3e38, 0, 1e38, -1e38, -1, 1, -1e38, 89, 0.25), uint8(gamemsg.ButtonCrouch|gamemsg.ButtonSprint), false, true)
	f.Add(seed(float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0), uint8(0xff), true, true)
	w, err := NewWorld(Params{}, arenaBounds, arenaObstacles)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, floats []byte, buttons uint8, grounded, crouching bool) {
		var v [13]float32
		for i := range v {
			if len(floats) >= 4*(i+1) {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(floats[4*i:]))
			}
		}
		s := State{
			Position: wire.Vec3{X: v[0], Y: v[1], Z: v[2]}, Velocity: wire.Vec3{X: v[3], Y: v[4], Z: v[5]},
			Yaw: v[6], Pitch: v[7], Grounded: grounded, Crouching: crouching,
		}
		in := gamemsg.ClientInput{MoveForward: v[8], MoveRight: v[9], LookYaw: v[10], LookPitch: v[11], DT: v[12], Buttons: gamemsg.Buttons(buttons)}
		n, err := w.Step(s, in)
		if err != nil {
			if n != s && s.IsFinite() {
				t.Fatalf("refused (%v) but changed the state", err)
			}
			return
		}
		assertSane(t, w, n)
	})
}
