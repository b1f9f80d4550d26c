package supervisor

import (
	"sync"
	"sync/atomic"
)

// MessageQuota is the per-client limit on module messages
// ([limits] module_messages_per_tick): a client may have at most Limit
// messages of module types (and ClientInputs, counted once however many
// modules subscribe) copied into module inboxes per tick, all modules
// together. The network goroutine takes from the quota before it copies a
// message; over the limit the message is dropped and counted, per module
// and server-wide. A tick, here, is the span between two Manager.Steps.
//
// Lock-free on the message path: the quotas live in a copy-on-write map
// (replaced on admission and departure, under mu) and each quota is one
// atomic word holding the tick it counts for and the count, so a new tick
// needs no reset pass.
type messageQuota struct {
	limit uint32
	tick  atomic.Uint32 // the current tick's number, low 32 bits (game thread writes)

	mu   sync.Mutex                        // writers of byID
	byID atomic.Pointer[map[uint32]*quota] // read lock-free by the network side
	over atomic.Uint64                     // messages dropped over the limit, server-wide
}

// quota is one client's count: the tick it is for (high 32 bits) and the
// messages taken in it (low 32 bits).
type quota struct{ v atomic.Uint64 }

func newMessageQuota(limit int) *messageQuota {
	q := &messageQuota{limit: uint32(limit)}
	q.byID.Store(&map[uint32]*quota{})
	return q
}

// nextTick starts a new tick: every client's count starts again.
func (q *messageQuota) nextTick() { q.tick.Add(1) }

// take reports whether client may have one more message delivered this
// tick, and counts it. A client the game thread has not been told of yet
// (its first messages race its admission) gets its quota here.
func (q *messageQuota) take(client uint32) bool {
	c := (*q.byID.Load())[client]
	if c == nil {
		c = q.add(client)
	}
	tick := uint64(q.tick.Load())
	for {
		v := c.v.Load()
		n := v & 0xFFFF_FFFF
		if v>>32 != tick {
			n = 0
		}
		if n >= uint64(q.limit) {
			q.over.Add(1)
			return false
		}
		if c.v.CompareAndSwap(v, tick<<32|(n+1)) {
			return true
		}
	}
}

// add returns client's quota, creating it (copy on write).
func (q *messageQuota) add(client uint32) *quota {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.byID.Load()
	if c := old[client]; c != nil {
		return c
	}
	next := make(map[uint32]*quota, len(old)+1)
	for id, c := range old {
		next[id] = c
	}
	c := &quota{}
	next[client] = c
	q.byID.Store(&next)
	return c
}

// keep drops the quotas of every client but the admitted ones and those
// that sent in this tick or the last (a client whose admission the game
// thread has not seen yet). Called by the game thread when a client leaves.
func (q *messageQuota) keep(admitted func(client uint32) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.byID.Load()
	tick := uint64(q.tick.Load())
	next := make(map[uint32]*quota, len(old))
	for id, c := range old {
		t := c.v.Load() >> 32
		if admitted(id) || t == tick || t+1 == tick {
			next[id] = c
		}
	}
	q.byID.Store(&next)
}
