package wire

// Control and chat payloads of §4, §5.4, §5.6 and §8.
//
// Conventions for every message of this package:
//   - AppendXxx encodes m as given and appends it to dst. It does not enforce the
//     spec's limits: a sender checks its payload with Registry.Validate (which
//     allocates nothing) or ParseXxx before sending, so the receiver's rules are
//     written once.
//   - ParseXxx parses p completely (trailing bytes are malformed), screens every
//     str per §1 and returns an error matching ErrMalformedPayload on any
//     failure, with the zero value. Results never alias p: the receive buffer is
//     reused for the next datagram.
//   - scanXxx is the allocation-free structural check used by Registry.Validate;
//     ParseXxx builds on it, so both apply the same rules.

// ConnectRejected is the payload of ConnectRejected (type 3, plain frame only,
// §5.6): why the server refused a Connect.
type ConnectRejected struct {
	Reason        uint8  // a RejectReason; other codes parse (see ParseConnectRejected)
	ServerVersion uint16 // 3
	Detail        string // ≤ 256 bytes of UTF-8 without NUL
}

// AppendConnectRejected appends the encoding of m (5..261 bytes) to dst.
func AppendConnectRejected(dst []byte, m *ConnectRejected) []byte {
	w := Writer{b: dst}
	w.U8(m.Reason)
	w.U16(m.ServerVersion)
	w.Str(m.Detail)
	return w.b
}

// ParseConnectRejected parses a ConnectRejected payload. Any reason byte is
// accepted: a client that does not know the code still learns it was refused.
func ParseConnectRejected(p []byte) (ConnectRejected, error) {
	r := NewReader(p)
	m := ConnectRejected{Reason: r.U8(), ServerVersion: r.U16()}
	detail := readStr(&r, MaxDetailLen)
	if err := finish(&r); err != nil {
		return ConnectRejected{}, err
	}
	m.Detail = string(detail)
	return m, nil
}

// Disconnect is the payload of Disconnect (type 4, §8): the sender closes the
// connection for Reason.
type Disconnect struct {
	Reason uint8  // a DisconnectReason; other codes parse (see ParseDisconnect)
	Detail string // ≤ 256 bytes of UTF-8 without NUL
}

// AppendDisconnect appends the encoding of m (3..259 bytes) to dst.
func AppendDisconnect(dst []byte, m *Disconnect) []byte {
	w := Writer{b: dst}
	w.U8(m.Reason)
	w.Str(m.Detail)
	return w.b
}

// ParseDisconnect parses a Disconnect payload. Any reason byte is accepted,
// because the receiver must close at once (§8) whatever the code; an unknown
// code reads as Unknown to a caller that switches on DisconnectReason.
func ParseDisconnect(p []byte) (Disconnect, error) {
	detail, err := scanDisconnect(p)
	if err != nil {
		return Disconnect{}, err
	}
	return Disconnect{Reason: p[0], Detail: string(detail)}, nil
}

func scanDisconnect(p []byte) (detail []byte, err error) {
	r := NewReader(p)
	r.U8()
	detail = readStr(&r, MaxDetailLen)
	return detail, finish(&r)
}

// Heartbeat is the payload of Heartbeat (type 5, §8). A probe has a fresh
// nonzero Token and Echo 0; its answer has Token 0 and Echo = the probe's token.
type Heartbeat struct {
	Token uint32
	Echo  uint32
}

// AppendHeartbeat appends the 8-byte encoding of m to dst.
func AppendHeartbeat(dst []byte, m *Heartbeat) []byte {
	w := Writer{b: dst}
	w.U32(m.Token)
	w.U32(m.Echo)
	return w.b
}

// ParseHeartbeat parses a Heartbeat payload (exactly 8 bytes).
func ParseHeartbeat(p []byte) (Heartbeat, error) {
	r := NewReader(p)
	m := Heartbeat{Token: r.U32(), Echo: r.U32()}
	if err := finish(&r); err != nil {
		return Heartbeat{}, err
	}
	return m, nil
}

