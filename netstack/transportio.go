package netstack

import (
	"net"
	"net/netip"

	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// givenTransport returns the transport a config gives — tr, or conn wrapped
// — or nil when it gives neither (the caller opens a UDP socket, and owns
// it). What a config gives is never closed by netstack.
func givenTransport(tr transport.Transport, conn net.PacketConn) transport.Transport {
	switch {
	case tr != nil:
		return tr
	case conn != nil:
		return transport.FromPacketConn(conn)
	}
	return nil
}

// writeOne sends one datagram through tr using out, a one-message scratch
// owned by the calling goroutine, so that the rare single writes (handshake
// answers) allocate nothing.
func writeOne(tr transport.Transport, out []transport.Message, b []byte, to netip.AddrPort) error {
	out[0] = transport.Message{Buf: b, N: len(b), Addr: to}
	_, err := tr.WriteBatch(out[:1])
	out[0] = transport.Message{}
	return err
}

// readSlots returns n read slots of the largest datagram the protocol
// produces, plus one byte so that a longer one shows as too long.
func readSlots(n int) []transport.Message {
	msgs := make([]transport.Message, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, wire.MaxDatagram+1)
	}
	return msgs
}

// flusher is one goroutine's batch of sealed datagrams and its batched
// writer: the game thread's Flush, a receive loop and a service loop each
// own one, so that they pack and write concurrently without sharing buffers.
type flusher struct {
	b    datagramBatch
	tr   transport.Transport
	msgs []transport.Message

	// A tick flusher's: the sessions a tick's flush looked at, and whether
	// the tick writer is to pack it first (QueueFlush).
	peers []*peer
	pack  bool
}

func newFlusher(tr transport.Transport) *flusher { return &flusher{tr: tr} }

// write sends every datagram of the batch and empties it. A datagram the
// system refuses is lost like one lost on the path (the protocol recovers).
func (f *flusher) write() {
	if len(f.b.spans) == 0 {
		return
	}
	f.b.sealPending()
	f.msgs = f.msgs[:0]
	for _, sp := range f.b.spans {
		f.msgs = append(f.msgs, transport.Message{Buf: f.b.buf[sp.start:sp.end], N: sp.end - sp.start, Addr: sp.to})
	}
	_, _ = f.tr.WriteBatch(f.msgs)
	clear(f.msgs)
	f.b.reset()
}
