package rooms

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// registerCommands adds the rooms' console commands: `rooms`, `room
// info|close|start|pause|kick`, and the match commands of a room (`map`,
// `nextmap`, `endmatch`, the server's one room unless @ROOM names one).
// They run on the game thread.
func (rs *Set) registerCommands() {
	for _, c := range []admin.Command{
		{Name: "rooms", Help: "list the rooms: id, name, mode, map, players, state", Run: rs.cmdRooms},
		{Name: "room", Usage: "info ID | close ID | start ID | pause ID | kick ID PLAYER",
			Help: "a room's players, match and modules; close it (players back to the lobby); start, pause or resume its match; remove a player from it", Run: rs.cmdRoom},
		{Name: "map", Usage: "[@ROOM] NAME", Help: "change to a map of the rotation now", Run: rs.cmdMap},
		{Name: "nextmap", Usage: "[@ROOM]", Help: "end the match and load the next map of the rotation", Run: rs.cmdNextMap},
		{Name: "endmatch", Usage: "[@ROOM]", Help: "end the current match (reason admin)", Run: rs.cmdEndMatch},
	} {
		c.Owner = admin.Builtin
		if err := rs.cfg.Commands.Register(c); err != nil {
			panic(err) // built-in names are fixed; a clash is a programming error
		}
	}
}

func (rs *Set) cmdRooms(args []string) (string, error) {
	if len(args) != 0 {
		return "", admin.UsageError()
	}
	if len(rs.order) == 0 {
		return fmt.Sprintf("no rooms (at most %d; modes %s)", rs.lobby.Max(), strings.Join(rs.lobby.Modes(), ", ")), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d room(s)", len(rs.order))
	for _, r := range rs.order {
		fmt.Fprintf(&b, "\n%s", r.line())
	}
	return b.String(), nil
}

// line is a room's row of `rooms`.
func (r *Room) line() string {
	ri := r.Info()
	flags := ""
	if ri.Password {
		flags += " password"
	}
	if r.entry.Fixed {
		flags += " fixed"
	}
	return fmt.Sprintf("%d %q mode %s map %s players %d/%d %s owner %d%s", ri.ID, ri.Name, ri.Mode, ri.Map,
		ri.Players, ri.Capacity, ri.State, r.entry.Owner, flags)
}

func (rs *Set) cmdRoom(args []string) (string, error) {
	if len(args) < 2 {
		return "", admin.UsageError()
	}
	id, err := strconv.ParseUint(args[1], 10, 32)
	if err != nil {
		return "", fmt.Errorf("%q is not a room id; see rooms", args[1])
	}
	r := rs.byID[module.RoomID(id)]
	if r == nil {
		return "", fmt.Errorf("no room %d; see rooms", id)
	}
	switch args[0] {
	case "info":
		return r.infoText(), nil
	case "close":
		if r.entry.Fixed {
			return "", fmt.Errorf("room %d is the server's one match; it closes with the server", id)
		}
		rs.close(r, gamemsg.CloseAdmin)
		return fmt.Sprintf("closed room %d", id), nil
	case "start":
		if err := rs.lobby.StartByAdmin(r.entry); err != nil {
			return "", err
		}
		r.started(0)
		return fmt.Sprintf("started room %d", id), nil
	case "pause":
		paused, err := rs.lobby.TogglePauseByAdmin(r.entry)
		if err != nil {
			return "", err
		}
		r.paused(0, paused)
		if paused {
			return fmt.Sprintf("paused room %d", id), nil
		}
		return fmt.Sprintf("resumed room %d", id), nil
	case "kick":
		if len(args) != 3 {
			return "", admin.UsageError()
		}
		return rs.cmdRoomKick(r, args[2])
	}
	return "", admin.UsageError(fmt.Sprintf("unknown subcommand %q", args[0]))
}

// cmdRoomKick is `room kick ID PLAYER`.
func (rs *Set) cmdRoomKick(r *Room, player string) (string, error) {
	p, err := rs.cfg.FindPlayer(player)
	if err != nil {
		return "", err
	}
	newOwner, err := rs.lobby.KickByAdmin(r.entry, p.ID, rs.cfg.Now())
	if err != nil {
		return "", err
	}
	rs.exit(p.ID, r, gamemsg.LeaveKicked, wire.DisconnectUnknown, newOwner)
	return fmt.Sprintf("removed %d %s from room %d", p.ID, p.Name, r.entry.ID), nil
}

// infoText is `room info ID`.
func (r *Room) infoText() string {
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
	if len(r.entry.Members) == 0 {
		b.WriteString(" none")
	}
	for _, c := range r.entry.Members {
		owner := ""
		if c == r.entry.Owner {
			owner = " (owner)"
		}
		fmt.Fprintf(&b, "\n  %d %s%s", c, r.set.name(c), owner)
	}
	b.WriteString("\nmodules")
	mods := r.set.cfg.Modules.RoomModules(r.entry.ID)
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

func (rs *Set) cmdMap(args []string) (string, error) {
	r, args, err := rs.matchRoom(args)
	if err != nil {
		return "", err
	}
	if len(args) != 1 {
		return "", admin.UsageError()
	}
	if err := r.match.ChangeMap(args[0], r.now()); err != nil {
		return "", err
	}
	return "map changed to " + args[0] + r.suffix(), nil
}

func (rs *Set) cmdNextMap(args []string) (string, error) {
	r, args, err := rs.matchRoom(args)
	if err != nil {
		return "", err
	}
	if len(args) != 0 {
		return "", admin.UsageError()
	}
	r.match.NextMap(r.now())
	return "next map: " + r.match.Phase(r.now()).Map + r.suffix(), nil
}

func (rs *Set) cmdEndMatch(args []string) (string, error) {
	r, args, err := rs.matchRoom(args)
	if err != nil {
		return "", err
	}
	if len(args) != 0 {
		return "", admin.UsageError()
	}
	r.match.EndMatch(r.now())
	return "match ended" + r.suffix(), nil
}

// matchRoom is the room a match command acts on: @ROOM as the first
// argument, else the server's one room; a room whose module is not a
// match has no map or match to change.
func (rs *Set) matchRoom(args []string) (*Room, []string, error) {
	r := rs.fixed
	if len(args) > 0 && strings.HasPrefix(args[0], "@") {
		id, err := strconv.ParseUint(args[0][1:], 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("%q is not a room; write @ROOM, e.g. @3 (see rooms)", args[0])
		}
		if r = rs.byID[module.RoomID(id)]; r == nil {
			return nil, nil, fmt.Errorf("no room %d; see rooms", id)
		}
		args = args[1:]
	} else if r == nil {
		return nil, nil, errors.New("this server runs rooms: name one first, e.g. endmatch @3 (see rooms)")
	}
	if r.noMatch != "" {
		return nil, nil, fmt.Errorf("%s is not a match: it has no map rotation or match to end", r.noMatch)
	}
	return r, args, nil
}

// suffix names a room in an answer (nothing for the server's one room).
func (r *Room) suffix() string {
	if r.entry.Fixed {
		return ""
	}
	return fmt.Sprintf(" in room %d", r.entry.ID)
}
