package wire

// MessageRefused (type 20, protocol v4, docs/protocol.md §5.6): a receiver
// that drops an authenticated message it cannot accept (unknown type, wrong
// direction or channel, bad size, malformed payload, a module that is not
// loaded, an unfinished fragmented message) acknowledges it if it was
// reliable and tells the sender with this small unreliable notice. Notices
// are rate-limited; the ones not sent are counted in Suppressed of the next.
// A notice is never answered with a notice.

// TypeMessageRefused is the notice of a refused message (Unreliable, both
// directions, 12 bytes, v4 sessions only).
const TypeMessageRefused MessageType = 20

// MessageRefusedSize is the exact size of a MessageRefused payload.
const MessageRefusedSize = 12

// RefusalReason says why a receiver refused a message (MessageRefused.reason).
type RefusalReason uint8

// Refusal reasons of §5.6. A receiver of a notice accepts any reason byte.
const (
	RefusedUnknownType  RefusalReason = 1 // neither built in nor registered
	RefusedNotLoaded    RefusalReason = 2 // a module's type, and the module is not loaded now (restarting, reloading, unloaded)
	RefusedDirection    RefusalReason = 3 // the type may not travel this way
	RefusedChannel      RefusalReason = 4 // the type travels on another channel
	RefusedSize         RefusalReason = 5 // payload size outside the type's rule
	RefusedMalformed    RefusalReason = 6 // payload fails its schema
	RefusedIncomplete   RefusalReason = 7 // a fragmented message whose reassembly timed out or broke its rules
	RefusedInconsistent RefusalReason = 8 // fragments of one message disagree (type, channel, count, ordered sequence)

	refusalReasonsLimit RefusalReason = 9
)

var refusalNames = [...]string{"", "UnknownType", "NotLoaded", "WrongDirection", "WrongChannel",
	"BadSize", "Malformed", "Incomplete", "Inconsistent"}

// String names r as §5.6 does.
func (r RefusalReason) String() string { return enumName(refusalNames[:], uint8(r), "RefusalReason") }

// RefusalReasons lists the defined reasons in code order (for counters).
func RefusalReasons() []RefusalReason {
	out := make([]RefusalReason, 0, refusalReasonsLimit-1)
	for r := RefusedUnknownType; r < refusalReasonsLimit; r++ {
		out = append(out, r)
	}
	return out
}

// RefusalOf maps a Registry.Validate error to its refusal reason.
func RefusalOf(err error) RefusalReason {
	switch err {
	case ErrUnknownType:
		return RefusedUnknownType
	case ErrTypeNotLoaded, ErrTypeFailed:
		return RefusedNotLoaded
	case ErrWrongDirection:
		return RefusedDirection
	case ErrWrongChannel:
		return RefusedChannel
	case ErrBadSize:
		return RefusedSize
	}
	return RefusedMalformed
}

// MessageRefused is the payload of a MessageRefused notice.
type MessageRefused struct {
	Type    MessageType // the refused message's type
	Channel Channel     // the channel it came on
	Reason  RefusalReason
	// Sequence is its reliability sequence (the first fragment's, for a
	// fragmented message); 0 for an unreliable message.
	Sequence uint32
	// Suppressed counts the refusals of this session not reported since the
	// previous notice (the notice rate limit).
	Suppressed uint32
}

// AppendMessageRefused appends the 12-byte encoding of m.
func AppendMessageRefused(dst []byte, m *MessageRefused) []byte {
	w := Writer{b: dst}
	w.U16(uint16(m.Type))
	w.U8(uint8(m.Channel))
	w.U8(uint8(m.Reason))
	w.U32(m.Sequence)
	w.U32(m.Suppressed)
	return w.b
}

// ParseMessageRefused parses a MessageRefused payload: exactly 12 bytes,
// channel 0..2; any reason byte.
func ParseMessageRefused(p []byte) (MessageRefused, error) {
	r := NewReader(p)
	m := MessageRefused{Type: MessageType(r.U16()), Channel: Channel(r.U8()), Reason: RefusalReason(r.U8()),
		Sequence: r.U32(), Suppressed: r.U32()}
	if m.Channel > ReliableOrdered {
		r.Fail(errOutOfRange)
	}
	if err := finish(&r); err != nil {
		return MessageRefused{}, err
	}
	return m, nil
}
