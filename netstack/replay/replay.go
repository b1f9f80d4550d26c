// Package replay owns the anti-replay window of the sealed channel (protocol v3
// §6): a sliding bitmap over the u64 frame sequences s of one direction. It
// decides whether a frame could be fresh; it never authenticates anything, so its
// caller must open (authenticate) a frame between Check and Mark.
package replay

// The window is a ring of 64-bit blocks, as in wireguard-go's replay filter:
// sliding forward clears whole blocks instead of shifting bits, so Mark costs
// O(1) amortised and never allocates.
const (
	blockBits    = 64
	blockBitsLog = 6
	ringBlocks   = 32 // power of two, so the block index is a mask
	ringMask     = ringBlocks - 1

	// Size is W, the number of sequences the window remembers: a frame with
	// highest - s >= Size is too old and refused. The spec asks for at least
	// 256; 1024 tolerates far more reordering on a jittery link at no cost.
	Size = 1024
)

// Size consecutive sequences can straddle Size/64+1 blocks, which must map to
// distinct ring slots; this fails to compile otherwise.
var _ [ringBlocks*blockBits - Size - blockBits]struct{}

// Window is the replay window of one direction; the zero value is ready and
// accepts s = 0 first. It is not safe for concurrent use (the channel that owns
// it serialises Open).
//
// Invariant (proof sketch). Let h = highest. For every s with h-s < Size, the
// bit (s>>6)&ringMask, s&63 of ring is set if and only if s was marked.
//   - Zero value: h = 0 and no bit is set; only s = 0 lies in the window and it
//     is unmarked. True.
//   - Mark(s) with s <= h and h-s < Size sets exactly s's bit: the invariant
//     keeps holding (no other sequence shares that bit inside the window,
//     because the window spans at most Size/64+1 < ringBlocks blocks).
//   - Mark(s) with s > h clears the blocks after h's block up to s's block
//     (all of them when the jump is >= ringBlocks blocks). A cleared block held
//     no sequence of the new window except ones > h, which were never marked
//     (nothing above h was). Blocks not cleared hold only sequences <= h, whose
//     bits are unchanged and still correct for those still in the window. Then
//     h = s and s's bit is set. True.
//   - Mark(s) with h-s >= Size changes nothing.
//
// Check(s) therefore accepts exactly: s > h (never marked, since nothing above
// h was), or h-s < Size with s unmarked. Every comparison is a subtraction of
// the smaller value from the larger (h-s only when s <= h), so no u64 wraps,
// s = 0 and s = 2^64-1 included; no expression of the form s+Size exists.
type Window struct {
	highest uint64
	ring    [ringBlocks]uint64
}

// Check reports whether a frame with sequence s would be accepted: it was not
// marked before and it is not older than the window. It does not change the
// window; call Mark only after the frame authenticated, so a forged frame can
// never move the window.
func (w *Window) Check(s uint64) bool {
	if s > w.highest {
		return true
	}
	if w.highest-s >= Size {
		return false
	}
	return w.ring[(s>>blockBitsLog)&ringMask]&(1<<(s&(blockBits-1))) == 0
}

// Mark records s as received, sliding the window forward when s is the new
// highest. Marking a sequence older than the window does nothing. Call it only
// for a frame that passed Check and authenticated.
func (w *Window) Mark(s uint64) {
	if s > w.highest {
		cur := w.highest >> blockBitsLog
		next := s >> blockBitsLog
		// next-cur cannot wrap (next >= cur); cur+i <= next cannot either.
		n := next - cur
		if n > ringBlocks {
			n = ringBlocks
		}
		for i := uint64(1); i <= n; i++ {
			w.ring[(cur+i)&ringMask] = 0
		}
		w.highest = s
	} else if w.highest-s >= Size {
		return
	}
	w.ring[(s>>blockBitsLog)&ringMask] |= 1 << (s & (blockBits - 1))
}

// Highest returns the highest sequence marked so far (0 before any Mark).
func (w *Window) Highest() uint64 { return w.highest }
