// Package prefetch asks the processor to bring memory into its caches ahead
// of use. A busy server walks the state of a thousand sessions in turn, far
// more than the caches hold: each session's first touches were cache misses
// that stalled the receive path one after another. A prefetch does not
// stall (unlike a load): issued for the next session while the current one
// is handled, its misses are paid in the background.
//
// A prefetch never faults and changes nothing a program can observe but
// time; on architectures without an implementation it does nothing.
package prefetch

import "unsafe"

// LineSize is the cache line size the ranges are walked in.
const LineSize = 64

// Range prefetches the n bytes at p (the lines they span), for reading and
// writing soon. p is only an address: nothing is read through it.
func Range(p unsafe.Pointer, n uintptr) {
	if p == nil || n == 0 {
		return
	}
	start := uintptr(p) &^ (LineSize - 1)
	lines(start, (uintptr(p)+n-start+LineSize-1)/LineSize)
}
