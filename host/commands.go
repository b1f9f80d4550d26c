package host

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/bans"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// registerBuiltins adds the built-in admin commands. They run on the game
// thread (Server.Exec). The rooms add their own (host/rooms: rooms, room,
// and the match commands map, nextmap, endmatch).
func (s *Server) registerBuiltins() {
	for _, c := range []admin.Command{
		{Name: "status", Usage: "", Help: "server, match and traffic summary", Run: s.cmdStatus},
		{Name: "players", Usage: "", Help: "list admitted players with id, name, address and ping", Run: s.cmdPlayers},
		{Name: "kick", Usage: "ID|NAME [REASON...]", Help: "disconnect a player (reason Kicked)", Run: s.cmdKick},
		{Name: "ban", Usage: "ID|NAME|IP [REASON...]", Help: "ban a player's name, or an address (persisted), and disconnect who it refuses", Run: s.cmdBan},
		{Name: "banaddr", Usage: "ID|NAME [REASON...]", Help: "ban a player's address (every player behind it; persisted)", Run: s.cmdBanAddr},
		{Name: "unban", Usage: "IP|NAME", Help: "lift a ban of an address or a name", Run: s.cmdUnban},
		{Name: "bans", Usage: "", Help: "list bans", Run: s.cmdBans},
		{Name: "say", Usage: "TEXT...", Help: "chat to every player as \"server\"", Run: s.cmdSay},
	} {
		c.Owner = "builtin"
		if err := s.cmds.Register(c); err != nil {
			panic(err) // built-in names are fixed; a clash is a programming error
		}
	}
}

func (s *Server) cmdStatus([]string) (string, error) {
	out := fmt.Sprintf("%s on %s, pin %s\n%s\n%s", s.cfg.Server.Name, s.Addr(), s.Pin(), s.Exposure(), s.Stats())
	if line := s.drainLine(s.now); line != "" {
		out += "\n" + line
	}
	return out, nil
}

func (s *Server) cmdPlayers([]string) (string, error) {
	ids := make([]uint32, 0, len(s.players))
	for id := range s.players {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return "no players", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d player(s)", len(ids))
	for _, id := range ids {
		p := s.players[id]
		ping := "-"
		if st, ok := s.net.ClientStats(id); ok {
			ping = strconv.FormatInt(st.Ping.Milliseconds(), 10) + "ms"
		}
		fmt.Fprintf(&b, "\n%d %s %s %s", id, p.Name, p.Addr, ping)
	}
	return b.String(), nil
}

// findPlayer resolves an id or an exact (case-insensitive) name.
func (s *Server) findPlayer(arg string) (netstack.ClientInfo, error) {
	if id, err := strconv.ParseUint(arg, 10, 32); err == nil {
		if p, ok := s.players[uint32(id)]; ok {
			return p, nil
		}
	}
	for _, p := range s.players {
		if strings.EqualFold(p.Name, arg) {
			return p, nil
		}
	}
	return netstack.ClientInfo{}, fmt.Errorf("no player %q; see players", arg)
}

func reasonText(args []string, def string) string {
	if len(args) == 0 {
		return def
	}
	return strings.Join(args, " ")
}

func (s *Server) cmdKick(args []string) (string, error) {
	if len(args) == 0 {
		return "", admin.UsageError()
	}
	p, err := s.findPlayer(args[0])
	if err != nil {
		return "", err
	}
	reason := reasonText(args[1:], "kicked by the server admin")
	if err := s.net.Kick(p.ID, wire.DisconnectKicked, reason); err != nil {
		return "", err
	}
	return fmt.Sprintf("kicked %d %s: %s", p.ID, p.Name, reason), nil
}

func (s *Server) cmdBan(args []string) (string, error) {
	if len(args) == 0 {
		return "", admin.UsageError()
	}
	reason := reasonText(args[1:], "banned by the server admin")
	if addr, err := netip.ParseAddr(args[0]); err == nil {
		return s.banAddr(addr, reason)
	}
	p, err := s.findPlayer(args[0])
	if err != nil {
		return "", fmt.Errorf("%q is neither an IP address nor a player; see players (an absent player's name: ban it with its exact name once it connects, or banaddr)", args[0])
	}
	if err := s.bans.Add(bans.Ban{Name: p.Name, Reason: reason, By: "admin", At: time.Now()}); err != nil {
		return "", err
	}
	kicked := 0
	for _, q := range s.players {
		if strings.EqualFold(q.Name, p.Name) && s.net.Kick(q.ID, wire.DisconnectBanned, reason) == nil {
			kicked++
		}
	}
	return fmt.Sprintf("banned the name %s (%s); %d player(s) disconnected; their address stays open (banaddr bans it)", p.Name, reason, kicked), nil
}

func (s *Server) cmdBanAddr(args []string) (string, error) {
	if len(args) == 0 {
		return "", admin.UsageError()
	}
	p, err := s.findPlayer(args[0])
	if err != nil {
		return "", err
	}
	return s.banAddr(p.Addr.Addr(), reasonText(args[1:], "banned by the server admin"))
}

// banAddr bans an address and disconnects every player behind it.
func (s *Server) banAddr(addr netip.Addr, reason string) (string, error) {
	if err := s.bans.Add(bans.Ban{Addr: addr, Reason: reason, By: "admin", At: time.Now()}); err != nil {
		return "", err
	}
	kicked := 0
	for _, p := range s.players {
		if p.Addr.Addr() == addr && s.net.Kick(p.ID, wire.DisconnectBanned, reason) == nil {
			kicked++
		}
	}
	return fmt.Sprintf("banned %s (%s); %d player(s) disconnected", addr, reason, kicked), nil
}

func (s *Server) cmdUnban(args []string) (string, error) {
	if len(args) != 1 {
		return "", admin.UsageError()
	}
	var ok bool
	var err error
	if addr, perr := netip.ParseAddr(args[0]); perr == nil {
		ok, err = s.bans.Remove(addr)
	} else {
		ok, err = s.bans.RemoveName(args[0])
	}
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is not banned; see bans", args[0])
	}
	return "unbanned " + args[0], nil
}

func (s *Server) cmdBans([]string) (string, error) {
	list := s.bans.List()
	if len(list) == 0 {
		return "no bans", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d ban(s)", len(list))
	for _, ban := range list {
		what := ban.Addr.String()
		if ban.Name != "" {
			what = "name " + ban.Name
		}
		fmt.Fprintf(&b, "\n%s %s (by %s at %s)", what, ban.Reason, ban.By, ban.At.Format(time.RFC3339))
	}
	return b.String(), nil
}

func (s *Server) cmdSay(args []string) (string, error) {
	if len(args) == 0 {
		return "", admin.UsageError()
	}
	text := strings.Join(args, " ")
	if !gamemsg.ValidChatText([]byte(text)) {
		return "", errors.New("chat text must be 1..256 bytes of UTF-8 without control characters")
	}
	payload := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: "server", Text: text})
	if err := s.net.Broadcast(gamemsg.TypeChatMessage, wire.Reliable, payload); err != nil {
		return "", err
	}
	return fmt.Sprintf("said to %d player(s)", len(s.players)), nil
}
