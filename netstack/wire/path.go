package wire

// PathChallenge and PathResponse (types 23 and 24, protocol v4,
// docs/protocol.md §4.1): the path messages of connection migration. A
// client that supports migration sends a PathChallenge after admission; a
// server that supports it answers with a PathResponse carrying the
// connection id the client then puts in its frames (class 0x03). When a
// client's authenticated frame arrives from a new address, the server sends
// a PathChallenge there, and the client's PathResponse from that address
// proves that it receives there.
//
//	PathChallenge: token [8]
//	PathResponse:  token [8] (the challenge's, echoed), connection_id [8]

// Path message types (Unreliable, both directions, v4 sessions only).
const (
	TypePathChallenge MessageType = 23
	TypePathResponse  MessageType = 24
)

// Payload sizes of the path messages.
const (
	PathChallengeSize = 8
	PathResponseSize  = 16
)

// PathChallenge is the payload of a PathChallenge: a fresh random token.
type PathChallenge struct {
	Token [8]byte
}

// PathResponse is the payload of a PathResponse: the token of the
// challenge it answers, and a connection id — the one the client shall use,
// from a server; the one it uses (all zero: none yet), from a client.
type PathResponse struct {
	Token [8]byte
	ID    [8]byte
}

// AppendPathChallenge appends the 8-byte encoding of m.
func AppendPathChallenge(dst []byte, m *PathChallenge) []byte { return append(dst, m.Token[:]...) }

// ParsePathChallenge parses a PathChallenge payload (exactly 8 bytes).
func ParsePathChallenge(p []byte) (PathChallenge, error) {
	var m PathChallenge
	if len(p) != PathChallengeSize {
		return m, errPathSize
	}
	copy(m.Token[:], p)
	return m, nil
}

// AppendPathResponse appends the 16-byte encoding of m.
func AppendPathResponse(dst []byte, m *PathResponse) []byte {
	return append(append(dst, m.Token[:]...), m.ID[:]...)
}

// ParsePathResponse parses a PathResponse payload (exactly 16 bytes).
func ParsePathResponse(p []byte) (PathResponse, error) {
	var m PathResponse
	if len(p) != PathResponseSize {
		return m, errPathSize
	}
	copy(m.Token[:], p[:8])
	copy(m.ID[:], p[8:])
	return m, nil
}

var errPathSize = &payloadError{"path message of the wrong size", nil}
