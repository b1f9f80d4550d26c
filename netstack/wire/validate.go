package wire

import "encoding/binary"

// Validate applies the receive rules of §3, §4 and §10 to a packet that
// arrived in a sealed frame and passed ParsePacket: the type is built in or
// registered (ErrUnknownType), may travel in direction travel
// (ErrWrongDirection; travel is ClientToServer when the server receives,
// ServerToClient when a client does), uses the type's channel
// (ErrWrongChannel), has a payload size within the type's rule (ErrBadSize),
// and the payload passes its schema (an error matching ErrMalformedPayload).
//
// Built-in payloads are checked by their structural parser. A ClientFinished
// whose structure parses is valid here even when its name breaks the name
// rule: the server answers that with Disconnect(NameInvalid) after
// ParseClientFinished. ConnectAccepted and ConnectRejected travel only in plain
// frames, so sealed they are malformed. EntitySpawn and EntityStateUpdate get
// the structural checks; their fields need the type's schema (see
// ParseEntitySpawnFields). A ChatMessage from a client must have an empty
// sender. A module type gets its length bounds and, when typed, the check
// of every declared field (CheckFields), else its string screen.
//
// Validate never allocates and never panics; every error it returns means
// drop and count malformedDropped.
func (r *Registry) Validate(travel Direction, h *Header, payload []byte) error {
	if travel != ClientToServer && travel != ServerToClient {
		return ErrWrongDirection // a receiver always knows which way it listens
	}
	var check func(Direction, []byte) error
	if h.Type == TypeConnectAccepted || h.Type == TypeConnectRejected {
		return errPlainOnly
	}
	// The rule by reference: a Schema copied per message cost more than
	// checking it.
	s := transportRule(h.Type)
	transport := s != nil
	if !transport {
		mt := r.lookup(h.Type)
		switch {
		case mt == nil:
			return ErrUnknownType
		case mt.failed:
			return ErrTypeFailed
		case mt.gone:
			return ErrTypeNotLoaded
		}
		s, check = &mt.schema, mt.check
	}
	if s.Direction&travel == 0 {
		return ErrWrongDirection
	}
	if h.Channel != s.Channel {
		return ErrWrongChannel
	}
	if n := uint64(len(payload)); n < uint64(s.MinLen) || n > uint64(s.MaxLen) {
		return ErrBadSize
	}
	switch {
	case transport:
		return validateBuiltin(h.Type, payload)
	case check != nil:
		return check(travel, payload)
	case s.Fields != nil:
		return CheckFields(s.Fields, payload)
	}
	return screenString(s.StringFieldOffset, payload)
}

// validateBuiltin runs the allocation-free structural check of a built-in
// payload whose size already passed the table.
func validateBuiltin(t MessageType, p []byte) error {
	var err error
	switch t {
	case TypeConnect:
		_, _, err = scanClientFinished(p)
	case TypeDisconnect:
		_, err = scanDisconnect(p)
	case TypeHeartbeat:
		_, err = ParseHeartbeat(p)
	case TypeAck:
		_, err = ParseAck(p)
	case TypeMessageRefused:
		_, err = ParseMessageRefused(p)
	case TypeModuleSchemas:
		err = CheckModuleSchemas(p)
	case TypeModuleProtocols:
		_, err = ParseModuleProtocols(p)
	case TypeResumeTicket:
		_, err = ParseResumeTicket(p)
	case TypeResumeRequest:
		err = CheckResumeRequest(p)
	case TypePathChallenge:
		_, err = ParsePathChallenge(p)
	case TypePathResponse:
		_, err = ParsePathResponse(p)
	default:
		err = ErrUnknownType
	}
	return err
}

// screenString applies a module schema's string rule (§10): unless off is
// NoStringFields, a NetBuffer string starts at off, lies wholly within the
// payload, and is valid UTF-8 without NUL.
func screenString(off uint32, p []byte) error {
	if off == NoStringFields {
		return nil
	}
	start := uint64(off) + 2
	if start > uint64(len(p)) {
		return errStringOffset
	}
	end := start + uint64(binary.LittleEndian.Uint16(p[off:]))
	if end > uint64(len(p)) {
		return errStringOffset
	}
	if !ValidUTF8NoNUL(p[start:end]) {
		return errBadString
	}
	return nil
}

// String names d for logs and errors.
func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "ClientToServer"
	case ServerToClient:
		return "ServerToClient"
	case BothDirections:
		return "BothDirections"
	}
	return "Direction(?)"
}
