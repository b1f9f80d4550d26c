package wire

// Resumption (docs/protocol.md §3.15): the messages that carry resume
// tickets and the ClientFinished extension that presents one.

// Message types and Disconnect reasons of resumption (protocol v4 only).
const (
	// TypeResumeTicket carries a ticket to a client that asked for one
	// (ServerToClient, Reliable).
	TypeResumeTicket MessageType = 25
	// TypeResumeRequest asks the server for resume tickets (ClientToServer,
	// Reliable, exactly 1 byte).
	TypeResumeRequest MessageType = 26

	// DisconnectResumeExpired refuses a resumption whose ticket expired or
	// whose seat is no longer held.
	DisconnectResumeExpired DisconnectReason = 14
	// DisconnectResumeInvalid refuses a resumption whose ticket or proof
	// does not verify, names another server or name, or was used already.
	DisconnectResumeInvalid DisconnectReason = 15
)

// Sizes of resumption's fields.
const (
	// ResumeVersion is the version byte of ResumeRequest, ResumeTicket and
	// the resume extension.
	ResumeVersion = 1
	// ResumeRequestSize is ResumeRequest's exact length.
	ResumeRequestSize = 1
	// MaxResumeTicketLen bounds a resume ticket.
	MaxResumeTicketLen = 200
	// ResumeProofSize is the length of the resume proof (HMAC-SHA256).
	ResumeProofSize = 32
	// MaxResumeExtensionLen is the longest resume extension.
	MaxResumeExtensionLen = 2 + MaxResumeTicketLen + ResumeProofSize
	// MaxHoldSeconds bounds ResumeTicket's hold_seconds.
	MaxHoldSeconds  = 3600
	resumeTicketMin = 8
)

var (
	errResumeVersion = &payloadError{"resume version is not 1", nil}
	errResumeTicket  = &payloadError{"resume ticket length outside 1..200", nil}
	errResumeHold    = &payloadError{"hold_seconds and the ticket disagree or exceed 3600", nil}
)

// ResumeTicket is the payload of TypeResumeTicket.
type ResumeTicket struct {
	HoldSeconds uint16 // 0: the server holds no seats
	Lifetime    uint32 // seconds from receipt the ticket may be presented
	Ticket      []byte // opaque, 0..200 bytes (0 exactly when HoldSeconds is 0)
}

// AppendResumeTicket appends the encoding of m (8..208 bytes).
func AppendResumeTicket(dst []byte, m *ResumeTicket) []byte {
	w := Writer{b: dst}
	w.U8(ResumeVersion)
	w.U16(m.HoldSeconds)
	w.U32(m.Lifetime)
	w.U8(uint8(len(m.Ticket)))
	w.Raw(m.Ticket)
	return w.b
}

// ParseResumeTicket parses a ResumeTicket; the ticket is copied.
func ParseResumeTicket(p []byte) (ResumeTicket, error) {
	r := NewReader(p)
	if r.U8() != ResumeVersion && !r.HasError() {
		r.Fail(errResumeVersion)
	}
	m := ResumeTicket{HoldSeconds: r.U16(), Lifetime: r.U32()}
	n := int(r.U8())
	switch {
	case n > MaxResumeTicketLen:
		r.Fail(errResumeTicket)
	case r.HasError():
	case m.HoldSeconds > MaxHoldSeconds, (m.HoldSeconds == 0) != (n == 0), m.HoldSeconds == 0 && m.Lifetime != 0:
		r.Fail(errResumeHold)
	}
	t := r.Bytes(n)
	if err := finish(&r); err != nil {
		return ResumeTicket{}, err
	}
	m.Ticket = cloneBytes(t)
	return m, nil
}

// AppendResumeRequest appends ResumeRequest's payload.
func AppendResumeRequest(dst []byte) []byte { return append(dst, ResumeVersion) }

// CheckResumeRequest validates a ResumeRequest payload.
func CheckResumeRequest(p []byte) error {
	if len(p) != ResumeRequestSize {
		return errTruncated
	}
	if p[0] != ResumeVersion {
		return errResumeVersion
	}
	return nil
}

// ResumeExtension is ClientFinished's resume extension: the ticket of the
// seat being resumed and the proof of the old session's resume key over
// this handshake's th.
type ResumeExtension struct {
	Ticket []byte
	Proof  [ResumeProofSize]byte
}

func appendResumeExtension(dst []byte, e *ResumeExtension) []byte {
	dst = append(dst, ResumeVersion, uint8(len(e.Ticket)))
	dst = append(dst, e.Ticket...)
	return append(dst, e.Proof[:]...)
}

// readResumeExtension reads the extension that follows ClientFinished's
// ticket field; errors latch in r.
func readResumeExtension(r *Reader) *ResumeExtension {
	if r.U8() != ResumeVersion && !r.HasError() {
		r.Fail(errResumeVersion)
	}
	n := int(r.U8())
	if (n == 0 || n > MaxResumeTicketLen) && !r.HasError() {
		r.Fail(errResumeTicket)
	}
	t := r.Bytes(n)
	proof := r.Bytes(ResumeProofSize)
	if r.HasError() {
		return nil
	}
	e := &ResumeExtension{Ticket: cloneBytes(t)}
	copy(e.Proof[:], proof)
	return e
}
