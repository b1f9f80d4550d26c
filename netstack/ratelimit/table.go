package ratelimit

// The source table: a slab of entries plus an open-addressing index with linear
// probing. It is hand-made rather than a Go map so that its memory is fixed up
// front (the index never grows, the slab never exceeds MaxSources) and so that
// eviction and reuse never allocate or leave tombstones behind. All methods run
// with l.mu held.

// find returns the index position of key, or the empty position where key would
// be inserted, and the key's slab position (-1 if absent). The index is at most
// half full, so the probe always reaches an empty position.
func (l *Limiter) find(key uint64, home uint32) (pos uint32, slot int) {
	for pos = home; ; pos = (pos + 1) & l.mask {
		s := l.index[pos]
		if s == 0 {
			return pos, -1
		}
		if l.entries[s-1].key == key {
			return pos, int(s - 1)
		}
	}
}

// newSlot returns a free slab position for a new source at time t. When
// the table is full it takes the first of the next evictScan entries (clock
// order) whose bucket is full, which changes no answer (see the Limiter
// invariant); if none is, the least spent of them (the earliest tat): a
// full table never turns a new source away (see Limiter).
func (l *Limiter) newSlot(t int64) int {
	if len(l.entries) < l.max {
		l.entries = append(l.entries, entry{})
		return len(l.entries) - 1
	}
	victim := -1
	for range evictScan {
		slot := l.hand
		if l.hand++; l.hand == l.max {
			l.hand = 0
		}
		e := &l.entries[slot]
		if e.tat <= t {
			victim = slot
			break
		}
		if victim < 0 || e.tat < l.entries[victim].tat {
			victim = slot
		}
	}
	if l.entries[victim].tat > t {
		l.spentEvictions++
	}
	pos, _ := l.find(l.entries[victim].key, l.entries[victim].home)
	l.unlink(pos)
	return victim
}

// unlink empties index position pos by backward-shift deletion: every later
// member of the probe run that may legally sit at the hole (its home is not
// between the hole and itself) moves into it, and the hole moves on, so lookups
// never need tombstones.
func (l *Limiter) unlink(pos uint32) {
	for {
		l.index[pos] = 0
		next := pos
		for {
			next = (next + 1) & l.mask
			s := l.index[next]
			if s == 0 {
				return
			}
			home := l.entries[s-1].home
			// Distances along the probe direction, modulo the table size.
			if (next-home)&l.mask >= (next-pos)&l.mask {
				l.index[pos] = s
				pos = next
				break
			}
		}
	}
}
