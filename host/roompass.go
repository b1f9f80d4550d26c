package host

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
// decides which proofs are checked (host/lobby's guard: back-offs per room
// and per source); the host carries out what follows: it counts, it
// disconnects a client that keeps guessing (RateLimited), and it tells each
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

// passwordLimits is [rooms]' password settings for the lobby.
func passwordLimits(r *config.RoomsSection) lobby.PasswordLimits {
	return lobby.PasswordLimits{Free: r.PasswordFreeFailures, Backoff: r.PasswordBackoff(), BackoffMax: r.PasswordBackoffMax(),
		KickAfter: r.PasswordKickAfter}
}

// joiner is a client as the lobby's password guard sees it.
func (s *Server) joiner(client uint32) lobby.Joiner {
	cb, _ := s.net.ChannelBinding(client)
	p := s.players[client]
	return lobby.Joiner{Client: client, Name: p.Name, Source: lobby.SourceOf(p.Addr.Addr()), Binding: cb}
}

// passwordOutcome counts what became of a RoomJoin's proof and
// disconnects a client that keeps guessing; refusal is the request's answer,
// sent here first so that it arrives before the Disconnect.
func (s *Server) passwordOutcome(client uint32, room module.RoomID, out lobby.Outcome, refusal error) (answered bool) {
	switch {
	case out.Wrong:
		s.passwords.wrong.Add(1)
	case out.Refused:
		s.passwords.refused.Add(1)
	}
	if !out.Kick {
		return false
	}
	s.refuseRequest(client, gamemsg.TypeRoomJoin, room, refusal)
	p := s.players[client]
	s.passwords.kicked.Add(1)
	s.log.Warn("client disconnected for guessing room passwords", "client", client, "name", p.Name, "addr", p.Addr.Addr().String(), "room", room)
	s.consoleNotice(fmt.Sprintf("disconnected %s (client %d, %s) for guessing the password of room %d; `ban` the address if it comes back",
		p.Name, client, p.Addr.Addr(), room))
	_ = s.net.Kick(client, wire.DisconnectRateLimited, "too many wrong room passwords; wait a minute before trying again")
	return true
}

// passwordNotices tells each room's owner, the log and the console of the
// wrong passwords tried since the last notice (at most one per room per
// lobby.PasswordNoticeEvery).
func (s *Server) passwordNotices() {
	for _, n := range s.lobby.PasswordNotices(s.now) {
		r, g := s.rooms[n.Room.ID], n.Guesser
		s.log.Warn("wrong room passwords", "room", n.Room.ID, "count", n.Count, "last_client", g.Client, "last_name", g.Name,
			"last_source", g.Source.String(), "backoff", n.Wait.Round(100*time.Millisecond))
		s.consoleNotice(fmt.Sprintf("room %d %q: %d wrong password(s) tried, the latest by %s (client %d, %s)%s",
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

// consoleNotice shows an operator at the interactive console a line (the
// log has it too).
func (s *Server) consoleNotice(line string) {
	if s.opts.Console != nil && s.opts.ConsoleOut != nil {
		fmt.Fprintln(s.opts.ConsoleOut, line)
	}
}
