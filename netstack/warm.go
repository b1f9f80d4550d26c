//go:build !race

package netstack

import "unsafe"

// warmSink keeps warm's loads from being compiled away.
var warmSink byte

// warm touches the cache lines of a session that a flush reads (its lock,
// send queue, packer, congestion state, reliability engine and sealer)
// without taking its lock, so that the memory loads of several sessions
// are in flight at once, ahead of their flush: a flush of many cold
// sessions otherwise waits for each line, one after the other. The loads
// are of bytes whose values are thrown away; under the race detector
// (warm_race.go) nothing is touched.
func warm(p *peer) {
	s := p.session
	base := unsafe.Pointer(s)
	var x byte
	for _, off := range warmOffsets {
		x += *(*byte)(unsafe.Add(base, off))
	}
	if e := s.rel.engine; e != nil {
		eb := unsafe.Pointer(e)
		for off := uintptr(0); off < endpointSize; off += cacheLine {
			x += *(*byte)(unsafe.Add(eb, off))
		}
	}
	if k := s.keys.sealer; k != nil {
		x += *(*byte)(unsafe.Pointer(k))
	}
	warmSink += x
}
