package netstack

import (
	"sync"
	"sync/atomic"
)

// dueTable holds, for the admitted sessions (the byID map), when the
// service loop next has work for each, densely: the service loop and the
// tick's Flush walk it a hundred and sixty times a second, and with tens
// of thousands of idle sessions reading each session's own due time would
// be a cache miss per session per walk (a session is kilobytes); here a
// walk reads 16 bytes per session and touches only the sessions due.
//
// A session's svcAt points at its entry while it is in the table and at
// its own svcDue otherwise; the entry's peer is nil while it is free. An
// entry is taken and freed under the server's mu and the session's (so
// that no wake or due time of a departed session lands in the entry of
// the next); a peer's dueIdx is guarded by its mu.
type dueTable struct {
	mu     sync.Mutex // guards free and the growth of chunks
	free   []int32
	n      atomic.Int32                // entries ever used: the walk's bound
	chunks atomic.Pointer[[]*dueChunk] // each chunk stays where it is
}

const dueChunkSize = 1024

type dueChunk struct {
	due  [dueChunkSize]atomic.Int64 // svcDue of the entry's session
	peer [dueChunkSize]atomic.Pointer[peer]
}

// add gives p an entry; its work is due at the next walk. Under p.mu.
func (t *dueTable) add(p *peer) {
	t.mu.Lock()
	var i int32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = t.n.Load()
		if int(i)/dueChunkSize >= t.nchunks() {
			grown := append(t.chunkList(), new(dueChunk))
			t.chunks.Store(&grown)
		}
		t.n.Store(i + 1)
	}
	t.mu.Unlock()
	c := t.chunkList()[i/dueChunkSize]
	e := &c.due[i%dueChunkSize]
	e.Store(0)
	p.dueIdx = i + 1
	p.svcAt.Store(e)
	c.peer[i%dueChunkSize].Store(p)
}

// remove frees p's entry (none: nothing to do). Under p.mu.
func (t *dueTable) remove(p *peer) {
	i := p.dueIdx - 1
	if i < 0 {
		return
	}
	p.dueIdx = 0
	p.svcAt.Store(&p.svcDue)
	c := t.chunkList()[i/dueChunkSize]
	c.peer[i%dueChunkSize].Store(nil)
	t.mu.Lock()
	t.free = append(t.free, i)
	t.mu.Unlock()
}

func (t *dueTable) chunkList() []*dueChunk {
	if c := t.chunks.Load(); c != nil {
		return *c
	}
	return nil
}

func (t *dueTable) nchunks() int { return len(t.chunkList()) }

// dueList returns, in buf's array, the sessions whose work is due at pass
// (an offset from the server's origin, as svcDue): due 0 means at once.
func (t *dueTable) dueList(buf []*peer, pass int64) []*peer {
	out := buf[:0]
	n := int(t.n.Load())
	for ci, c := range t.chunkList() {
		for j := range min(dueChunkSize, n-ci*dueChunkSize) {
			if due := c.due[j].Load(); due != 0 && pass < due {
				continue
			}
			if p := c.peer[j].Load(); p != nil {
				out = append(out, p)
			}
		}
	}
	return out
}
