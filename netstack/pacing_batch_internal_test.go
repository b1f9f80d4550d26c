package netstack

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/congestion"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestHeldStateLeavesInFullDatagrams: state that waits for the pacer on a
// narrow link (the initial 32 KiB/s) while flushes come every 5 ms (the
// tick's flush and the service loop's passes) leaves in datagrams of at
// least stateBatch at the rate, not a few records each: every datagram
// costs about 80 bytes of headers and seal, which on a 256 kbit/s link
// would take a third of it. A flush that goes anyway (here: every tenth,
// with an InputAck) takes what the pacer allows.
func TestHeldStateLeavesInFullDatagrams(t *testing.T) {
	srv, _ := sessionPair(t)
	now := time.Now()
	var b datagramBatch
	var stateOnly, bytes, flushes int
	for i := range 400 { // 2 s; the game wants ~60 kB/s: 15 entities at 60 Hz, more than the rate
		if i%3 == 0 {
			for id := range uint32(15) {
				for k := range uint32(4) { // four parts of each entity, none covering another
					u := stateUpdate(id*4+k+1, byte(i))
					if err := srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, uint64(id*4+k+1), 1, u, now); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		ack := i%10 == 0
		if ack {
			if err := srv.sendLocked(gamemsg.TypeInputAck, 0, make([]byte, 37), now); err != nil {
				t.Fatal(err)
			}
		}
		srv.flushLocked(now, &b)
		if !ack && i >= 100 {
			for _, sp := range b.spans {
				stateOnly++
				bytes += sp.end - sp.start
			}
			flushes++
		}
		b.reset()
		now = now.Add(5 * time.Millisecond)
	}
	min := int(congestion.DefaultInitialRate * 0.9 * stateBatch.Seconds()) // the start may pace a little under it
	if stateOnly == 0 || bytes/stateOnly < min {
		t.Errorf("%d state-only datagrams in %d flushes, %d bytes on average; want at least %d", stateOnly, flushes, bytes/max(stateOnly, 1), min)
	}
}
