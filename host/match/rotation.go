package match

import "math/bits"

// rotation is the order in which the maps are played. It is walked in cycles:
// each cycle plays every map once, in the configured order or, with shuffle, in
// a permutation drawn from a generator seeded once, so that the sequence of
// cycles depends only on the seed. A shuffled cycle never starts with the map
// that was played last, so no map plays twice in a row when there are two or
// more. An admin jump (ChangeMap) moves to the map's place in the current
// cycle, which continues from there.
type rotation struct {
	shuffle bool
	rng     splitMix64
	order   []int // indices into Config.Maps, this cycle
	pos     int   // place in order of the current map
}

func newRotation(n int, shuffle bool, seed uint64) rotation {
	r := rotation{shuffle: shuffle, rng: splitMix64{seed}, order: make([]int, n)}
	r.deal(-1)
	return r
}

// current returns the index in Config.Maps of the current map.
func (r *rotation) current() int { return r.order[r.pos] }

// advance moves to the next map, starting a new cycle after the last one, and
// returns its index.
func (r *rotation) advance() int {
	played := r.current()
	r.pos++
	if r.pos == len(r.order) {
		r.deal(played)
	}
	return r.current()
}

// jump moves to map index i.
func (r *rotation) jump(i int) {
	for p, m := range r.order {
		if m == i {
			r.pos = p
			return
		}
	}
}

// deal starts a new cycle; last is the map played before it (-1 for none).
func (r *rotation) deal(last int) {
	r.pos = 0
	for i := range r.order {
		r.order[i] = i
	}
	if !r.shuffle {
		return
	}
	n := len(r.order)
	for i := n - 1; i > 0; i-- { // Fisher–Yates
		j := r.rng.below(i + 1)
		r.order[i], r.order[j] = r.order[j], r.order[i]
	}
	if n > 1 && r.order[0] == last {
		j := 1 + r.rng.below(n-1)
		r.order[0], r.order[j] = r.order[j], r.order[0]
	}
}

// splitMix64 is the SplitMix64 generator. It is written out here, rather than
// taken from math/rand, so that a seed's rotation can never change with the
// Go version.
type splitMix64 struct{ s uint64 }

func (r *splitMix64) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a number in [0, n) by multiply-shift; its bias, below n/2⁶⁴,
// does not matter for a map rotation.
func (r *splitMix64) below(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}
