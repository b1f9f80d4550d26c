package wire

import "errors"

// The packed datagram of protocol v4 (docs/protocol.md §5): the plaintext of
// a sealed frame of a v4 session is not one §3 packet but a datagram body
// holding any number of records, each one message (or one fragment of a
// reliable message) with a compact header:
//
//	body   = unreliable_base (uvarint) ‖ record*
//	record = flags (u8) ‖ type (uvarint)
//	         ‖ [sequence (uvarint)]           channels Reliable, ReliableOrdered
//	         ‖ [ordered_sequence (uvarint)]   channel ReliableOrdered
//	         ‖ [frag_index, frag_count (u8)]  flag Fragment
//	         ‖ length (uvarint) ‖ payload
//
// flags: bits 0-1 the channel, bit 2 Fragment, bits 3-7 zero. Unreliable
// records carry no sequence on the wire: the k-th unreliable record of a
// datagram (from 0) has Sequence unreliable_base + k. A uvarint is unsigned
// LEB128 in its shortest form, at most 5 bytes, with a value below 2^32.
//
// Every length is checked against the bytes left before it is used; the
// parser never allocates, never panics, and reports every structural fault
// as one error matching ErrMalformedDatagram.

// Sizes and limits of the v4 data plane.
const (
	// DefaultDatagramSize is the default largest UDP payload a v4 sender
	// produces: the size of the v4 hello, which already had to cross the path.
	DefaultDatagramSize = 1200
	// MinDatagramSize is the smallest datagram size a sender may be
	// configured with (every v4 path carries a 1200-byte hello).
	MinDatagramSize = 1200
	// MaxFragments bounds the fragments of one message (frag_count).
	MaxFragments = 64
	// MaxRecordHeader is the largest record header: flags, a 3-byte type, two
	// 5-byte sequences, the two fragment bytes and a 3-byte length.
	MaxRecordHeader = 1 + 3 + 5 + 5 + 2 + 3
	// MaxBodyHeader is the largest datagram body header (unreliable_base).
	MaxBodyHeader = 5
	// SealOverhead is what a sealed frame adds to its plaintext (§4): class,
	// secure version, epoch, frame sequence and the 16-byte tag.
	SealOverhead = 1 + 1 + 1 + 8 + 16
)

// Record flag bits.
const (
	recordChannelMask byte = 0x03
	recordFragment    byte = 0x04
	recordReserved    byte = 0xF8
)

// ErrMalformedDatagram matches every structural fault of a packed datagram.
var ErrMalformedDatagram = errors.New("wire: malformed v4 datagram")

// datagramError is a structural fault with the rule it broke; the values are
// built once so that the per-datagram path allocates nothing.
type datagramError struct{ rule string }

func (e *datagramError) Error() string { return "wire: malformed v4 datagram: " + e.rule }

// Is makes errors.Is match ErrMalformedDatagram.
func (e *datagramError) Is(target error) bool { return target == ErrMalformedDatagram }

var (
	errVarint       = &datagramError{"truncated, overlong or out-of-range varint"}
	errRecordFlags  = &datagramError{"record flags: channel 3 or reserved bits set"}
	errRecordType   = &datagramError{"record type 0 or above 65535"}
	errRecordSeq    = &datagramError{"reliable record with sequence 0"}
	errRecordOrder  = &datagramError{"ordered record with ordered_sequence 0"}
	errFragChannel  = &datagramError{"fragment on the Unreliable channel"}
	errFragFields   = &datagramError{"frag_count outside 2..64, frag_index not below it, or sequence not above frag_index"}
	errRecordLength = &datagramError{"record length above MAX_PAYLOAD or beyond the datagram"}
	errFragEmpty    = &datagramError{"empty fragment"}
	errUnrelBase    = &datagramError{"unreliable records with base 0, or their sequences pass 2^32-1"}
)

// UvarintLen returns the encoded size of v as a uvarint (1..5).
func UvarintLen(v uint32) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	case v < 1<<28:
		return 4
	}
	return 5
}

// AppendUvarint appends the shortest LEB128 encoding of v.
func AppendUvarint(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// readUvarint decodes a shortest-form uvarint below 2^32 at b[off:]; it
// returns the value and the offset after it, or ok false.
func readUvarint(b []byte, off int) (v uint32, next int, ok bool) {
	var shift uint
	for i := 0; i < 5; i++ {
		if off >= len(b) {
			return 0, off, false
		}
		c := b[off]
		off++
		if i == 4 && c > 0x0F {
			return 0, off, false // above 2^32-1
		}
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, off, false // overlong: a trailing zero group
			}
			return v, off, true
		}
		shift += 7
	}
	return 0, off, false
}

// RecordHeaderSize returns the encoded size of the record header of h for a
// payload of n bytes.
func RecordHeaderSize(h *Header, n int) int {
	size := 1 + UvarintLen(uint32(h.Type)) + UvarintLen(uint32(n))
	if h.Channel.IsReliable() {
		size += UvarintLen(h.Sequence)
	}
	if h.Channel == ReliableOrdered {
		size += UvarintLen(h.OrderedSequence)
	}
	if h.FragCount != 0 {
		size += 2
	}
	return size
}

// AppendDatagramBase starts a datagram body: the unreliable_base.
func AppendDatagramBase(dst []byte, base uint32) []byte { return AppendUvarint(dst, base) }

