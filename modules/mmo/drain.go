package mmo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Draining (docs/mmo.md §13.1). When the server drains, an area server
// hands every character it plays to a neighbour area server, those that
// stand inside its own area too: the neighbour covers the drained area
// (store.Drain records it, in the same transaction as the drain mark that
// stops handoffs to this server) and plays them where they stand. The
// client follows the Handoff as at any border. When the drained area's
// server starts again, the cover ends (store.StartServer) and the
// neighbour, which looks at its covers every coverEvery, hands the
// characters standing in the area back, as at any border: every character
// plays where it stands.

// coverEvery spaces a server's look at the areas it covers.
const coverEvery = 2 * time.Second

// drainState is the module's drain (game thread).
type drainState struct {
	on      bool
	cover   *area // the neighbour area whose server covers ours (nil: none yet)
	asking  bool  // a store.Drain is in the lane
	retryAt time.Time
	outAt   uint64 // handoffsOut when the drain began
}

// coverState is what this server covers for drained neighbours (game
// thread): the areas, and the order of the looks at the database, so that
// an older answer never undoes a newer one.
type coverState struct {
	areas     []*area
	seq, seen uint64
	next      time.Time
}

// OnDrain is the server's drain beginning (or called off).
func (m *Module) OnDrain(draining bool, deadline time.Time) {
	if m.areas == nil {
		if draining {
			m.h.Log().Info("mmo: draining; not an area server, so the players stay until they leave or the drain's deadline",
				"deadline", deadline.Format(time.RFC3339))
		}
		return
	}
	if !draining {
		if m.dr.on {
			m.dr = drainState{}
			id := m.pres.id
			m.lane.push(func(ctx context.Context) func() {
				err := m.db.Undrain(ctx, id)
				return func() {
					if err != nil {
						m.h.Log().Error("mmo: calling the drain off in the database", "err", err)
					}
				}
			})
		}
		return
	}
	if !m.dr.on {
		m.dr.on, m.dr.outAt = true, m.handoffsOut
		m.h.Log().Info("mmo: draining: handing every character to a neighbour area server", "players", len(m.players))
		m.askCover(time.Now())
	}
}

// askCover asks the database for a neighbour to cover this server's area.
func (m *Module) askCover(now time.Time) {
	if m.dr.asking || now.Before(m.dr.retryAt) {
		return
	}
	m.dr.asking = true
	id, own, names := m.pres.id, m.areas.own.name, m.neighbours()
	m.lane.push(func(ctx context.Context) func() {
		cover, err := m.db.Drain(ctx, id, own, names)
		return func() {
			m.dr.asking = false
			if !m.dr.on {
				return // called off meanwhile
			}
			if err != nil {
				m.dr.retryAt = time.Now().Add(handoffRetry)
				if !errors.Is(err, store.ErrAreaUnavailable) {
					m.h.Log().Error("mmo: draining: asking a neighbour to cover the area", "err", err)
				} else {
					m.h.Log().Warn("mmo: draining: no neighbour area server is up; the characters stay until one is, or the drain's deadline", "neighbours", names)
				}
				return
			}
			for i := range m.areas.all {
				if m.areas.all[i].name == cover {
					m.dr.cover = &m.areas.all[i]
				}
			}
			m.h.Log().Info("mmo: draining: the neighbour covers this area; handing the characters over", "cover", cover, "players", len(m.players))
		}
	})
}

// neighbours are the other areas, best cover first: the longest shared
// edge, then the nearest centre.
func (m *Module) neighbours() []string {
	own := m.areas.own
	type cand struct {
		name       string
		edge, dist float64
	}
	var cs []cand
	for i := range m.areas.all {
		a := &m.areas.all[i]
		if a == own {
			continue
		}
		ox := max(0, min(own.x1, a.x1)-max(own.x0, a.x0))
		oy := max(0, min(own.y1, a.y1)-max(own.y0, a.y0))
		edge := 0.0
		if (own.x1 == a.x0 || a.x1 == own.x0) && oy > 0 {
			edge = oy
		}
		if (own.y1 == a.y0 || a.y1 == own.y0) && ox > 0 {
			edge = ox
		}
		dist := math.Hypot((own.x0+own.x1-a.x0-a.x1)/2, (own.y0+own.y1-a.y0-a.y1)/2)
		cs = append(cs, cand{a.name, edge, dist})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmp.Compare(b.edge, a.edge); c != 0 {
			return c
		}
		return cmp.Compare(a.dist, b.dist)
	})
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// drainTick hands the characters over while draining (after the world
// step; crossBorders has done the border crossings).
func (m *Module) drainTick(now time.Time) {
	if !m.dr.on {
		return
	}
	if m.dr.cover == nil {
		m.askCover(now)
		return
	}
	for _, s := range m.players {
		if s.handing || s.busy || s.key == nil || now.Before(s.retryAt) {
			continue
		}
		sn, ok := m.w.Get(s.wid)
		if !ok {
			continue
		}
		m.handOff(s, m.dr.cover, store.Position{Name: sn.Name, X: sn.X, Y: sn.Y}, now)
	}
}

// covering reports whether (x, y) lies in an area this server covers.
func (m *Module) covering(x, y float64) bool {
	for _, a := range m.cov.areas {
		if a.contains(x, y) {
			return true
		}
	}
	return false
}

// coverTick looks at the areas this server covers every coverEvery.
func (m *Module) coverTick(now time.Time) {
	if m.areas == nil || now.Before(m.cov.next) || m.pres.local {
		return
	}
	m.cov.next = now.Add(coverEvery)
	seq := m.nextCoverLook()
	id := m.pres.id
	m.lane.push(func(ctx context.Context) func() {
		names, err := m.db.Covers(ctx, id)
		return func() {
			if err == nil {
				m.applyCovers(seq, names)
			}
		}
	})
}

// nextCoverLook numbers a look at the covers, taken now.
func (m *Module) nextCoverLook() uint64 {
	m.cov.seq++
	return m.cov.seq
}

// applyCovers takes the answer of look seq unless a later look's answer
// was taken already.
func (m *Module) applyCovers(seq uint64, names []string) {
	if seq <= m.cov.seen {
		return
	}
	m.cov.seen = seq
	var areas []*area
	for i := range m.areas.all {
		a := &m.areas.all[i]
		if a != m.areas.own && slices.Contains(names, a.name) {
			areas = append(areas, a)
		}
	}
	if !slices.Equal(areaNames(areas), areaNames(m.cov.areas)) {
		m.h.Log().Info("mmo: the areas this server covers for drained neighbours changed", "covers", areaNames(areas))
	}
	m.cov.areas = areas
}

func areaNames(as []*area) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.name
	}
	return out
}

// drainLine describes the drain and the covers for mmo_online.
func (m *Module) drainLine() string {
	out := ""
	if m.dr.on {
		cover := "none yet"
		if m.dr.cover != nil {
			cover = m.dr.cover.name
		}
		out += fmt.Sprintf("\n  draining: handing characters to %s, %d handed over since the drain began", cover, m.handoffsOut-m.dr.outAt)
	}
	if len(m.cov.areas) > 0 {
		out += fmt.Sprintf("\n  covering %v for drained neighbours", areaNames(m.cov.areas))
	}
	return out
}
