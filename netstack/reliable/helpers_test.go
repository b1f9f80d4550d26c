package reliable

import (
	"bytes"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// t0 is the virtual epoch of the unit tests; at(d) is d after it.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

type packet struct {
	h wire.Header
	p []byte
}

// recorder collects what Poll emits (copied, since emit must not retain).
type recorder struct{ pkts []packet }

func (r *recorder) emit(h *wire.Header, p []byte) {
	r.pkts = append(r.pkts, packet{*h, bytes.Clone(p)})
}

// take returns and forgets everything recorded.
func (r *recorder) take() []packet {
	p := r.pkts
	r.pkts = nil
	return p
}

// poll runs Poll at d and returns what it emitted.
func poll(t *testing.T, e *Endpoint, d time.Duration) []packet {
	t.Helper()
	var r recorder
	if err := e.Poll(at(d), r.emit); err != nil {
		t.Fatalf("Poll at %v: %v", d, err)
	}
	return r.take()
}

// split separates emitted Acks (decoded) from data packets.
func split(t *testing.T, pkts []packet) (acks []Ack, data []packet) {
	t.Helper()
	for _, p := range pkts {
		if p.h.Type == wire.TypeAck {
			a, err := ParseAck(p.p)
			if err != nil {
				t.Fatalf("bad ack payload: %v", err)
			}
			acks = append(acks, a)
			continue
		}
		data = append(data, p)
	}
	return acks, data
}

func seqs(pkts []packet) []uint32 {
	var s []uint32
	for _, p := range pkts {
		s = append(s, p.h.Sequence)
	}
	return s
}

func mustSend(t *testing.T, e *Endpoint, ch wire.Channel, payload string, d time.Duration) {
	t.Helper()
	if err := e.Send(gamemsg.TypeEntityRPC, ch, []byte(payload), at(d)); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

// delivery collects delivered messages.
type delivery struct{ got []packet }

func (d *delivery) fn(h *wire.Header, p []byte) { d.got = append(d.got, packet{*h, bytes.Clone(p)}) }

func reliableHdr(seq uint32) *wire.Header {
	return &wire.Header{Type: gamemsg.TypeEntityRPC, Channel: wire.Reliable, Sequence: seq}
}

func orderedHdr(seq, os uint32) *wire.Header {
	return &wire.Header{Type: gamemsg.TypeEntitySpawn, Channel: wire.ReliableOrdered, Sequence: seq, OrderedSequence: os}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
