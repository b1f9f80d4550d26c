package movement

import "math"

// Taylor coefficients of sin and cos in x² (Horner order, highest first).
// They are untyped constants, rounded once at compile time, so every platform
// evaluates the same float64 polynomial. On |x| ≤ π/4 the first omitted terms
// (x¹⁷/17! and x¹⁸/18!) are below 5e-17, under half an ulp of the result.
var (
	sinCoeffs = [...]float64{
		-1.0 / 1307674368000, 1.0 / 6227020800, -1.0 / 39916800, 1.0 / 362880,
		-1.0 / 5040, 1.0 / 120, -1.0 / 6,
	}
	cosCoeffs = [...]float64{
		1.0 / 20922789888000, -1.0 / 87178291200, 1.0 / 479001600, -1.0 / 3628800,
		1.0 / 40320, -1.0 / 720, 1.0 / 24, -1.0 / 2,
	}
)

// horner evaluates c in x2 with every product rounded before the addition, so
// that no compiler may fuse the steps into FMAs.
func horner(c []float64, x2 float64) float64 {
	p := 0.0
	for _, k := range c {
		p = float64(p*x2) + k
	}
	return p
}

// sinCosDeg returns the sine and cosine of deg degrees, bit-identical on every
// platform. The reduction works in degrees, where it is exact: math.Mod is
// exact, and the quadrant offset is a small multiple of 90. Only the final
// remainder (|r| ≤ 45°) is converted to radians.
func sinCosDeg(deg float64) (sin, cos float64) {
	d := math.Mod(deg, 360)
	if d < 0 {
		d += 360
	}
	q := math.Floor(d/90 + 0.5) // nearest quadrant, 0..4
	r := d - float64(q*90)      // q*90 is an exact small integer
	x := float64(r * (math.Pi / 180))
	x2 := float64(x * x)
	s := x + float64(float64(x*x2)*horner(sinCoeffs[:], x2))
	c := 1 + float64(x2*horner(cosCoeffs[:], x2))
	switch int(q) & 3 {
	case 0:
		return s, c
	case 1:
		return c, -s
	case 2:
		return -s, -c
	default:
		return -c, s
	}
}

// normalizeYaw maps a finite yaw in degrees into [0, 360).
func normalizeYaw(yaw float32) float32 {
	d := math.Mod(float64(yaw), 360)
	if d < 0 {
		d += 360
	}
	y := float32(d)
	if y >= 360 { // a tiny negative yaw rounds up to 360
		y = 0
	}
	return y
}
