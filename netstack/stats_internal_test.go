package netstack

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLossEstimateUnderReorderAndDuplication: 25% loss with reordering (up to
// 100 sequences late) and duplication is estimated as 25%, not inflated by
// late packets or deflated by duplicates.
func TestLossEstimateUnderReorderAndDuplication(t *testing.T) {
	var q linkQuality
	r := rand.New(rand.NewPCG(1, 2))
	var delayed []uint32
	lost, sent := 0, 0
	for seq := uint32(1); seq <= 20000; seq++ {
		sent++
		if r.Float64() < 0.25 {
			lost++
			continue
		}
		if r.Float64() < 0.25 {
			q.sawUnreliable(seq) // duplicate
		}
		delayed = append(delayed, seq)
		if len(delayed) > 100 || r.Float64() < 0.5 {
			i := r.IntN(len(delayed))
			q.sawUnreliable(delayed[i])
			delayed = append(delayed[:i], delayed[i+1:]...)
		}
	}
	want := float64(lost) / float64(sent)
	if math.Abs(q.loss-want) > 0.06 {
		t.Fatalf("loss estimate %.3f, actual %.3f", q.loss, want)
	}
	var clean linkQuality
	for seq := uint32(1); seq <= 2000; seq++ {
		clean.sawUnreliable(seq)
	}
	if clean.loss != 0 {
		t.Fatalf("no loss estimated as %.3f", clean.loss)
	}
}