// AppendRecord appends one record: h's Type, Channel, Sequence (reliable
// channels), OrderedSequence (ReliableOrdered) and, when h.FragCount is not
// 0, FragIndex and FragCount, then payload. An unreliable record's Sequence
// is implied by its place in the datagram and not written. It does not check
// the rules a receiver checks; the sender builds valid records.
func AppendRecord(dst []byte, h *Header, payload []byte) []byte {
	flags := byte(h.Channel) & recordChannelMask
	if h.FragCount != 0 {
		flags |= recordFragment
	}
	dst = append(dst, flags)
	dst = AppendUvarint(dst, uint32(h.Type))
	if h.Channel.IsReliable() {
		dst = AppendUvarint(dst, h.Sequence)
	}
	if h.Channel == ReliableOrdered {
		dst = AppendUvarint(dst, h.OrderedSequence)
	}
	if h.FragCount != 0 {
		dst = append(dst, h.FragIndex, h.FragCount)
	}
	dst = AppendUvarint(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// DatagramReader walks the records of a v4 datagram body. Use CheckDatagram
// first: Next assumes a body that passed it and stops at the first fault.
// The zero value is an empty body.
type DatagramReader struct {
	b    []byte
	off  int
	next uint32 // Sequence of the next unreliable record
}

// NewDatagramReader returns a reader over body, positioned after its header.
// The reader aliases body.
func NewDatagramReader(body []byte) DatagramReader {
	base, off, ok := readUvarint(body, 0)
	if !ok {
		return DatagramReader{}
	}
	return DatagramReader{b: body, off: off, next: base}
}

// Next decodes the next record into h (Type, Channel, Sequence,
// OrderedSequence, FragIndex, FragCount; SenderID and Timestamp are zero)
// and returns its payload, which aliases the body. ok is false at the end of
// the body or at a structural fault.
func (r *DatagramReader) Next(h *Header) (payload []byte, ok bool) {
	if r.off >= len(r.b) {
		return nil, false
	}
	payload, next, err := parseRecord(r.b, r.off, h)
	if err != nil {
		r.off = len(r.b)
		return nil, false
	}
	r.off = next
	if h.Channel == Unreliable {
		h.Sequence = r.next
		r.next++
	}
	return payload, true
}

// CheckDatagram applies every structural rule of §5.2 to a datagram body and
// returns the number of records, or an error matching ErrMalformedDatagram.
// A body with no record is valid. It allocates nothing.
func CheckDatagram(body []byte) (records int, err error) {
	base, off, ok := readUvarint(body, 0)
	if !ok {
		return 0, errVarint
	}
	var h Header
	var unreliable uint64
	for off < len(body) {
		if _, off, err = parseRecord(body, off, &h); err != nil {
			return records, err
		}
		records++
		if h.Channel == Unreliable {
			unreliable++
		}
	}
	if unreliable > 0 && (base == 0 || uint64(base)+unreliable-1 > 1<<32-1) {
		return records, errUnrelBase
	}
	return records, nil
}

// parseRecord decodes the record at b[off:] into h and returns its payload
// and the offset after it.
func parseRecord(b []byte, off int, h *Header) (payload []byte, next int, err error) {
	*h = Header{}
	if off >= len(b) {
		return nil, off, errVarint
	}
	flags := b[off]
	off++
	if flags&recordReserved != 0 || flags&recordChannelMask > byte(ReliableOrdered) {
		return nil, off, errRecordFlags
	}
	h.Channel = Channel(flags & recordChannelMask)
	t, off, ok := readUvarint(b, off)
	switch {
	case !ok:
		return nil, off, errVarint
	case t == 0 || t > 0xFFFF:
		return nil, off, errRecordType
	}
	h.Type = MessageType(t)
	if h.Channel.IsReliable() {
		if h.Sequence, off, ok = readUvarint(b, off); !ok {
			return nil, off, errVarint
		}
		if h.Sequence == 0 {
			return nil, off, errRecordSeq
		}
	}
	if h.Channel == ReliableOrdered {
		if h.OrderedSequence, off, ok = readUvarint(b, off); !ok {
			return nil, off, errVarint
		}
		if h.OrderedSequence == 0 {
			return nil, off, errRecordOrder
		}
	}
	if flags&recordFragment != 0 {
		if h.Channel == Unreliable {
			return nil, off, errFragChannel
		}
		if len(b)-off < 2 {
			return nil, off, errVarint
		}
		h.FragIndex, h.FragCount = b[off], b[off+1]
		off += 2
		if h.FragCount < 2 || h.FragCount > MaxFragments || h.FragIndex >= h.FragCount || h.Sequence <= uint32(h.FragIndex) {
			return nil, off, errFragFields
		}
	}
	n, off, ok := readUvarint(b, off)
	switch {
	case !ok:
		return nil, off, errVarint
	case n > MaxPayload || uint64(n) > uint64(len(b)-off):
		return nil, off, errRecordLength
	case n == 0 && h.FragCount != 0:
		return nil, off, errFragEmpty
	}
	end := off + int(n)
	return b[off:end:end], end, nil
}

// MaxUnreliablePayload returns the largest payload of type t that fits one
// datagram of datagramSize bytes on the Unreliable channel (an unreliable
// message is never fragmented): what is left after the sealed framing, the
// largest body header and the record header.
func MaxUnreliablePayload(datagramSize int, t MessageType) int {
	room := datagramSize - SealOverhead - MaxBodyHeader - 1 - UvarintLen(uint32(t))
	// The length varint grows with the payload: take the largest n whose
	// record still fits.
	for n := room - 1; n > 0; n-- {
		if n+UvarintLen(uint32(n)) <= room {
			return min(n, MaxPayload)
		}
	}
	return 0
}

// MaxFragmentPayload returns the payload bytes a sender puts in each
// fragment (but the last) for datagrams of datagramSize bytes: what is left
// after the sealed framing, the largest body header and the largest record
// header. A reliable message longer than it is fragmented.
func MaxFragmentPayload(datagramSize int) int {
	return datagramSize - SealOverhead - MaxBodyHeader - MaxRecordHeader
}
