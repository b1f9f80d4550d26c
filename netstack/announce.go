package netstack

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Module schema announcements (docs/protocol.md §10.2).
//
// A v4 client learns the module message types from ModuleSchemas, the table
// of the registry's module types at one revision. The server guarantees the
// order per session: a module message is never queued to a session before
// the table that covers its type. Each peer remembers the revision it was
// last sent; sending a module type to a peer whose table is older queues the
// current table first, in the same flush and with a lower reliability
// sequence, so that only loss can make the message arrive first (and the
// client holds what overtook its announcement, held.go). A newly admitted
// peer is sent the table with its admission, and AnnounceSchemas sends a
// changed table to everybody else. v3 sessions are never sent it.
//
// ModuleProtocols (§10.4), the protocol version each module speaks, goes
// with every table, right after it and with the same revision.

// schemaTable caches the encoded table of one registry revision. It is
// rebuilt into a fresh slice, never in place, so a payload handed out stays
// valid for the send that copies it.
type schemaTable struct {
	mu        sync.Mutex
	rev       uint32
	built     bool
	payload   []byte        // ModuleSchemas
	protocols []byte        // ModuleProtocols
	announced atomic.Uint32 // revision AnnounceSchemas last sent to every peer, +1 (0: none)
}

// current returns the revision now and its encoded table and protocols.
func (t *schemaTable) current(reg *wire.Registry) (rev uint32, table, protocols []byte) {
	rev = reg.Revision()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.built || t.rev != rev {
		t.payload = wire.AppendModuleSchemas(nil, &wire.ModuleSchemas{Revision: rev, Types: reg.ModuleSchemas()})
		t.protocols = wire.AppendModuleProtocols(nil, &wire.ModuleProtocols{Revision: rev, Modules: reg.ModuleProtocols()})
		t.rev, t.built = rev, true
	}
	return t.rev, t.payload, t.protocols
}

// announceLocked queues the current table to p unless p has it already
// (under p's lock, p Connected).
func (s *Server) announceLocked(p *peer, now time.Time) {
	if p.version < handshake.ProtocolVersion4 {
		return
	}
	if p.schemaSent && p.schemaRev == s.reg.Revision() {
		return // the common case, every module Send: without the table's lock
	}
	rev, table, protocols := s.schemas.current(s.reg)
	if p.schemaSent && p.schemaRev == rev {
		return
	}
	err := p.sendLocked(wire.TypeModuleSchemas, wire.Reliable, table, now)
	if err == nil {
		err = p.sendLocked(wire.TypeModuleProtocols, wire.Reliable, protocols, now)
	}
	if err != nil {
		s.log.Warn("module schemas not sent", "client", p.id, "err", err)
		return
	}
	p.schemaSent, p.schemaRev = true, rev
}

// AnnounceSchemas sends the current table of module message types to every
// admitted v4 client that does not have it (docs/protocol.md §10.2). The
// host calls it at the end of every tick, before Flush; it costs one
// comparison when the module types did not change. Newly admitted clients
// get the table with their admission, and a client is always sent the
// table before a module message of a type it does not cover.
func (s *Server) AnnounceSchemas() {
	rev := s.reg.Revision()
	if s.schemas.announced.Load() == rev+1 {
		return
	}
	now := time.Now()
	bp := peerLists.Get().(*[]*peer)
	peers := s.snapshotPeers(*bp)
	for _, p := range peers {
		p.mu.Lock()
		if p.state == slotConnected && !p.life.lingering {
			s.announceLocked(p, now)
		}
		p.mu.Unlock()
	}
	clear(peers)
	*bp = peers[:0]
	peerLists.Put(bp)
	s.schemas.announced.Store(rev + 1)
}
