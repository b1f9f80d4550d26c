package v3strict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Constants of the contract's §1 and §3.
const (
	// Magic starts every packet (bytes 4B 52 50 53).
	Magic uint32 = 0x5350524B
	// ProtocolVersion is the version this client speaks.
	ProtocolVersion uint16 = 3
	// MaxPayload is MAX_PAYLOAD: the largest payload of one packet.
	MaxPayload = 65453
	// HeaderSize is the packet header without OrderedSequence.
	HeaderSize = 23
	// OrderedHeaderSize is the header of a ReliableOrdered packet.
	OrderedHeaderSize = 27
)

// Channel is a packet's channel (§3).
type Channel uint8

// The three channels.
const (
	Unreliable      Channel = 0
	Reliable        Channel = 1
	ReliableOrdered Channel = 2
)

// String names the channel.
func (c Channel) String() string {
	switch c {
	case Unreliable:
		return "Unreliable"
	case Reliable:
		return "Reliable"
	case ReliableOrdered:
		return "ReliableOrdered"
	}
	return fmt.Sprintf("Channel(%d)", uint8(c))
}

// Header is a packet header (§3). Ordered is present on the wire only on
// ReliableOrdered.
type Header struct {
	Type      uint16
	Channel   Channel
	SenderID  uint32
	Sequence  uint32
	Timestamp float32
	Ordered   uint32
}

// ErrMalformedPacket is returned by ParsePacket for a packet §3 drops.
var ErrMalformedPacket = errors.New("v3strict: malformed packet")

// AppendPacket appends the packet of h and payload to dst.
func AppendPacket(dst []byte, h Header, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint16(dst, h.Type)
	dst = append(dst, byte(h.Channel))
	dst = binary.LittleEndian.AppendUint32(dst, h.SenderID)
	dst = binary.LittleEndian.AppendUint32(dst, h.Sequence)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(h.Timestamp))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	if h.Channel == ReliableOrdered {
		dst = binary.LittleEndian.AppendUint32(dst, h.Ordered)
	}
	return append(dst, payload...)
}

// ParsePacket parses one packet, checking §3's structural rules: the
// length, the magic, the channel, MAX_PAYLOAD and that PayloadLength is
// exactly the bytes that follow. The payload aliases b.
func ParsePacket(b []byte) (Header, []byte, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrMalformedPacket, len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != Magic {
		return h, nil, fmt.Errorf("%w: magic %#08x", ErrMalformedPacket, m)
	}
	h.Type = binary.LittleEndian.Uint16(b[4:])
	h.Channel = Channel(b[6])
	h.SenderID = binary.LittleEndian.Uint32(b[7:])
	h.Sequence = binary.LittleEndian.Uint32(b[11:])
	h.Timestamp = math.Float32frombits(binary.LittleEndian.Uint32(b[15:]))
	n := binary.LittleEndian.Uint32(b[19:])
	off := HeaderSize
	switch {
	case h.Channel > ReliableOrdered:
		return h, nil, fmt.Errorf("%w: channel %d", ErrMalformedPacket, h.Channel)
	case h.Channel == ReliableOrdered:
		if len(b) < OrderedHeaderSize {
			return h, nil, fmt.Errorf("%w: %d bytes, shorter than an ordered header", ErrMalformedPacket, len(b))
		}
		h.Ordered = binary.LittleEndian.Uint32(b[23:])
		off = OrderedHeaderSize
	}
	switch {
	case n > MaxPayload:
		return h, nil, fmt.Errorf("%w: payload length %d above MAX_PAYLOAD", ErrMalformedPacket, n)
	case uint64(n) != uint64(len(b)-off):
		return h, nil, fmt.Errorf("%w: payload length %d, %d bytes follow", ErrMalformedPacket, n, len(b)-off)
	}
	return h, b[off:], nil
}
