package netstack

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

var packTo = netip.MustParseAddrPort("127.0.0.2:5000")

// packRecords returns a mix of records a flush packs: unreliable messages
// of many sizes, reliable and ordered ones, and fragments.
func packRecords() []wire.Header {
	var hs []wire.Header
	for i := range 300 {
		h := wire.Header{Type: wire.MessageType(1000 + i%7), Channel: wire.Unreliable}
		switch i % 10 {
		case 3:
			h.Channel, h.Sequence = wire.Reliable, uint32(i+1)
		case 6:
			h.Channel, h.Sequence, h.OrderedSequence = wire.ReliableOrdered, uint32(i+1), uint32(i/10+1)
		case 9:
			h.Channel, h.Sequence, h.FragIndex, h.FragCount = wire.Reliable, uint32(i+1), 1, 3
		}
		hs = append(hs, h)
	}
	return hs
}

// packPayload is record i's payload: 1 to 1000 bytes, repeatable.
func packPayload(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1+(i*137)%1000) }

func newTestPacker(t *testing.T, size int, version uint16) (*packer, *seal.Opener) {
	t.Helper()
	var k [32]byte
	k[0] = 9
	p := new(packer)
	p.init(packerConfig{sealer: seal.NewSealer(k, seal.RotationConfig{}), size: size, version: version,
		senderID: 7, origin: time.Now().Add(-time.Minute), v3seq: counter(100)})
	return p, seal.NewOpener(k)
}

func counter(from uint32) func() uint32 {
	return func() uint32 { from++; return from }
}

// TestPackerPacksToSize: records packed into datagrams of a given size come
// out as sealed datagrams of at most that size, each a valid v4 datagram
// body (wire.CheckDatagram) holding the records in order, unreliable
// sequences consecutive from 1; each datagram but the last is closed only
// because the next record did not fit; the result counts what was sealed.
func TestPackerPacksToSize(t *testing.T) {
	for _, size := range []int{1200, 1500, 9000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			p, opener := newTestPacker(t, size, 4)
			var b datagramBatch
			now := time.Now()
			p.begin(&b, packTo, now)
			want := packRecords()
			for i := range want {
				h := want[i]
				p.add(&h, packPayload(i))
			}
			res := p.finish()
			if res.err != nil || res.datagrams != len(b.spans) || res.messages != len(want) {
				t.Fatalf("result %+v for %d spans, %d records", res, len(b.spans), len(want))
			}
			got, bytesSent, nextUnrel := 0, 0, uint32(1)
			var firsts []int // size of each datagram's first record
			for d, sp := range b.spans {
				frame := b.buf[sp.start:sp.end]
				bytesSent += len(frame)
				if len(frame) > size || sp.to != packTo {
					t.Fatalf("datagram %d: %d bytes to %v; size %d", d, len(frame), sp.to, size)
				}
				body, err := opener.Open(nil, frame, now)
				if err != nil {
					t.Fatalf("datagram %d does not open: %v", d, err)
				}
				n, err := wire.CheckDatagram(body)
				if err != nil || n == 0 {
					t.Fatalf("datagram %d: CheckDatagram = %d, %v", d, n, err)
				}
				r := wire.NewDatagramReader(body)
				var h wire.Header
				for k := 0; k < n; k++ {
					payload, ok := r.Next(&h)
					if !ok {
						t.Fatalf("datagram %d: record %d of %d missing", d, k, n)
					}
					w := want[got]
					if h.Type != w.Type || h.Channel != w.Channel || h.FragCount != w.FragCount || !bytes.Equal(payload, packPayload(got)) {
						t.Fatalf("record %d: %v %v frag %d, %d bytes; want %v %v frag %d", got, h.Type, h.Channel, h.FragCount, len(payload), w.Type, w.Channel, w.FragCount)
					}
					if h.Channel == wire.Unreliable {
						if h.Sequence != nextUnrel {
							t.Fatalf("record %d: unreliable sequence %d, want %d", got, h.Sequence, nextUnrel)
						}
						nextUnrel++
					} else if h.Sequence != w.Sequence {
						t.Fatalf("record %d: sequence %d, want %d", got, h.Sequence, w.Sequence)
					}
					if k == 0 {
						firsts = append(firsts, wire.RecordHeaderSize(&h, len(payload))+len(payload))
					}
					got++
				}
			}
			if got != len(want) || res.bytes != bytesSent {
				t.Fatalf("%d records in the datagrams, %d bytes; want %d records, %d bytes", got, bytesSent, len(want), res.bytes)
			}
			for d := 0; d+1 < len(b.spans); d++ {
				if sp := b.spans[d]; sp.end-sp.start+firsts[d+1] <= size {
					t.Fatalf("datagram %d closed at %d bytes, but the next record (%d bytes) fit in %d", d, sp.end-sp.start, firsts[d+1], size)
				}
			}
		})
	}
}

// TestPackerV3: a v3 pack seals one packet per datagram, with the
// session's SenderID, a Timestamp on its clock, and unreliable sequences
// from the reliability engine's counter.
func TestPackerV3(t *testing.T) {
	p, opener := newTestPacker(t, 1200, 3)
	var b datagramBatch
	now := time.Now()
	p.begin(&b, packTo, now)
	for i := range 3 {
		h := wire.Header{Type: 1000, Channel: wire.Unreliable}
		p.add(&h, packPayload(i))
	}
	rel := wire.Header{Type: 1001, Channel: wire.Reliable, Sequence: 5}
	p.add(&rel, packPayload(3))
	if res := p.finish(); res.err != nil || res.datagrams != 4 || res.messages != 4 {
		t.Fatalf("result %+v", res)
	}
	for i, sp := range b.spans {
		body, err := opener.Open(nil, b.buf[sp.start:sp.end], now)
		if err != nil {
			t.Fatal(err)
		}
		h, payload, err := wire.ParsePacket(body)
		if err != nil || h.SenderID != 7 || !bytes.Equal(payload, packPayload(i)) || math.Abs(float64(h.Timestamp)-60) > 1 {
			t.Fatalf("packet %d: %+v, %d bytes, %v", i, h, len(payload), err)
		}
		if want := []uint32{101, 102, 103, 5}[i]; h.Sequence != want {
			t.Fatalf("packet %d: sequence %d, want %d", i, h.Sequence, want)
		}
	}
}

// TestPackerUnreliableExhausted: when the unreliable sequence space runs
// out, the pack reports ErrKeyExhausted (the session must be
// re-established) and adds nothing more.
func TestPackerUnreliableExhausted(t *testing.T) {
	p, _ := newTestPacker(t, 1200, 4)
	p.unrel = math.MaxUint32 - 1
	var b datagramBatch
	p.begin(&b, packTo, time.Now())
	for i := range 3 {
		h := wire.Header{Type: 1000, Channel: wire.Unreliable}
		p.add(&h, packPayload(i))
	}
	if res := p.finish(); !errors.Is(res.err, seal.ErrKeyExhausted) || res.messages != 1 {
		t.Fatalf("result %+v; want ErrKeyExhausted after one record", res)
	}
}
