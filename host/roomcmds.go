package host

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// registerRoomCommands adds `rooms` and `room info|close|start|pause|kick`
// to the admin console. They run on the game thread.
func (s *Server) registerRoomCommands() {
	for _, c := range []admin.Command{
		{Name: "rooms", Help: "list the rooms: id, name, mode, map, players, state", Run: s.cmdRooms},
		{Name: "room", Usage: "info ID | close ID | start ID | pause ID | kick ID PLAYER",
			Help: "a room's players, match and modules; close it (players back to the lobby); start, pause or resume its match; remove a player from it", Run: s.cmdRoom},
	} {
		c.Owner = admin.Builtin
		if err := s.cmds.Register(c); err != nil {
			panic(err) // built-in names are fixed; a clash is a programming error
		}
	}
}

func (s *Server) cmdRooms(args []string) (string, error) {
	if len(args) != 0 {
		return "", admin.UsageError()
	}
	if len(s.roomOrder) == 0 {
		return fmt.Sprintf("no rooms (at most %d; modes %s)", s.lobby.Max(), strings.Join(s.lobby.Modes(), ", ")), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d room(s)", len(s.roomOrder))
	for _, r := range s.roomOrder {
		fmt.Fprintf(&b, "\n%s", r.line())
	}
	return b.String(), nil
}

// line is a room's row of `rooms`.
func (r *room) line() string {
	ri := r.roomInfo()
	flags := ""
	if ri.Password {
		flags += " password"
	}
	if r.info.Fixed {
		flags += " fixed"
	}
	return fmt.Sprintf("%d %q mode %s map %s players %d/%d %s owner %d%s", ri.ID, ri.Name, ri.Mode, ri.Map,
		ri.Players, ri.Capacity, ri.State, r.info.Owner, flags)
}

func (s *Server) cmdRoom(args []string) (string, error) {
	if len(args) < 2 {
		return "", admin.UsageError()
	}
	id, err := strconv.ParseUint(args[1], 10, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a room id; see rooms", args[1])
	}
	r := s.rooms[module.RoomID(id)]
	if r == nil {
		return "", fmt.Errorf("no room %d; see rooms", id)
	}
	switch args[0] {
	case "info":
		return s.roomInfoText(r), nil
	case "close":
		if r.info.Fixed {
			return "", fmt.Errorf("room %d is the server's one match; it closes with the server", id)
		}
		s.closeRoom(r, gamemsg.CloseAdmin)
		return fmt.Sprintf("closed room %d", id), nil
	case "start":
		if err := s.lobby.StartByAdmin(r.info); err != nil {
			return "", err
		}
		s.started(r, 0)
		return fmt.Sprintf("started room %d", id), nil
	case "pause":
		paused, err := s.lobby.TogglePauseByAdmin(r.info)
		if err != nil {
			return "", err
		}
		s.paused(r, 0, paused)
		if paused {
			return fmt.Sprintf("paused room %d", id), nil
		}
		return fmt.Sprintf("resumed room %d", id), nil
	case "kick":
		if len(args) != 3 {
			return "", admin.UsageError()
		}
		p, err := s.findPlayer(args[2])
		if err != nil {
			return "", err
		}
		newOwner, err := s.lobby.KickByAdmin(r.info, p.ID, s.now)
		if err != nil {
			return "", err
		}
		s.exit(p.ID, r, gamemsg.LeaveKicked, wire.DisconnectUnknown, newOwner)
		return fmt.Sprintf("removed %d %s from room %d", p.ID, p.Name, id), nil
	}
	return "", admin.UsageError(fmt.Sprintf("unknown subcommand %q", args[0]))
}

// roomInfoText is `room info ID`.
func (s *Server) roomInfoText(r *room) string {
	var b strings.Builder
	b.WriteString(r.line())
	st := r.match.Phase(r.now())
	fmt.Fprintf(&b, "\nmatch %s round %d", st.State, st.Round)
	if st.TimeRemaining > 0 {
		fmt.Fprintf(&b, ", %v left", st.TimeRemaining.Round(time.Second))
	}
	ws := r.world.Stats()
	fmt.Fprintf(&b, "\nentities %d, replication frames %d, bytes %d", ws.Entities, ws.Frames, ws.Bytes)
	b.WriteString("\nplayers")
	if len(r.info.Members) == 0 {
		b.WriteString(" none")
	}
	for _, c := range r.info.Members {
		owner := ""
		if c == r.info.Owner {
			owner = " (owner)"
		}
		fmt.Fprintf(&b, "\n  %d %s%s", c, s.players[c].Name, owner)
	}
	b.WriteString("\nmodules")
	mods := s.mods.RoomModules(r.info.ID)
	if len(mods) == 0 {
		b.WriteString(" none")
	}
	for _, m := range mods {
		fmt.Fprintf(&b, "\n  %s %s [%s] %s faults %d", m.Name, m.Version, m.Kind, m.State, m.Faults)
		if m.MultiRoom {
			fmt.Fprintf(&b, " (one instance for %d rooms)", len(m.Rooms))
		}
	}
	return b.String()
}
