package host

import (
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
)

// applyResumed: a player whose connection dropped came back to its seat
// (docs/protocol.md §3.15) on a new connection. It never left: it keeps its
// room, team, score and entity, and the modules are told "resumed" — not
// "left" then "admitted". Only its address changes.
func (s *Server) applyResumed(ci netstack.ClientInfo) {
	p, ok := s.players[ci.ID]
	if !ok {
		return // refused at admission (a banned name), or already gone
	}
	p.Addr = ci.Addr
	s.players[ci.ID] = p
	s.mods.ClientResumed(module.ClientInfo{ID: ci.ID, Name: p.Name, Addr: ci.Addr})
	s.log.Info("player resumed its seat", "client", ci.ID, "name", p.Name, "addr", ci.Addr.String())
}
