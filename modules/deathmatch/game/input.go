package game

import (
	"fmt"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// Input applies one ClientInput of a player: it moves the player by one
// fixed step on the map and, with the fire button, fires if the weapon is
// ready. It refuses an unknown player (ErrUnknownPlayer), a sequence not
// after the last applied one (ErrStaleInput: clients resend pending
// inputs, and each is applied once), a malformed input (ErrInvalidInput)
// and an input beyond the player's budget (ErrInputFlood); a refused input
// changes nothing. A dead player's input is applied as a no-op (its
// sequence is acknowledged, nothing moves).
func (g *Game) Input(id uint32, in gamemsg.ClientInput) error {
	p := g.get(id)
	switch {
	case p == nil:
		return fmt.Errorf("%w: %d", ErrUnknownPlayer, id)
	case p.hasSeq && !serialAfter(in.InputSeq, p.lastSeq):
		return ErrStaleInput
	case p.credits <= 0:
		return ErrInputFlood
	}
	if err := movement.ValidateInput(in); err != nil {
		return err
	}
	p.credits--
	p.lastSeq, p.hasSeq = in.InputSeq, true
	if !p.alive {
		return nil
	}
	// Cannot fail: the input is valid and states stay finite.
	p.state, _ = g.world.Step(p.state, in)
	if in.Buttons&gamemsg.ButtonFire != 0 && g.tick >= p.nextFire {
		p.nextFire = g.tick + g.fireTicks
		g.fire(p)
	}
	return nil
}

// serialAfter reports whether sequence a comes after b (RFC 1982 over uint32).
func serialAfter(a, b uint32) bool { return int32(a-b) > 0 }

// fire traces p's shot: stopped at the first obstacle, then validated by
// the Raycaster.
func (g *Game) fire(p *player) {
	origin := Eye(p.state, g.params)
	dir := AimDirection(p.state.Yaw, p.state.Pitch)
	dist := g.m.RayBlock(origin, dir, g.cfg.Weapon.Range)
	ev := Event{Kind: EventShot, Player: p.id, Origin: origin, Position: along(origin, dir, dist)}
	var victim *player
	if dist > 0 {
		if id, point, ok := g.rc.Raycast(p.id, origin, dir, dist); ok {
			if v := g.get(id); v != nil && v != p && v.alive {
				victim, ev.Other, ev.Position = v, id, point
			}
		}
	}
	g.emit(ev)
	if victim != nil {
		g.damage(victim, p)
	}
}

func along(o, d wire.Vec3, t float32) wire.Vec3 {
	return wire.Vec3{X: o.X + d.X*t, Y: o.Y + d.Y*t, Z: o.Z + d.Z*t}
}

// damage applies a hit of shooter on victim, if it counts.
func (g *Game) damage(victim, shooter *player) {
	if !g.live() || (g.cfg.Teams && victim.team == shooter.team && !g.cfg.FriendlyFire) {
		return
	}
	amount := g.cfg.Weapon.Damage
	victim.health = max(victim.health-amount, 0)
	g.emit(Event{Kind: EventDamage, Player: victim.id, Other: shooter.id, Amount: amount, Health: victim.health})
	if victim.health == 0 {
		g.kill(victim, shooter)
	}
}

// kill records victim's death at killer's hand (killer == victim: suicide)
// and schedules the respawn; a kill that reaches the score limit ends the
// round. Only called while a round is live.
func (g *Game) kill(victim, killer *player) {
	victim.alive, victim.health = false, 0
	victim.respawnAt = g.tick + g.deadTicks
	victim.deaths++
	teamKill := g.cfg.Teams && killer != victim && killer.team == victim.team
	switch {
	case killer == victim, teamKill:
		killer.score--
		killer.roundScore--
	default:
		killer.kills++
		killer.score++
		if killer.roundScore++; g.scoreLimit > 0 && killer.roundScore >= g.scoreLimit {
			g.phase = PhaseOver
		}
	}
	g.emit(Event{Kind: EventKill, Player: victim.id, Other: killer.id, TeamKill: teamKill, Team: victim.team})
}
