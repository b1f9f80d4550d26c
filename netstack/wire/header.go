package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// Protocol constants of protocol-v3.md §1 and §3.
const (
	// Magic opens every packet: bytes 4B 52 50 53 ("KRPS" little-endian u32).
	Magic uint32 = 0x5350524B
	// ProtocolVersion is the protocol version this package speaks.
	ProtocolVersion uint16 = 3
	// HeaderSize is the packet header size for channels 0 and 1.
	HeaderSize = 23
	// OrderedHeaderSize is the header size for channel 2 (adds OrderedSequence).
	OrderedHeaderSize = 27
	// MaxPayload is the largest payload a packet may carry (MAX_PAYLOAD).
	MaxPayload = 65453
	// MaxDatagram is the largest datagram the protocol produces (§3): the largest
	// IPv4 UDP payload. Receive buffers are this size.
	MaxDatagram = 65507
)

// Channel selects the delivery guarantees of a packet.
type Channel uint8

// The three channels of §3.
const (
	Unreliable      Channel = 0
	Reliable        Channel = 1
	ReliableOrdered Channel = 2
)

// String names the channel as the spec does.
func (c Channel) String() string {
	switch c {
	case Unreliable:
		return "Unreliable"
	case Reliable:
		return "Reliable"
	case ReliableOrdered:
		return "ReliableOrdered"
	}
	return "Channel(?)"
}

// IsReliable reports whether packets on c carry a reliability sequence and are acked.
func (c Channel) IsReliable() bool { return c == Reliable || c == ReliableOrdered }

// Header is the decoded packet header of §3. PayloadLength is implied by the
// payload slice when encoding.
type Header struct {
	Type            MessageType
	Channel         Channel
	SenderID        uint32
	Sequence        uint32
	Timestamp       float32
	OrderedSequence uint32 // only on the wire when Channel == ReliableOrdered
	// FragIndex and FragCount describe a fragment of a reliable message in a
	// v4 datagram (§5.3): FragCount 0 is a whole message. Protocol v3
	// packets never carry them.
	FragIndex, FragCount uint8
}

// Size returns the encoded header size for h's channel.
func (h *Header) Size() int {
	if h.Channel == ReliableOrdered {
		return OrderedHeaderSize
	}
	return HeaderSize
}

// Errors returned by ParsePacket. All of them mean "drop, count malformedDropped".
var (
	ErrShortPacket    = errors.New("wire: packet shorter than its header")
	ErrBadMagic       = errors.New("wire: bad packet magic")
	ErrBadChannel     = errors.New("wire: channel out of range")
	ErrPayloadTooLong = errors.New("wire: payload length above MAX_PAYLOAD")
	ErrLengthMismatch = errors.New("wire: payload length differs from bytes that follow")
)

// AppendPacket appends the header h followed by payload to dst and returns the
// extended slice. PayloadLength is len(payload). It does not check payload size;
// callers validate against the schema before sending.
func AppendPacket(dst []byte, h *Header, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, Magic)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(h.Type))
	dst = append(dst, byte(h.Channel))
	dst = binary.LittleEndian.AppendUint32(dst, h.SenderID)
	dst = binary.LittleEndian.AppendUint32(dst, h.Sequence)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(h.Timestamp))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	if h.Channel == ReliableOrdered {
		dst = binary.LittleEndian.AppendUint32(dst, h.OrderedSequence)
	}
	return append(dst, payload...)
}

// ParsePacket decodes the header of packet b and returns it with the payload,
// which aliases b. It applies only the structural checks of §3 (length, magic,
// channel, MAX_PAYLOAD, exact length); type, direction and schema checks belong
// to the Registry.
func ParsePacket(b []byte) (Header, []byte, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, nil, ErrShortPacket
	}
	if binary.LittleEndian.Uint32(b) != Magic {
		return h, nil, ErrBadMagic
	}
	h.Type = MessageType(binary.LittleEndian.Uint16(b[4:]))
	h.Channel = Channel(b[6])
	if h.Channel > ReliableOrdered {
		return h, nil, ErrBadChannel
	}
	h.SenderID = binary.LittleEndian.Uint32(b[7:])
	h.Sequence = binary.LittleEndian.Uint32(b[11:])
	h.Timestamp = math.Float32frombits(binary.LittleEndian.Uint32(b[15:]))
	n := binary.LittleEndian.Uint32(b[19:])
	off := HeaderSize
	if h.Channel == ReliableOrdered {
		if len(b) < OrderedHeaderSize {
			return h, nil, ErrShortPacket
		}
		h.OrderedSequence = binary.LittleEndian.Uint32(b[23:])
		off = OrderedHeaderSize
	}
	if n > MaxPayload {
		return h, nil, ErrPayloadTooLong
	}
	if uint64(n) != uint64(len(b)-off) {
		return h, nil, ErrLengthMismatch
	}
	return h, b[off:], nil
}
