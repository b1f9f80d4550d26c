package rooms

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/ops"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Room passwords under attack (docs/protocol.md §13.7, §13.9). The lobby
// decides which proofs are checked (host/rooms/lobby's guard: back-offs
// per room and per source); the rooms carry out what follows: they count,
// disconnect a client that keeps guessing (RateLimited), and tell each
// room's owner (RoomEvent PasswordFailures), the log and the console.

// passwordStats counts room passwords for the status line and metrics.
type passwordStats struct {
	wrong   atomic.Uint64 // proofs checked that did not open the room
	refused atomic.Uint64 // proofs refused unchecked during a back-off
	kicked  atomic.Uint64 // clients disconnected for guessing
}

func (p *passwordStats) snapshot() ops.RoomPasswords {
	return ops.RoomPasswords{Wrong: p.wrong.Load(), Refused: p.refused.Load(), Kicked: p.kicked.Load()}
}

// Stats are the rooms' counters.
type Stats struct {
	Opened, Closed uint64
	// Requests were carried out or refused with a code; Refused were
	// answered with a code other than OK.
	Requests, Refused uint64
	Passwords         ops.RoomPasswords
}

// Stats returns the rooms' counters; safe from any goroutine.
func (rs *Set) Stats() Stats {
	c := &rs.counts
	return Stats{Opened: c.opened.Load(), Closed: c.closed.Load(), Requests: c.requests.Load(), Refused: c.refused.Load(),
		Passwords: rs.guesses.snapshot()}
}

// passwordLimits is [rooms]' password settings for the lobby.
func passwordLimits(r *config.RoomsSection) lobby.PasswordLimits {
	return lobby.PasswordLimits{Free: r.PasswordFreeFailures, Backoff: r.PasswordBackoff(), BackoffMax: r.PasswordBackoffMax(),
		KickAfter: r.PasswordKickAfter}
}

// joiner is a client as the lobby's password guard sees it.
func (rs *Set) joiner(client uint32) lobby.Joiner {
	cb, _ := rs.cfg.Net.ChannelBinding(client)
	p := rs.cfg.Player(client)
	return lobby.Joiner{Client: client, Name: p.Name, Source: lobby.SourceOf(p.Addr.Addr()), Binding: cb}
}

// passwordOutcome counts what became of a RoomJoin's proof and
// disconnects a client that keeps guessing; refusal is the request's answer,
// sent here first so that it arrives before the Disconnect.
func (rs *Set) passwordOutcome(client uint32, room module.RoomID, out lobby.Outcome, refusal error) (answered bool) {
	switch {
	case out.Wrong:
		rs.guesses.wrong.Add(1)
	case out.Refused:
		rs.guesses.refused.Add(1)
	}
	if !out.Kick {
		return false
	}
	rs.refuse(client, gamemsg.TypeRoomJoin, room, refusal)
	p := rs.cfg.Player(client)
	rs.guesses.kicked.Add(1)
	rs.cfg.Log.Warn("client disconnected for guessing room passwords", "client", client, "name", p.Name, "addr", p.Addr.Addr().String(), "room", room)
	rs.cfg.Notice(fmt.Sprintf("disconnected %s (client %d, %s) for guessing the password of room %d; `ban` the address if it comes back",
		p.Name, client, p.Addr.Addr(), room))
	_ = rs.cfg.Net.Kick(client, wire.DisconnectRateLimited, "too many wrong room passwords; wait a minute before trying again")
	return true
}

// PasswordNotices tells each room's owner, the log and the console of the
// wrong passwords tried since the last notice (at most one per room per
// lobby.PasswordNoticeEvery); the host calls it after the tick's requests.
func (rs *Set) PasswordNotices() {
	for _, n := range rs.lobby.PasswordNotices(rs.cfg.Now()) {
		r, g := rs.byID[n.Room.ID], n.Guesser
		rs.cfg.Log.Warn("wrong room passwords", "room", n.Room.ID, "count", n.Count, "last_client", g.Client, "last_name", g.Name,
			"last_source", g.Source.String(), "backoff", n.Wait.Round(100*time.Millisecond))
		rs.cfg.Notice(fmt.Sprintf("room %d %q: %d wrong password(s) tried, the latest by %s (client %d, %s)%s",
			n.Room.ID, n.Room.Name, n.Count, g.Name, g.Client, g.Source, backoffText(n.Wait)))
		if r != nil && n.Room.Owner != 0 {
			r.eventTo(n.Room.Owner, gamemsg.RoomEvent{Kind: gamemsg.RoomPasswordFailures, Client: g.Client, Value: n.Count, Name: g.Name})
		}
	}
}

func backoffText(wait time.Duration) string {
	if wait <= 0 {
		return ""
	}
	return fmt.Sprintf("; it takes no password for %v", wait.Round(100*time.Millisecond))
}
