package netstack

import (
	"math"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Packing (docs/protocol.md §5.5): a flush hands the packer every record it
// sends, in order, and the packer puts them into datagrams of at most its
// size — a record that does not fit the current datagram starts the next —
// sealing each datagram once, in place, into a datagramBatch that the
// caller writes after releasing the session's lock. A v3 session gets one
// packet per datagram.

// datagramBatch holds sealed datagrams back to back with their destinations.
// A batch with deferSeal holds them begun (header written, sequence taken)
// but not yet encrypted: sealPending seals them, on the goroutine that
// writes the batch — the tick's batch is sealed by the tick writer, not
// on the game thread.
type datagramBatch struct {
	buf       []byte
	spans     []datagramSpan
	deferSeal bool
}

type datagramSpan struct {
	start, end int
	to         netip.AddrPort
	pending    seal.Deferred // a datagram of a deferSeal batch still to seal
}

// sealPending seals the datagrams of the batch that are still plaintext.
func (b *datagramBatch) sealPending() {
	for i := range b.spans {
		if sp := &b.spans[i]; sp.pending.Pending() {
			sp.pending.Seal(b.buf[sp.start : sp.end-seal.TagSize])
		}
	}
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

// packResult is what one pack produced.
type packResult struct {
	datagrams, bytes, messages int
	// err is seal.ErrKeyExhausted when the keys or the unreliable sequence
	// space ran out: the session must be re-established.
	err error
}

// packer turns records into sealed datagrams. Its interface is begin, add
// (any number of times; addFn is add bound once, for the reliability
// engine's emit callbacks), carrying and finish; between finish and the
// next begin it holds nothing of the batch. It is a part of a session's
// send queue and used under the session's lock.
type packer struct {
	sealer  *seal.Sealer
	size    int // v4: the largest datagram, in bytes
	version uint16
	unrel   uint32 // v4: Sequence of the next unreliable record

	// v3 packets carry a SenderID (the client's id from a client, 0 from
	// the server), a Timestamp on the session clock, and an unreliable
	// Sequence from the reliability engine's counter.
	senderID uint32
	origin   time.Time
	v3seq    func() uint32

	addFn func(h *wire.Header, payload []byte) // p.add, bound once

	// The pack in progress.
	b     *datagramBatch
	to    netip.AddrPort
	now   time.Time
	open  bool // a v4 datagram is being filled
	start int  // where its sealed frame starts in b.buf
	msgs  int  // records in it
	res   packResult
}

// packerConfig is what a packer is built from.
type packerConfig struct {
	sealer   *seal.Sealer
	size     int
	version  uint16
	senderID uint32
	origin   time.Time
	v3seq    func() uint32 // v3 only
}

// init sets up p in place (a session's send queue holds its packer).
func (p *packer) init(cfg packerConfig) {
	*p = packer{sealer: cfg.sealer, size: cfg.size, version: cfg.version, unrel: 1,
		senderID: cfg.senderID, origin: cfg.origin, v3seq: cfg.v3seq}
	p.addFn = p.add
}

// begin starts a pack of datagrams to to, appended to b, sealed at now.
func (p *packer) begin(b *datagramBatch, to netip.AddrPort, now time.Time) {
	p.b, p.to, p.now = b, to, now
	p.open, p.start, p.msgs, p.res = false, 0, 0, packResult{}
}

// add packs one message: a record of the current v4 datagram, or a v3
// packet in a datagram of its own. After an error it does nothing.
func (p *packer) add(h *wire.Header, payload []byte) {
	if p.res.err != nil {
		return
	}
	if p.version < handshake.ProtocolVersion4 {
		p.addPacketV3(h, payload)
		return
	}
	need := wire.RecordHeaderSize(h, len(payload)) + len(payload)
	if p.open && len(p.b.buf)-p.start+need+seal.TagSize > p.size {
		p.seal()
	}
	if !p.open {
		p.b.reserve(max(p.size, seal.Overhead+seal.IDSize+wire.MaxBodyHeader+need) + 16)
		p.start, p.open, p.msgs = len(p.b.buf), true, 0
		p.b.buf = wire.AppendDatagramBase(p.b.buf[:p.start+p.sealer.HeaderSize()], p.unrel)
	}
	if h.Channel == wire.Unreliable {
		seq, ok := p.nextUnreliable()
		if !ok {
			p.res.err = seal.ErrKeyExhausted // the session must be re-established
			return
		}
		h.Sequence = seq
	}
	p.b.buf = wire.AppendRecord(p.b.buf, h, payload)
	p.msgs++
}

// packed is how many bytes this pack has sealed so far, and the datagram
// being filled as it would be sealed.
func (p *packer) packed() int {
	n := p.res.bytes
	if p.open {
		n += len(p.b.buf) - p.start + seal.TagSize
	}
	return n
}

// carrying reports whether this pack sends anything so far: a datagram is
// open or one was sealed (v4 Acks ride along with such a pack).
func (p *packer) carrying() bool { return p.open || p.res.datagrams > 0 }

// finish seals the datagram being filled and ends the pack.
func (p *packer) finish() packResult {
	if p.open {
		p.seal()
	}
	res := p.res
	p.b, p.res = nil, packResult{}
	return res
}

// seal seals the v4 datagram being filled.
func (p *packer) seal() {
	p.open = false
	p.sealInPlace(p.start, p.msgs)
}

// sealInPlace seals the plaintext written at b.buf[start+h:] (h the
// sealer's header size: a migrating client's frames carry its id) into
// a frame starting at start, and records it for the write.
func (p *packer) sealInPlace(start, msgs int) {
	b := p.b
	var out []byte
	var later seal.Deferred
	var err error
	if end := len(b.buf) + seal.TagSize; b.deferSeal && end <= cap(b.buf) {
		// The header and the sequence now, under the session's lock; the
		// encryption when the batch is written (sealPending).
		_, later, err = p.sealer.Reserve(b.buf[:start], p.now)
		out = b.buf[:end]
	} else {
		out, err = p.sealer.Seal(b.buf[:start], b.buf[start+p.sealer.HeaderSize():], p.now)
	}
	if err != nil {
		p.res.err = err
		b.buf = b.buf[:start]
		return
	}
	b.buf = out
	b.spans = append(b.spans, datagramSpan{start: start, end: len(out), to: p.to, pending: later})
	p.res.datagrams++
	p.res.bytes += len(out) - start
	p.res.messages += msgs
}

// addPacketV3 seals one protocol v3 packet into a datagram of its own.
func (p *packer) addPacketV3(h *wire.Header, payload []byte) {
	h.SenderID = p.senderID
	if h.Channel == wire.Unreliable && h.Sequence == 0 {
		h.Sequence = p.v3seq()
	}
	h.Timestamp = float32(p.now.Sub(p.origin).Seconds())
	b := p.b
	start := len(b.buf)
	b.reserve(seal.Overhead + seal.IDSize + h.Size() + len(payload) + 16)
	b.buf = wire.AppendPacket(b.buf[:start+p.sealer.HeaderSize()], h, payload)
	p.sealInPlace(start, 1)
}

// nextUnreliable returns the Sequence of the next v4 unreliable record, or
// false once 2^32−1 have been used (the session must be re-established; at
// 1,000 a second that is 49 days).
func (p *packer) nextUnreliable() (uint32, bool) {
	if p.unrel == math.MaxUint32 {
		return 0, false
	}
	v := p.unrel
	p.unrel++
	return v, true
}

// takeUnreliable returns the next v4 unreliable Sequence for a record sealed
// outside a pack (a Disconnect, which ends the session).
func (p *packer) takeUnreliable() uint32 {
	v := p.unrel
	p.unrel++
	return v
}