// Ack is the payload of Ack (type 6, §7): reliability sequence Ack was
// received, and bit i of Bits set means Ack−1−i was received.
type Ack struct {
	Ack     uint32
	Bits    uint32
	DelayMS uint16 // ms between receiving Ack and sending this message
}

// Acknowledges reports whether a says reliability sequence seq was received.
// Sequences are plain integers here (they start at 1 and a connection never
// sends 2^32 reliable packets), so nothing above Ack or below Ack−32 is acked.
func (a Ack) Acknowledges(seq uint32) bool {
	if seq > a.Ack {
		return false
	}
	if seq == a.Ack {
		return true
	}
	d := a.Ack - seq - 1 // 0 for Ack−1
	return d < 32 && a.Bits>>d&1 == 1
}

// AppendAck appends the 10-byte encoding of m to dst.
func AppendAck(dst []byte, m *Ack) []byte {
	w := Writer{b: dst}
	w.U32(m.Ack)
	w.U32(m.Bits)
	w.U16(m.DelayMS)
	return w.b
}

// ParseAck parses an Ack payload (exactly 10 bytes).
func ParseAck(p []byte) (Ack, error) {
	r := NewReader(p)
	m := Ack{Ack: r.U32(), Bits: r.U32(), DelayMS: r.U16()}
	if err := finish(&r); err != nil {
		return Ack{}, err
	}
	return m, nil
}

// ClientFinished is the payload of the client's first sealed packet (type 1,
// channel Reliable, Sequence 1, §5.4) that completes the handshake.
type ClientFinished struct {
	Name   string // the player name: valid per ValidName(…, 32)
	Ticket []byte // admission ticket, ≤ 256 bytes, opaque to the transport (docs/protocol.md §3.13)
	// Resume, when not nil, is the resume extension (docs/protocol.md
	// §3.15): sent only by a client resuming a seat of the server that
	// issued the ticket.
	Resume *ResumeExtension
}

// AppendClientFinished appends the encoding of m (4..324 bytes) to dst.
func AppendClientFinished(dst []byte, m *ClientFinished) []byte {
	w := Writer{b: dst}
	w.Str(m.Name)
	w.U16(uint16(len(m.Ticket)))
	w.Raw(m.Ticket)
	if m.Resume != nil {
		w.b = appendResumeExtension(w.b, m.Resume)
	}
	return w.b
}

// ParseClientFinished parses a ClientFinished payload. A payload that does not
// parse (name field over 64 bytes, ticket over 256, truncated, trailing bytes)
// returns an error matching ErrMalformedPayload: drop it. One that parses but
// whose name breaks the rule of §5.4 returns exactly ErrNameInvalid: answer
// Disconnect(NameInvalid).
func ParseClientFinished(p []byte) (ClientFinished, error) {
	name, ticket, ext, err := scanClientFinishedExt(p)
	if err != nil {
		return ClientFinished{}, err
	}
	if !ValidName(name, MaxNameLen) {
		return ClientFinished{}, ErrNameInvalid
	}
	return ClientFinished{Name: string(name), Ticket: cloneBytes(ticket), Resume: ext}, nil
}

// scanClientFinished checks the structure only; the name is screened by the
// caller because a bad name has its own answer.
func scanClientFinished(p []byte) (name, ticket []byte, err error) {
	name, ticket, _, err = scanClientFinishedExt(p)
	return name, ticket, err
}

// scanClientFinishedExt is scanClientFinished with the resume extension
// (§3.15) parsed when present.
func scanClientFinishedExt(p []byte) (name, ticket []byte, ext *ResumeExtension, err error) {
	r := NewReader(p)
	name = r.StrBytes()
	if len(name) > MaxNameFieldLen {
		r.Fail(errStringLong)
	}
	n := int(r.U16())
	if n > MaxTicketLen {
		r.Fail(errTicketLong)
	}
	ticket = r.Bytes(n)
	if r.Remaining() > 0 && !r.HasError() {
		ext = readResumeExtension(&r)
	}
	if err = finish(&r); err != nil {
		return nil, nil, nil, err
	}
	return name, ticket, ext, nil
}
