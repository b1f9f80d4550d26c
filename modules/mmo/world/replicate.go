package world

import (
	"cmp"
	"slices"
	"strings"
)

// Delta is what one observer must be told at a replication step: characters
// that entered its interest circle (with name and position), characters in it
// whose position changed since the previous step, and characters that left
// it (or the world). An observer's circle includes itself, so its own
// movement arrives as an update. Delta and its slices are only valid during
// the call to the emit function; they are reused.
type Delta struct {
	Observer  ID
	Appear    []Snapshot
	Update    []Snapshot
	Disappear []ID
}

// Empty reports whether d has nothing to tell.
func (d *Delta) Empty() bool {
	return len(d.Appear) == 0 && len(d.Update) == 0 && len(d.Disappear) == 0
}

// Replicate computes each observer's Delta since it was last replicated and
// calls emit with every non-empty one, observers in no particular order.
// Lists are sorted by ID. Call it at the replication rate (every few
// Steps), or use ReplicatePart. emit must not change the world (Enter,
// Leave, Replicate): collect what it needs and act after Replicate returns.
func (w *World) Replicate(emit func(*Delta)) { w.ReplicatePart(0, 1, emit) }

// ReplicatePart is Replicate for the observers of one part of parts (by
// ID modulo parts). Called every Step with part = step % parts, it
// replicates every observer once every parts Steps, and each Step does a
// parts-th of the work instead of one Step in parts doing all of it: the
// server's tick stays even (a thousand observers' updates do not all leave
// on one tick).
func (w *World) ReplicatePart(part, parts int, emit func(*Delta)) {
	w.pass++
	r := w.cfg.InterestRadius
	for _, o := range w.chars {
		if parts > 1 && o.id%ID(parts) != ID(part) {
			continue
		}
		w.keys = w.grid.withinKeys(w.keys[:0], o.x, o.y, r)
		slices.Sort(w.keys)
		d := &w.delta
		d.Observer, d.Appear, d.Update, d.Disappear = o.id, d.Appear[:0], d.Update[:0], d.Disappear[:0]
		known := o.known
		i, j := 0, 0
		for i < len(w.keys) || j < len(known) {
			var id ID
			if i < len(w.keys) {
				id = ID(w.keys[i] >> 32)
			}
			switch {
			case j == len(known) || i < len(w.keys) && id < known[j]:
				d.Appear = append(d.Appear, w.chars[uint32(w.keys[i])].snapshot())
				i++
			case i == len(w.keys) || known[j] < id:
				d.Disappear = append(d.Disappear, known[j])
				j++
			default:
				if c := w.chars[uint32(w.keys[i])]; c.movedAt > o.seenAt {
					d.Update = append(d.Update, c.snapshot())
				}
				i++
				j++
			}
		}
		o.known = o.known[:0]
		for _, k := range w.keys {
			o.known = append(o.known, ID(k>>32))
		}
		o.seenAt = w.pass
		if !d.Empty() {
			emit(d)
		}
	}
}

// releaseSeen drops the query buffer's pointers, up to its capacity, so that a
// character that leaves is not kept alive by it.
func (w *World) releaseSeen() { clear(w.seen[:cap(w.seen)]); w.seen = w.seen[:0] }

// Nearby appends to dst the characters within the interest radius of id,
// itself excluded, nearest first (ties by ID), and returns dst.
func (w *World) Nearby(id ID, dst []Snapshot) ([]Snapshot, error) {
	o := w.byID[id]
	if o == nil {
		return dst, ErrNotInWorld
	}
	w.seen = w.grid.within(w.seen[:0], o.x, o.y, w.cfg.InterestRadius)
	start := len(dst)
	for _, c := range w.seen {
		if c != o {
			dst = append(dst, c.snapshot())
		}
	}
	w.releaseSeen()
	dist := func(s Snapshot) float64 { dx, dy := s.X-o.x, s.Y-o.y; return dx*dx + dy*dy }
	slices.SortFunc(dst[start:], func(a, b Snapshot) int {
		return cmp.Or(cmp.Compare(dist(a), dist(b)), cmp.Compare(a.ID, b.ID))
	})
	return dst, nil
}

// Greeting is a greeting the world allowed.
type Greeting struct {
	From, To         ID
	FromName, ToName string
}

// Greet lets character from greet the character named target (ASCII case
// ignored). It fails with ErrNotInWorld (from is not in the world),
// ErrUnknownTarget (no character of that name is in the world), ErrSelf or
// ErrTooFar (farther than GreetRadius). On success it appends to audience
// whoever must be told (the target, and every other character within the
// interest radius of the greeter, the greeter excluded) and returns it.
func (w *World) Greet(from ID, target string, audience []ID) (Greeting, []ID, error) {
	g := w.byID[from]
	if g == nil {
		return Greeting{}, audience, ErrNotInWorld
	}
	t := w.byKey[strings.ToLower(target)]
	switch {
	case t == nil:
		return Greeting{}, audience, ErrUnknownTarget
	case t == g:
		return Greeting{}, audience, ErrSelf
	}
	dx, dy := t.x-g.x, t.y-g.y
	if dx*dx+dy*dy > w.cfg.GreetRadius*w.cfg.GreetRadius {
		return Greeting{}, audience, ErrTooFar
	}
	audience = append(audience, t.id)
	w.seen = w.grid.within(w.seen[:0], g.x, g.y, w.cfg.InterestRadius)
	for _, c := range w.seen {
		if c != g && c != t {
			audience = append(audience, c.id)
		}
	}
	w.releaseSeen()
	return Greeting{From: g.id, To: t.id, FromName: g.name, ToName: t.name}, audience, nil
}

// Reveal makes sure observer has been told of each of ids before anything
// that names them (a Greeting): it appends to dst the snapshot of every
// one of ids that observer was not told it sees (itself, characters not
// in the world and duplicates skipped) and records them as told, so the
// caller must send them (as an Appear) before what names them. A revealed
// character outside the observer's interest circle is told as gone at the
// next Replicate, like any character that left it.
func (w *World) Reveal(observer ID, dst []Snapshot, ids ...ID) []Snapshot {
	o := w.byID[observer]
	if o == nil {
		return dst
	}
	for _, id := range ids {
		c := w.byID[id]
		if c == nil || c == o {
			continue
		}
		i, found := slices.BinarySearch(o.known, id)
		if found {
			continue
		}
		o.known = slices.Insert(o.known, i, id)
		dst = append(dst, c.snapshot())
	}
	return dst
}
