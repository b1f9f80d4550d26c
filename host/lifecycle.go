package host

import (
	"sync"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Lifecycle events (admissions and departures) travel from the network
// goroutines to the game thread through lifecycleQueue, which never drops
// one: a dropped departure would leave a ghost player in every module, a
// dropped admission a player no module knows. It needs no bound of its own:
// each admitted slot produces exactly one admission and one departure, and
// admissions are bounded by the transport's slots and handshake budgets,
// so between two ticks the queue holds at most a few events per slot that
// turned over in that tick.

type eventKind uint8

const (
	evAdmitted eventKind = iota
	evLeft
	evResumed // a held seat came back (docs/protocol.md §3.15)
)

type event struct {
	kind   eventKind
	client netstack.ClientInfo
	reason wire.DisconnectReason
	detail string
}

// lifecycleQueue is an unbounded FIFO of lifecycle events; push never
// blocks for longer than an append.
type lifecycleQueue struct {
	mu      sync.Mutex
	pending []event
	spare   []event // the game thread's last batch, reused
}

func (q *lifecycleQueue) push(e event) {
	q.mu.Lock()
	q.pending = append(q.pending, e)
	q.mu.Unlock()
}

// take returns every queued event in arrival order; the slice is valid until
// the next take (game thread only).
func (q *lifecycleQueue) take() []event {
	q.mu.Lock()
	batch := q.pending
	q.pending = q.spare[:0]
	q.mu.Unlock()
	clear(q.spare[:cap(q.spare)])
	q.spare = batch
	return batch
}
