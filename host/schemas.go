package host

import (
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Module schemas announced (docs/protocol.md §10.2). After a client's
// admission, and at the end of every tick in which modules changed their
// message types (a module loaded, unloaded, crashed, restarted or
// reloaded), every v4 client is sent the table of module message types:
// it learns what it may send and what it will receive, and keeps the table
// for its console. v3 clients are never sent it (the v3 contract has no
// such type). It travels on the Reliable channel, not ReliableOrdered, so
// that it is never held behind an ordered message and reaches the client
// before the module messages queued after it (a client keeps the table of
// the highest revision, whatever the arrival order).

// schemaTable caches the encoded table of one registry revision (game thread).
type schemaTable struct {
	rev       uint32
	built     bool
	announced bool // the table of rev was broadcast
	payload   []byte
}

// currentSchemas returns the encoded table of the registry's revision now.
func (s *Server) currentSchemas() []byte {
	reg := s.net.Registry()
	rev := reg.Revision()
	if !s.schemas.built || s.schemas.rev != rev {
		s.schemas.payload = wire.AppendModuleSchemas(s.schemas.payload[:0],
			&wire.ModuleSchemas{Revision: rev, Types: reg.ModuleSchemas()})
		s.schemas.rev, s.schemas.built, s.schemas.announced = rev, true, false
	}
	return s.schemas.payload
}

// sendSchemas sends the table to one newly admitted client.
func (s *Server) sendSchemas(ci netstack.ClientInfo) {
	if !ci.Speaks(wire.TypeModuleSchemas) {
		return
	}
	if err := s.net.Send(ci.ID, wire.TypeModuleSchemas, wire.Reliable, s.currentSchemas()); err != nil {
		s.log.Warn("module schemas not sent", "client", ci.ID, "err", err)
	}
}

// announceSchemas broadcasts the table when the module types changed since
// it was last announced (end of tick, before Flush).
func (s *Server) announceSchemas() {
	if s.schemas.built && s.schemas.rev == s.net.Registry().Revision() && s.schemas.announced {
		return
	}
	payload := s.currentSchemas()
	s.schemas.announced = true
	for _, ci := range s.players {
		if !ci.Speaks(wire.TypeModuleSchemas) {
			continue
		}
		if err := s.net.Send(ci.ID, wire.TypeModuleSchemas, wire.Reliable, payload); err != nil {
			s.log.Warn("module schemas not sent", "client", ci.ID, "err", err)
		}
	}
}
