package reliable

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestSendRingOfAnyWindowKeepsEachPacket: whatever MaxInFlight (a power of
// two or not), every packet keeps its own slot in the send ring: first
// transmissions and retransmissions carry the payload sent with their
// sequence, over many wraps of the ring.
func TestSendRingOfAnyWindowKeepsEachPacket(t *testing.T) {
	for _, window := range []int{1, 3, 5, 7, 100, 256} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			e := New(Config{MaxInFlight: window, MaxQueued: 4 * window}, t0)
			want := map[uint32]string{}
			d := time.Duration(0)
			next := uint32(1)
			check := func(pkts []packet) []uint32 {
				t.Helper()
				_, data := split(t, pkts)
				for _, p := range data {
					if w := want[p.h.Sequence]; string(p.p) != w {
						t.Fatalf("window %d: sequence %d carries %q, want %q", window, p.h.Sequence, p.p, w)
					}
				}
				return seqs(data)
			}
			for round := range 20 {
				for range window {
					want[next] = fmt.Sprintf("m%d-%d", next, round)
					mustSend(t, e, wire.Reliable, want[next], d)
					next++
				}
				sent := check(poll(t, e, d))
				if len(sent) != window {
					t.Fatalf("round %d: sent %v, want %d packets", round, sent, window)
				}
				// Every other one acknowledged, the rest resent after their RTO.
				d += 10 * ms
				for i, s := range sent {
					if i%2 == 1 {
						e.OnAck(Ack{Ack: s}, at(d))
					}
				}
				d += 2 * time.Second
				check(poll(t, e, d))
				for _, s := range sent {
					e.OnAck(Ack{Ack: s}, at(d))
				}
				if st := e.Stats(); st.InFlight != 0 {
					t.Fatalf("round %d: %d in flight after every ack", round, st.InFlight)
				}
			}
		})
	}
}

// TestOutPacketFitsACacheLine: a send-ring slot is one 64-byte line, so
// the Send, the transmission and the Ack of a packet each touch one line
// of the ring (1,000 sessions' rings do not stay in the cache).
func TestOutPacketFitsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(outPacket{}); n > 64 {
		t.Fatalf("outPacket is %d bytes, want at most 64", n)
	}
}
