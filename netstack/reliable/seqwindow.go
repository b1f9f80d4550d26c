package reliable

// seqWindow is the receiver's record of which reliability sequences arrived,
// used to recognize duplicates exactly in bounded memory.
//
// Invariants:
//   - every sequence 1..cum has been received (cum is the cumulative point;
//     cum+1 is the first missing sequence);
//   - for s in (cum+1, cum+size], bit s%size is set iff s was received;
//   - every other bit is clear.
//
// Why this is exact and bounded: the window is anchored at the first *missing*
// sequence, not at the highest received one. A sequence at or below cum is a
// duplicate with certainty, however long ago it arrived, because cum only
// passes sequences that arrived. A sequence inside the window is judged by its
// bit. A sequence beyond cum+size is not recorded at all: the engine drops it
// unacknowledged, so its sender retransmits it and it is accepted once the
// hole at cum+1 fills and the window slides. So no sender behaviour, honest or
// not, can make the window misjudge a packet; a misbehaving sender can only
// make its own far-ahead packets wait. A sender obeying §7 (at most 256
// unacknowledged, counted as a span from its oldest unacknowledged packet, as
// this package's sender does) never reaches beyond cum+256: its oldest
// unacknowledged packet is at most cum+1, since cum+1 has not arrived and so
// cannot have been acked. Hence size ≥ 256 suffices; the default 1024 leaves
// room for a sender that counts unacknowledged packets instead of a span.
//
// When the hole fills, cum advances over the run of set bits, clearing each,
// so the slots that re-enter the window at its top are clear: each bit is set
// and cleared at most once per sequence, O(1) amortized per packet.
//
// Sequences are u32 and the window does not handle wrap: a connection that
// carried 2^32−1 reliable packets must be re-established (the sender refuses
// with ErrSequenceExhausted before wrapping).
type seqWindow struct {
	cum  uint32
	size uint32 // multiple of 64
	bits []uint64
}

func newSeqWindow(size uint32) seqWindow {
	return seqWindow{size: size, bits: make([]uint64, size/64)}
}

// has reports whether s (≥ 1) was received.
func (w *seqWindow) has(s uint32) bool {
	if s <= w.cum {
		return true
	}
	if s-w.cum > w.size {
		return false
	}
	i := s % w.size
	return w.bits[i/64]&(1<<(i%64)) != 0
}

// fits reports whether s (> cum) is inside the tracked window.
func (w *seqWindow) fits(s uint32) bool { return s-w.cum <= w.size }

// add records s; it requires !has(s) and fits(s).
func (w *seqWindow) add(s uint32) {
	if s != w.cum+1 {
		i := s % w.size
		w.bits[i/64] |= 1 << (i % 64)
		return
	}
	w.cum = s
	for {
		i := (w.cum + 1) % w.size
		m := uint64(1) << (i % 64)
		if w.bits[i/64]&m == 0 {
			return
		}
		w.bits[i/64] &^= m
		w.cum++
	}
}
