package lagcomp

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

func v3(x, y, z float32) wire.Vec3 { return wire.Vec3{X: x, Y: y, Z: z} }

// unit is the box [0,1]³.
var unit = AABB{Min: v3(0, 0, 0), Max: v3(1, 1, 1)}

func TestRayDistance(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name        string
		box         AABB
		origin, dir wire.Vec3
		maxDist     float32
		want        float32
		hit         bool
	}{
		{"head-on through the centre", unit, v3(0.5, 0.5, -2), v3(0, 0, 1), 10, 2, true},
		{"unnormalised direction", unit, v3(0.5, 0.5, -2), v3(0, 0, 7), 10, 2, true},
		{"diagonal into a corner", unit, v3(-1, -1, -1), v3(1, 1, 1), 10, float32(math.Sqrt(3)), true},
		{"from the far side", unit, v3(0.5, 0.5, 3), v3(0, 0, -1), 10, 2, true},
		{"beside the box", unit, v3(1.5, 0.5, -2), v3(0, 0, 1), 10, 0, false},
		{"box behind the origin", unit, v3(0.5, 0.5, 2), v3(0, 0, 1), 10, 0, false},
		{"origin inside", unit, v3(0.5, 0.5, 0.5), v3(1, 0, 0), 10, 0, true},
		{"origin on a face, pointing away", unit, v3(0.5, 0.5, 1), v3(0, 0, 1), 10, 0, true},
		{"grazing an edge", unit, v3(1, 1, -2), v3(0, 0, 1), 10, 2, true},
		{"grazing a corner diagonally", unit, v3(2, 0, -1), v3(-1, 0, 1), 10, float32(math.Sqrt2), true},
		{"parallel inside the slab", unit, v3(-3, 0.5, 0.5), v3(1, 0, 0), 10, 3, true},
		{"parallel along a face plane", unit, v3(-3, 1, 0.5), v3(1, 0, 0), 10, 3, true},
		{"parallel just outside the slab", unit, v3(-3, 1.0001, 0.5), v3(1, 0, 0), 10, 0, false},
		{"parallel on two axes, outside", unit, v3(-3, 2, 2), v3(1, 0, 0), 10, 0, false},
		{"exactly at maxDist", unit, v3(0.5, 0.5, -2), v3(0, 0, 1), 2, 2, true},
		{"short of maxDist", unit, v3(0.5, 0.5, -2), v3(0, 0, 1), 1.999, 0, false},
		{"point box", AABB{Min: v3(1, 2, 3), Max: v3(1, 2, 3)}, v3(1, 2, 0), v3(0, 0, 1), 10, 3, true},
		{"flat box", AABB{Min: v3(0, 0, 5), Max: v3(1, 1, 5)}, v3(0.5, 0.5, 0), v3(0, 0, 1), 10, 5, true},
		{"tiny direction component", unit, v3(0.5, 0.5, -2), v3(math.SmallestNonzeroFloat32, 0, 1), 10, 2, true},
		{"huge coordinates", AABB{Min: v3(3e38, 0, 0), Max: v3(math.MaxFloat32, 1, 1)}, v3(0, 0.5, 0.5), v3(1, 0, 0), math.MaxFloat32, 3e38, true},
		{"huge but beyond maxDist", AABB{Min: v3(3e38, 0, 0), Max: v3(math.MaxFloat32, 1, 1)}, v3(-3e38, 0.5, 0.5), v3(1, 0, 0), math.MaxFloat32, 0, false},
		{"NaN origin", unit, v3(nan, 0.5, -2), v3(0, 0, 1), 10, 0, false},
		{"Inf direction", unit, v3(0.5, 0.5, -2), v3(0, 0, inf), 10, 0, false},
		{"zero direction", unit, v3(0.5, 0.5, 0.5), v3(0, 0, 0), 10, 0, false},
		{"zero maxDist", unit, v3(0.5, 0.5, 0.5), v3(0, 0, 1), 0, 0, false},
		{"negative maxDist", unit, v3(0.5, 0.5, 0.5), v3(0, 0, 1), -1, 0, false},
		{"infinite maxDist", unit, v3(0.5, 0.5, -2), v3(0, 0, 1), inf, 0, false},
		{"NaN maxDist", unit, v3(0.5, 0.5, -2), v3(0, 0, 1), nan, 0, false},
		{"inverted box", AABB{Min: v3(1, 1, 1), Max: v3(0, 0, 0)}, v3(0.5, 0.5, -2), v3(0, 0, 1), 10, 0, false},
		{"NaN box", AABB{Min: v3(0, 0, nan), Max: v3(1, 1, 1)}, v3(0.5, 0.5, -2), v3(0, 0, 1), 10, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, hit := c.box.RayDistance(c.origin, c.dir, c.maxDist)
			if hit != c.hit || (hit && math.Abs(float64(got-c.want)) > 1e-6*max(1, math.Abs(float64(c.want)))) {
				t.Fatalf("RayDistance = %v, %v; want %v, %v", got, hit, c.want, c.hit)
			}
		})
	}
}

// FuzzRayDistance: arbitrary bits never panic, and a hit is a finite distance
// within maxDist whose point lies in the box (to rounding).
func FuzzRayDistance(f *testing.F) {
	f.Add(floats(0.5, 0.5, -2, 0, 0, 1, 10, 0, 0, 0, 1, 1, 1))
	f.Add(floats(-3e38, 0.5, 0.5, 1, 0, 0, math.MaxFloat32, 3e38, 0, 0, math.MaxFloat32, 1, 1))
	f.Add(floats(float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v [13]float32
		for i := range v {
			if len(b) >= 4*(i+1) {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
		box := AABB{Min: v3(v[7], v[8], v[9]), Max: v3(v[10], v[11], v[12])}
		origin, dir := v3(v[0], v[1], v[2]), v3(v[3], v[4], v[5])
		d, hit := box.RayDistance(origin, dir, v[6])
		if !hit {
			return
		}
		if math.IsNaN(float64(d)) || d < 0 || d > v[6] {
			t.Fatalf("distance %v outside [0, %v]", d, v[6])
		}
		r, _ := newRay(origin, dir, v[6])
		p := r.at(float64(d))
		for a := range 3 {
			lo, hi := float64(vec64(box.Min)[a]), float64(vec64(box.Max)[a])
			tol := 1e-4 * (1 + math.Abs(lo) + math.Abs(hi) + float64(v[6]))
			if !(p[a] >= lo-tol && p[a] <= hi+tol) {
				t.Fatalf("hit point %v outside box %+v on axis %d", p, box, a)
			}
		}
	})
}

func floats(v ...float32) []byte {
	var b []byte
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}
