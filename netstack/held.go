package netstack

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Messages for a module that is not loaded now (docs/protocol.md §10.3).
//
// When a module crashes, reloads or restarts, its message types are
// unregistered until it is back (wire.ErrTypeNotLoaded). A reliable message
// of such a type that a client sends meanwhile is acknowledged like any
// other and held, in arrival order, in a bounded queue of its session: once
// the type is registered again it is validated against the new schema and
// delivered; if it is still not loaded after the hold time, or the queue is
// full, it is refused (NotLoaded: counted, and told in a MessageRefused
// notice). Messages of other types are not held behind it. Unreliable
// messages are never held, and neither are a v3 session's: v3 drops a
// packet of a type not registered unacknowledged, so its sender resends it
// (recv.go).

// A client holds the same way, for DefaultHoldUnannounced, a reliable
// message of a module type that no ModuleSchemas announcement has named
// yet: it may have overtaken the announcement (§10.2).

// Defaults of the hold queue.
const (
	DefaultHoldNotLoaded   = 10 * time.Second
	DefaultHoldUnannounced = 3 * time.Second
	heldMax                = 64       // messages held per client
	heldMaxBytes           = 64 << 10 // payload bytes held per client
)

// heldMessage is one message waiting for its module.
type heldMessage struct {
	h       wire.Header
	payload []byte
	at      time.Time
}

// holdLocked keeps a reliable message of a not-loaded type, or refuses it
// when the queue is full.
func (s *session) holdLocked(h *wire.Header, payload []byte) {
	if len(s.rel.held) >= heldMax || s.rel.heldBytes+len(payload) > heldMaxBytes {
		s.refuseLocked(h, wire.RefusedNotLoaded)
		return
	}
	hh := *h
	hh.FragCount = 0
	s.rel.held = append(s.rel.held, heldMessage{h: hh, payload: append([]byte(nil), payload...), at: s.rel.rx0.now})
	s.rel.heldBytes += len(payload)
	s.add(heldCount, 1)
}

// releaseHeldLocked delivers the held messages whose type is back, in order,
// and refuses those that waited out the hold time; it stops at the first
// that must wait longer. s.rel.rx0 must be set (the receive or service call).
func (s *session) releaseHeldLocked() {
	n := 0
	for ; n < len(s.rel.held); n++ {
		m := &s.rel.held[n]
		err := s.validate(&m.h, m.payload)
		if err == nil && s.rel.rx0.ready != nil && !s.rel.rx0.ready(m.h.Type) {
			err = wire.ErrTypeNotLoaded // registered, its handler not installed yet
		}
		switch {
		case err == nil:
			s.add(heldDelivered, 1)
			s.rel.rx0.deliver(&m.h, m.payload)
		case err == wire.ErrTypeNotLoaded && s.rel.rx0.now.Sub(m.at) < s.rel.holdFor:
			s.rel.held = s.dropHeld(n)
			return
		default:
			s.refuseLocked(&m.h, wire.RefusalOf(err))
		}
		s.rel.heldBytes -= len(m.payload)
	}
	s.rel.held = s.dropHeld(n)
}

// dropHeld removes the first n held messages.
func (s *session) dropHeld(n int) []heldMessage {
	if n == 0 {
		return s.rel.held
	}
	rest := copy(s.rel.held, s.rel.held[n:])
	clear(s.rel.held[rest:])
	return s.rel.held[:rest]
}

func heldCount(c *Counters) *atomicU64     { return &c.HeldNotLoaded }
func heldDelivered(c *Counters) *atomicU64 { return &c.HeldDelivered }
