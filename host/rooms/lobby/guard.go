package lobby

import (
	"cmp"
	"container/list"
	"net/netip"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Room passwords are guessed online only, one proof per RoomJoin
// (docs/protocol.md §13.7), so the lobby bounds how many wrong proofs it
// checks. A room and a source (an IPv4 address, an IPv6 /64) each have a
// count of wrong proofs: the first Free cost nothing, then each further
// one makes that room, or that source, refuse proofs for Backoff, 2·Backoff,
// … up to BackoffMax. A proof sent during either's back-off is refused
// RateLimited without being checked, so it tells its sender nothing. A
// count is forgotten after Forget without a wrong proof; a right password
// does not clear it (the guesser may still be at it). Never a lock: once
// the back-off has passed, the next proof is checked.
//
// A client whose wrong or refused proofs reach KickAfter within a minute is
// to be disconnected (RateLimited). The room's owner is told (RoomEvent
// PasswordFailures) at most once per NoticeEvery.

// PasswordLimits bound the room passwords the lobby checks. Zero values
// mean the defaults.
type PasswordLimits struct {
	// Free is how many wrong proofs a room, and a source, may have before
	// its back-off starts (0 = 5).
	Free int
	// Backoff is the first back-off, doubling up to BackoffMax (0 = 1 s,
	// 30 s).
	Backoff, BackoffMax time.Duration
	// KickAfter is how many wrong or refused proofs of one client within
	// a minute disconnect it (0 = 10).
	KickAfter int
}

// Defaults of PasswordLimits.
const (
	DefaultPasswordFree       = 5
	DefaultPasswordBackoff    = time.Second
	DefaultPasswordBackoffMax = 30 * time.Second
	DefaultPasswordKickAfter  = 10
)

// Fixed bounds of the password guard.
const (
	// PasswordForget: a room's or a source's count is forgotten after
	// this long without a wrong proof.
	PasswordForget = 10 * time.Minute
	// PasswordNoticeEvery: at most one PasswordFailures notice per room
	// this often.
	PasswordNoticeEvery = 10 * time.Second
	// passwordStrikeWindow is the window of a client's strikes.
	passwordStrikeWindow = time.Minute
	// maxPasswordSources bounds the sources tracked; the one that failed
	// longest ago is forgotten first (the rooms' counts still hold).
	maxPasswordSources = 4096
)

func (p *PasswordLimits) populate() {
	if p.Free <= 0 {
		p.Free = DefaultPasswordFree
	}
	if p.Backoff <= 0 {
		p.Backoff = DefaultPasswordBackoff
	}
	if p.BackoffMax <= 0 {
		p.BackoffMax = DefaultPasswordBackoffMax
	}
	p.BackoffMax = max(p.BackoffMax, p.Backoff)
	if p.KickAfter <= 0 {
		p.KickAfter = DefaultPasswordKickAfter
	}
}

// delay is the back-off after the n-th wrong proof.
func (p *PasswordLimits) delay(n int) time.Duration {
	if n <= p.Free {
		return 0
	}
	d := p.Backoff
	for i := p.Free + 1; i < n && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

// Source is where a client's datagrams come from, as the password guard
// counts it: an IPv4 address, or an IPv6 address's /64 (one host's share).
type Source = netip.Prefix

// SourceOf returns addr's Source.
func SourceOf(addr netip.Addr) Source {
	addr = addr.Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// backoff is the wrong-proof count of a room or a source.
type backoff struct {
	failures    int
	last, until time.Time
}

// live returns b, or a fresh count when b was forgotten.
func (b *backoff) live(now time.Time) *backoff {
	if b.failures > 0 && now.Sub(b.last) >= PasswordForget {
		*b = backoff{}
	}
	return b
}

// fail records a wrong proof at now.
func (b *backoff) fail(lim *PasswordLimits, now time.Time) {
	b.live(now)
	b.failures++
	b.last = now
	b.until = now.Add(lim.delay(b.failures))
}

// wait is how long b still refuses proofs.
func (b *backoff) wait(now time.Time) time.Duration {
	if b == nil || !now.Before(b.until) {
		return 0
	}
	return b.until.Sub(now)
}

// roomGuard is a room's count and its pending notice to the owner.
type roomGuard struct {
	backoff
	pending uint32    // wrong or refused proofs not yet told
	last    Joiner    // who sent the latest of them
	noticed time.Time // the last notice
}

// strikes are a client's wrong or refused proofs in the current window.
type strikes struct {
	n     int
	since time.Time
}

// sourceEntry is a tracked source, in guard.sources and guard.order.
type sourceEntry struct {
	src  Source
	b    backoff
	elem *list.Element
}

// guard is the lobby's password state (game thread, like the Lobby).
type guard struct {
	lim     PasswordLimits
	rooms   map[module.RoomID]*roomGuard
	sources map[Source]*sourceEntry
	order   list.List // of *sourceEntry, the one that failed longest ago first
	strikes map[uint32]*strikes
	due     map[module.RoomID]struct{} // rooms with a pending notice
}

func newGuard(lim PasswordLimits) *guard {
	lim.populate()
	return &guard{lim: lim, rooms: make(map[module.RoomID]*roomGuard), sources: make(map[Source]*sourceEntry),
		strikes: make(map[uint32]*strikes), due: make(map[module.RoomID]struct{})}
}

func (g *guard) room(id module.RoomID) *roomGuard {
	rg := g.rooms[id]
	if rg == nil {
		rg = &roomGuard{}
		g.rooms[id] = rg
	}
	return rg
}

func (g *guard) source(src Source) *backoff {
	if e := g.sources[src]; e != nil {
		return &e.b
	}
	return nil
}

// sourceFailed records a wrong proof from src.
func (g *guard) sourceFailed(src Source, now time.Time) {
	e := g.sources[src]
	if e == nil {
		if len(g.sources) >= maxPasswordSources {
			old := g.order.Remove(g.order.Front()).(*sourceEntry)
			delete(g.sources, old.src)
		}
		e = &sourceEntry{src: src}
		e.elem = g.order.PushBack(e)
		g.sources[src] = e
	} else {
		g.order.MoveToBack(e.elem)
	}
	e.b.fail(&g.lim, now)
}

// strike counts a wrong or refused proof of client and reports whether it
// reached the kick threshold (once: the client is being disconnected).
func (g *guard) strike(client uint32, now time.Time) bool {
	s := g.strikes[client]
	if s == nil || now.Sub(s.since) > passwordStrikeWindow {
		s = &strikes{since: now}
		g.strikes[client] = s
	}
	s.n++
	return s.n == g.lim.KickAfter
}

// told adds a wrong or refused proof from j to the room's pending notice.
func (g *guard) told(rg *roomGuard, room module.RoomID, j Joiner) {
	rg.pending++
	rg.last = Joiner{Client: j.Client, Name: j.Name, Source: j.Source}
	g.due[room] = struct{}{}
}

// Outcome is what a RoomJoin's proof came to, for the host to act on and
// count.
type Outcome struct {
	// Wrong: a proof was checked and did not open the room. Refused: a
	// proof was refused unchecked (a back-off).
	Wrong, Refused bool
	// Kick: the client reached PasswordLimits.KickAfter; disconnect it.
	Kick bool
}

// check is the password step of a join: whether proof may be checked now,
// and what its check came to. ok reports a right proof.
func (g *guard) check(r *Entry, j Joiner, proof []byte, now time.Time) (ok bool, out Outcome, err error) {
	if len(proof) == 0 {
		return false, out, refuse(gamemsg.RoomWrongPassword, "room %d needs its password", r.ID)
	}
	rg := g.room(r.ID)
	rg.live(now)
	if wait := max(rg.wait(now), g.source(j.Source).wait(now)); wait > 0 {
		out.Refused = true
		out.Kick = g.strike(j.Client, now)
		g.told(rg, r.ID, j)
		return false, out, refuse(gamemsg.RoomRateLimited, "room %d takes no password for %s after too many wrong ones; try again then", r.ID, roundUp(wait))
	}
	if r.Verifier.Check(uint32(r.ID), j.Binding, proof) {
		return true, out, nil
	}
	rg.fail(&g.lim, now)
	g.sourceFailed(j.Source, now)
	out.Wrong = true
	out.Kick = g.strike(j.Client, now)
	g.told(rg, r.ID, j)
	return false, out, refuse(gamemsg.RoomWrongPassword, "room %d needs its password", r.ID)
}

// roundUp rounds d up to a tenth of a second for a person to read.
func roundUp(d time.Duration) time.Duration {
	const step = 100 * time.Millisecond
	return (d + step - 1) / step * step
}

// Notice is a room's PasswordFailures notice to its owner.
type Notice struct {
	Room *Entry
	// Count is the wrong or refused proofs since the last notice; Guesser
	// sent the latest of them (its Binding is not kept).
	Count   uint32
	Guesser Joiner
	// Wait is how long the room still refuses proofs (0: none).
	Wait time.Duration
}

// PasswordNotices returns the notices due at now (at most one per room per
// PasswordNoticeEvery), in room order; the host tells each room's owner
// and the log.
func (l *Lobby) PasswordNotices(now time.Time) []Notice {
	g := l.guard
	if len(g.due) == 0 {
		return nil
	}
	var out []Notice
	for id := range g.due {
		rg, r := g.rooms[id], l.rooms[id]
		switch {
		case r == nil || rg == nil || rg.pending == 0:
			delete(g.due, id)
		case rg.noticed.IsZero() || now.Sub(rg.noticed) >= PasswordNoticeEvery:
			out = append(out, Notice{Room: r, Count: rg.pending, Guesser: rg.last, Wait: rg.wait(now)})
			rg.pending, rg.noticed = 0, now
			delete(g.due, id)
		}
	}
	slices.SortFunc(out, func(a, b Notice) int { return cmp.Compare(a.Room.ID, b.Room.ID) })
	return out
}

// forgetRoom drops a closed room's count.
func (g *guard) forgetRoom(id module.RoomID) {
	delete(g.rooms, id)
	delete(g.due, id)
}

// forgetClient drops a departed client's strikes.
func (g *guard) forgetClient(client uint32) { delete(g.strikes, client) }
