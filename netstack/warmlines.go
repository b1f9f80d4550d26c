package netstack

import (
	"unsafe"

	"github.com/sparkhost/sparkhost/netstack/reliable"
)

const (
	cacheLine    = 64
	endpointSize = unsafe.Sizeof(reliable.Endpoint{})
)

// warmOffsets are the offsets in a session of the cache lines a flush
// reads: its header (counters' pointers, version), the counters it adds
// to, its lock, reliability, send queue and packer, path address and link
// quality, congestion state (the estimator's head and tail, not its
// markers) and lifecycle.
var warmOffsets = func() []uintptr {
	var s session
	cc := unsafe.Offsetof(s.path) + unsafe.Offsetof(s.path.cc)
	est := cc + unsafe.Offsetof(s.path.cc.est)
	estEnd := est + unsafe.Sizeof(s.path.cc.est)
	spans := [][2]uintptr{
		{0, 1},
		{unsafe.Offsetof(s.ctr) + unsafe.Offsetof(s.ctr.PacketsSent), 1},
		{unsafe.Offsetof(s.ctr) + unsafe.Offsetof(s.ctr.MessagesSent), 1},
		{unsafe.Offsetof(s.mu), 1},
		{unsafe.Offsetof(s.rel), 1},
		{unsafe.Offsetof(s.out), unsafe.Sizeof(s.out)},
		{unsafe.Offsetof(s.path), 1},
		{unsafe.Offsetof(s.path) + unsafe.Offsetof(s.path.q), unsafe.Sizeof(s.path.q)},
		{cc, est - cc + 3*cacheLine},
		{estEnd - 5*cacheLine, unsafe.Offsetof(s.life) - (estEnd - 5*cacheLine)},
		{unsafe.Offsetof(s.life), unsafe.Sizeof(s.life)},
	}
	var out []uintptr
	seen := map[uintptr]bool{}
	for _, sp := range spans {
		for off := sp[0] &^ (cacheLine - 1); off < sp[0]+sp[1]; off += cacheLine {
			if !seen[off] {
				seen[off] = true
				out = append(out, off)
			}
		}
	}
	return out
}()
