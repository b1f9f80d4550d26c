package prefetch

import (
	"testing"
	"unsafe"
)

// TestRangeChangesNothing: prefetching any range, of live memory or not
// (nil, empty, an odd address and length), neither faults nor changes a byte.
func TestRangeChangesNothing(t *testing.T) {
	buf := make([]byte, 1000)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	Range(nil, 100)
	Range(unsafe.Pointer(&buf[0]), 0)
	Range(unsafe.Pointer(&buf[3]), 997)
	Range(unsafe.Pointer(&buf[999]), 1)
	for i := range buf {
		if buf[i] != byte(i*7) {
			t.Fatalf("byte %d changed", i)
		}
	}
}

func BenchmarkRange2KiB(b *testing.B) {
	buf := make([]byte, 2048)
	for b.Loop() {
		Range(unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	}
}
