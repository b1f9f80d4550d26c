package reliable

import (
	"encoding/binary"
	"errors"
)

// Ack is the payload of message type 6 (§7): reliability sequence Ack was
// received, bit i of Bits set means Ack−1−i was received, and DelayMS is the
// time in milliseconds between receiving Ack and sending this Ack.
//
// The wire package will own the canonical Ack payload; this copy keeps the
// engine independent of it until the two are unified.
type Ack struct {
	Ack     uint32
	Bits    uint32
	DelayMS uint16
}

// AckSize is the exact size of an Ack payload.
const AckSize = 10

// ErrBadAck is returned by ParseAck for a payload that is not exactly 10 bytes.
var ErrBadAck = errors.New("reliable: Ack payload is not 10 bytes")

// AppendAck appends the 10-byte encoding of a to dst.
func AppendAck(dst []byte, a Ack) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, a.Ack)
	dst = binary.LittleEndian.AppendUint32(dst, a.Bits)
	return binary.LittleEndian.AppendUint16(dst, a.DelayMS)
}

// ParseAck decodes an Ack payload.
func ParseAck(p []byte) (Ack, error) {
	if len(p) != AckSize {
		return Ack{}, ErrBadAck
	}
	return Ack{
		Ack:     binary.LittleEndian.Uint32(p),
		Bits:    binary.LittleEndian.Uint32(p[4:]),
		DelayMS: binary.LittleEndian.Uint16(p[8:]),
	}, nil
}
