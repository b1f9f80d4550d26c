package netstack

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Packing and flushing (docs/protocol.md §5.5).
//
// A flush takes what a session has due — Acks, retransmissions and new
// reliable packets from the reliability engine, then the queued unreliable
// messages, then (v4) the Acks still owed, which ride along — and packs it
// in order into datagrams of at most datagramSize bytes: a record that does
// not fit the current datagram starts the next. Each datagram is sealed once,
// in place, into the flusher's datagramBatch. The flusher writes the batch
// (sendmmsg on Linux) after releasing the session's lock.

// datagramBatch holds sealed datagrams back to back with their destinations.
type datagramBatch struct {
	buf   []byte
	spans []datagramSpan
}

type datagramSpan struct {
	start, end int
	to         netip.AddrPort
}

// reserve makes room for n more bytes without moving what is written (the
// spans are offsets, so moving is safe between datagrams, never inside one).
func (b *datagramBatch) reserve(n int) {
	if cap(b.buf)-len(b.buf) >= n {
		return
	}
	grown := make([]byte, len(b.buf), max(2*cap(b.buf), len(b.buf)+n, 16<<10))
	copy(grown, b.buf)
	b.buf = grown
}

func (b *datagramBatch) reset() {
	b.buf = b.buf[:0]
	b.spans = b.spans[:0]
}

// packState is a flush in progress (under the session's lock).
type packState struct {
	b     *datagramBatch
	now   time.Time
	open  bool // a v4 datagram is being filled
	start int  // where its sealed frame starts in b.buf
	msgs  int  // records in it
	sent  int  // datagrams sealed by this flush
	err   error
}

// flushLocked packs and seals everything due into b. A delivery failure or
// exhausted keys close the session (its Disconnect is written at once).
func (s *session) flushLocked(now time.Time, b *datagramBatch) {
	if s.closed {
		return
	}
	s.pk = packState{b: b, now: now}
	before := s.rel.Retransmissions()
	err := s.rel.Poll(now, s.emitFn)
	for off := 0; off+6 <= len(s.uq); {
		h := wire.Header{Type: wire.MessageType(binary.LittleEndian.Uint16(s.uq[off:])), Channel: wire.Unreliable}
		n := int(binary.LittleEndian.Uint32(s.uq[off+2:]))
		s.emitRecord(&h, s.uq[off+6:off+6+n])
		off += 6 + n
	}
	s.uq = s.uq[:0]
	if s.version >= handshake.ProtocolVersion4 && (s.pk.open || s.pk.sent > 0) {
		s.rel.FlushAcks(now, s.emitFn) // they ride along with what goes anyway
	}
	s.finishDatagram()
	s.queuedAt, s.urgent = time.Time{}, false
	if n := s.rel.Retransmissions() - before; n > 0 {
		s.ctr.Retransmissions.Add(n)
		if s.global != nil {
			s.global.Retransmissions.Add(n)
		}
	}
	switch {
	case errors.Is(s.pk.err, seal.ErrKeyExhausted):
		s.closeLocked(wire.DisconnectKeyExhausted, "session keys exhausted; reconnect", now)
	case err != nil:
		s.closeLocked(wire.DisconnectReliableDeliveryFailed, "reliable message not acknowledged", now)
	}
	s.pk = packState{}
}

// emitRecord adds one message to the flush: a record of the current v4
// datagram, or a v3 packet in a datagram of its own.
func (s *session) emitRecord(h *wire.Header, payload []byte) {
	pk := &s.pk
	if pk.err != nil {
		return
	}
	if s.version < handshake.ProtocolVersion4 {
		s.emitPacketV3(h, payload)
		return
	}
	need := wire.RecordHeaderSize(h, len(payload)) + len(payload)
	if pk.open && len(pk.b.buf)-pk.start+need+seal.TagSize > s.datagramSize {
		s.finishDatagram()
	}
	if !pk.open {
		pk.b.reserve(max(s.datagramSize, seal.Overhead+wire.MaxBodyHeader+need) + 16)
		pk.start, pk.open, pk.msgs = len(pk.b.buf), true, 0
		pk.b.buf = wire.AppendDatagramBase(pk.b.buf[:pk.start+seal.HeaderSize], s.unrel)
	}
	if h.Channel == wire.Unreliable {
		seq, ok := s.nextUnreliable()
		if !ok {
			pk.err = seal.ErrKeyExhausted // the session must be re-established
			return
		}
		h.Sequence = seq
	}
	pk.b.buf = wire.AppendRecord(pk.b.buf, h, payload)
	pk.msgs++
}

// finishDatagram seals the v4 datagram being filled.
func (s *session) finishDatagram() {
	pk := &s.pk
	if !pk.open {
		return
	}
	pk.open = false
	s.sealInPlace(pk.start, pk.msgs)
}

// sealInPlace seals the plaintext written at b.buf[start+HeaderSize:] into
// a frame starting at start, and records it for the write.
func (s *session) sealInPlace(start, msgs int) {
	pk := &s.pk
	b := pk.b
	out, err := s.sealer.Seal(b.buf[:start], b.buf[start+seal.HeaderSize:], pk.now)
	if err != nil {
		pk.err = err
		b.buf = b.buf[:start]
		return
	}
	b.buf = out
	b.spans = append(b.spans, datagramSpan{start: start, end: len(out), to: s.addr})
	pk.sent++
	s.countSent(len(out)-start, msgs)
	s.q.traffic(pk.now, len(out)-start, 0)
}

// emitPacketV3 seals one protocol v3 packet into a datagram of its own.
func (s *session) emitPacketV3(h *wire.Header, payload []byte) {
	if s.server {
		h.SenderID = 0
	} else {
		h.SenderID = s.id
	}
	if h.Channel == wire.Unreliable && h.Sequence == 0 {
		h.Sequence = s.rel.NextUnreliableSequence()
	}
	h.Timestamp = s.timestamp(s.pk.now)
	b := s.pk.b
	start := len(b.buf)
	b.reserve(seal.Overhead + h.Size() + len(payload) + 16)
	b.buf = wire.AppendPacket(b.buf[:start+seal.HeaderSize], h, payload)
	s.sealInPlace(start, 1)
}

// flusher is one goroutine's batch of sealed datagrams and its batched
// writer: the game thread's Flush, a receive loop and a service loop each
// own one, so that they pack and write concurrently without sharing buffers.
type flusher struct {
	b    datagramBatch
	tr   transport.Transport
	msgs []transport.Message
}

func newFlusher(tr transport.Transport) *flusher { return &flusher{tr: tr} }

// write sends every datagram of the batch and empties it. A datagram the
// system refuses is lost like one lost on the path (the protocol recovers).
func (f *flusher) write() {
	if len(f.b.spans) == 0 {
		return
	}
	f.msgs = f.msgs[:0]
	for _, sp := range f.b.spans {
		f.msgs = append(f.msgs, transport.Message{Buf: f.b.buf[sp.start:sp.end], N: sp.end - sp.start, Addr: sp.to})
	}
	_, _ = f.tr.WriteBatch(f.msgs)
	clear(f.msgs)
	f.b.reset()
}
