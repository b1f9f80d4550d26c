package netstack

import (
	"net/netip"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/netstack/seal"
)

// Frames that arrive after a session closed (docs/protocol.md §6).
//
// A Disconnect is sealed three times, so a clean quit leaves two copies in
// flight after the first closed the session; and frames the client sent
// just before a kick arrive after it. They are not attacks, and counting
// them in securityDrops would make every quit look like one (an alert
// watches that counter). So the server keeps a closed session's opener
// for closedGrace: a frame from that endpoint which still authenticates
// under it is a late frame (lateFrames, dropped), anything else from there
// is a security drop as before. The table is bounded; the oldest entry
// goes first.

const (
	closedGrace = 2 * time.Second
	closedMax   = 1024
)

type closedSession struct {
	opener *seal.Opener
	at     time.Time
}

// closedTable remembers recently closed sessions by endpoint. Only the
// receive goroutine opens frames with a remembered opener; remember and
// expire may run on any goroutine, so a mutex guards the map.
type closedTable struct {
	mu      sync.Mutex
	byAddr  map[netip.AddrPort]closedSession
	scratch []byte // receive goroutine only
}

func (t *closedTable) remember(addr netip.AddrPort, o *seal.Opener, now time.Time) {
	if o == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byAddr == nil {
		t.byAddr = make(map[netip.AddrPort]closedSession)
	}
	if len(t.byAddr) >= closedMax {
		t.expireLocked(now, true)
	}
	t.byAddr[addr] = closedSession{opener: o, at: now}
}

// late reports whether d, from addr, authenticates under the session that
// closed there within closedGrace (receive goroutine).
func (t *closedTable) late(addr netip.AddrPort, d []byte, now time.Time) bool {
	t.mu.Lock()
	c, ok := t.byAddr[addr]
	t.mu.Unlock()
	if !ok || now.Sub(c.at) > closedGrace {
		return false
	}
	out, err := c.opener.Open(t.scratch[:0], d, now)
	t.scratch = out[:0]
	return err == nil
}

// expire drops the entries older than closedGrace (service loop).
func (t *closedTable) expire(now time.Time) {
	t.mu.Lock()
	t.expireLocked(now, false)
	t.mu.Unlock()
}

// expireLocked drops stale entries, and with full also the oldest one.
func (t *closedTable) expireLocked(now time.Time, full bool) {
	var oldest netip.AddrPort
	var oldestAt time.Time
	for a, c := range t.byAddr {
		if now.Sub(c.at) > closedGrace {
			delete(t.byAddr, a)
			continue
		}
		if oldestAt.IsZero() || c.at.Before(oldestAt) {
			oldest, oldestAt = a, c.at
		}
	}
	if full && len(t.byAddr) >= closedMax {
		delete(t.byAddr, oldest)
	}
}
