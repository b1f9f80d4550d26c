package netstack_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestHostileFragmentsCostBoundedMemory attacks a real server over UDP: an
// admitted session sends the first fragment of a new 2-fragment message,
// ~64 KB each, in descending message order across its whole receive window
// (the order that once passed the reassembly bound: every message started
// lower than everything held), and never the second fragments. What the
// server holds for it stays within the documented bound (docs/protocol.md
// §5.3), measured as the growth of the server process's heap.
func TestHostileFragmentsCostBoundedMemory(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Timeout = time.Minute })
	p := newRawPeer4(t, srv.Addr(), nil)
	p.admit(srv.Pin(), "hostile")

	heapBefore := heapInUse()
	payload := make([]byte, 64000)
	sent := 0
	for first := uint32(1020); first >= 4; first -= 2 {
		h := wire.Header{Type: gamemsg.TypeEntityRPC, Channel: wire.Reliable, Sequence: first, FragIndex: 0, FragCount: 2}
		p.write(p.frame(p.packet(h, payload))) // not kept: the test must not hold what it sends
		sent++
		if sent%32 == 0 {
			time.Sleep(5 * time.Millisecond) // let the socket buffer drain: every datagram should arrive
		}
	}
	eventually(t, "the hostile datagrams were received", func() bool {
		st, _ := srv.ClientStats(p.id())
		return st.PacketsReceived >= uint64(sent)*9/10
	})
	st, _ := srv.ClientStats(p.id())
	grown := int64(heapInUse()) - int64(heapBefore)
	t.Logf("%d fragments of 64,000 bytes sent (%d received): server heap grew by %d KiB; %d fragments refused for a full buffer",
		sent, st.PacketsReceived, grown>>10, st.ReassemblyFull)
	const limit = 4 << 20 // the bound is ≈ 1 MiB per session; the rest is slack for the test's own allocations
	if grown > limit {
		t.Fatalf("one hostile session grew the server's heap by %d MiB (limit %d MiB)", grown>>20, limit>>20)
	}
	if st.ReassemblyFull == 0 {
		t.Fatal("no fragment was refused: the attack did not reach the bound")
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // the pools' victim caches go at the second collection
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
