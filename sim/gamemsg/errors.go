package gamemsg

import "github.com/sparkhost/sparkhost/netstack/wire"

// The rules a game payload can break. Each matches wire.ErrMalformedPayload
// with errors.Is (every one means "drop, count malformedDropped"); they are
// built once so the receive path reports a precise cause without allocating.
var (
	errTruncated     = wire.Malformed("payload ends inside a field", wire.ErrOverrun)
	errBadName       = wire.ErrNameRule
	errBadText       = wire.Malformed("chat text is empty, over 256 bytes, not UTF-8 or has a control character", nil)
	errSenderSet     = wire.Malformed("a client's ChatMessage carries a non-empty sender", nil)
	errOutOfRange    = wire.Malformed("value outside its range", nil)
	errUnknownEnum   = wire.Malformed("enumeration value not defined by the protocol", nil)
	errReservedBits  = wire.Malformed("reserved bits set", nil)
	errZeroRate      = wire.Malformed("tick or replication rate is 0", nil)
	errTooManyFields = wire.Malformed("entity type has more than 64 fields", nil)
	errFieldCount    = wire.Malformed("field_count differs from popcount(fields_mask)", nil)
	errBeyondSchema  = wire.Malformed("mask has bits beyond the type's field count", nil)
	errTypeMismatch  = wire.Malformed("type_id differs from the schema's", nil)
	errScoreCount    = wire.Malformed("ScoreUpdate length is not 2 + 16·n", nil)
)

// clone copies b so a parsed message never aliases the receive buffer, which
// the caller reuses for the next datagram. Empty stays nil.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
