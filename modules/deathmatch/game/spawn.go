package game

import (
	"math"

	"github.com/sparkhost/sparkhost/sim/movement"
)

// spawn puts p back in play at the best spawn point for it.
func (g *Game) spawn(p *player) {
	s := g.m.Spawns[g.pickSpawn(p)]
	p.state = movement.State{Position: s.Position, Yaw: s.Yaw}
	p.health, p.alive, p.moved = g.cfg.MaxHealth, true, true
	p.nextFire = g.tick
	g.emit(Event{Kind: EventSpawn, Player: p.id, Position: s.Position, Yaw: s.Yaw, Team: p.team})
}

// pickSpawn returns the index of the spawn point p should use: among those
// of its team, the free ones (no living player within a player's width),
// and among them the farthest from the nearest living enemy; ties (no enemy
// alive, say) are broken at random with the Game's seeded generator. When
// every point is taken the choice is among all of the team's points.
func (g *Game) pickSpawn(p *player) int {
	g.cands = g.m.SpawnsFor(p.team, g.cands[:0])
	if len(g.cands) == 0 { // maps validates that each team has a point
		g.cands = g.m.SpawnsFor(NoTeam, g.cands)
	}
	g.best = g.best[:0]
	for _, i := range g.cands {
		if !g.occupied(i, p) {
			g.best = append(g.best, i)
		}
	}
	pool := g.best
	if len(pool) == 0 {
		pool = g.cands
	}
	// Keep the farthest in pool[:n], compacting in place.
	bestDist, n := -1.0, 0
	for _, i := range pool {
		d := g.enemyDistance(i, p)
		if d > bestDist {
			bestDist, n = d, 0
		}
		if d == bestDist {
			pool[n] = i
			n++
		}
	}
	return pool[g.rng.IntN(n)]
}

// occupied reports whether a living player other than p stands on spawn i.
func (g *Game) occupied(i int, p *player) bool {
	pos := g.m.Spawns[i].Position
	w := float32(2 * g.params.HalfWidth)
	for _, o := range g.players {
		if o == p || !o.alive {
			continue
		}
		q := o.state.Position
		if abs32(q.X-pos.X) < w && abs32(q.Z-pos.Z) < w && abs32(q.Y-pos.Y) < float32(g.params.Height) {
			return true
		}
	}
	return false
}

// enemyDistance is the squared distance from spawn i to the nearest living
// enemy of p, +Inf when there is none.
func (g *Game) enemyDistance(i int, p *player) float64 {
	pos := g.m.Spawns[i].Position
	best := math.Inf(1)
	for _, o := range g.players {
		if o == p || !o.alive || (g.cfg.Teams && o.team == p.team) {
			continue
		}
		dx, dy, dz := float64(o.state.Position.X-pos.X), float64(o.state.Position.Y-pos.Y), float64(o.state.Position.Z-pos.Z)
		best = min(best, dx*dx+dy*dy+dz*dz)
	}
	return best
}

func abs32(f float32) float32 { return float32(math.Abs(float64(f))) }

// smallerTeam is the team a new player joins: the one with fewer players,
// then the one with the lower score, then red.
func (g *Game) smallerTeam() uint8 {
	var n, s [3]int
	for _, p := range g.players {
		n[p.team]++
		s[p.team] += p.score
	}
	if n[TeamBlue] < n[TeamRed] || (n[TeamBlue] == n[TeamRed] && s[TeamBlue] < s[TeamRed]) {
		return TeamBlue
	}
	return TeamRed
}

// balance moves players from the larger team to the smaller while they
// differ by two or more: the most recent joiner of the larger team, a dead
// one first (a living one respawns on its new side at once).
func (g *Game) balance() {
	for {
		var n [3]int
		for _, p := range g.players {
			n[p.team]++
		}
		from, to := uint8(TeamRed), uint8(TeamBlue)
		if n[TeamBlue] > n[TeamRed] {
			from, to = to, from
		}
		if n[from]-n[to] < 2 {
			return
		}
		var pick *player
		for _, p := range g.players {
			if p.team != from {
				continue
			}
			if pick == nil || (!p.alive && pick.alive) || (p.alive == pick.alive && p.joined > pick.joined) {
				pick = p
			}
		}
		pick.team = to
		g.emit(Event{Kind: EventTeamChange, Player: pick.id, Team: to})
		if pick.alive {
			g.spawn(pick)
		}
	}
}
