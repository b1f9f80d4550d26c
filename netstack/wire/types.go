package wire

import "strconv"

// MessageType is the u16 type of a packet (§4).
type MessageType uint16

// Built-in message types of §4.
const (
	TypeConnect         MessageType = 1 // plain: ClientHello; sealed: ClientFinished
	TypeConnectAccepted MessageType = 2
	TypeConnectRejected MessageType = 3
	TypeDisconnect      MessageType = 4
	TypeHeartbeat       MessageType = 5
	TypeAck             MessageType = 6

	// FirstUserDefined is the lowest id a module may register (§10).
	FirstUserDefined MessageType = 1000
)

var transportNames = [...]string{
	TypeConnect: "Connect", TypeConnectAccepted: "ConnectAccepted",
	TypeConnectRejected: "ConnectRejected", TypeDisconnect: "Disconnect",
	TypeHeartbeat: "Heartbeat", TypeAck: "Ack",
}

// String names built-in types; other values print as their number.
func (t MessageType) String() string {
	if int(t) < len(transportNames) && transportNames[t] != "" {
		return transportNames[t]
	}
	switch t {
	case TypeCookieReply:
		return "CookieReply"
	case TypeMessageRefused:
		return "MessageRefused"
	case TypeModuleSchemas:
		return "ModuleSchemas"
	case TypeModuleProtocols:
		return "ModuleProtocols"
	case TypePathChallenge:
		return "PathChallenge"
	case TypePathResponse:
		return "PathResponse"
	}
	if n, ok := registeredName(t); ok {
		return n
	}
	if t >= FirstUserDefined {
		return "UserDefined(" + strconv.Itoa(int(t)) + ")"
	}
	return "MessageType(" + strconv.Itoa(int(t)) + ")"
}

// Direction says which way a message type may travel; a bit set.
type Direction uint8

// Directions of §4.
const (
	ClientToServer Direction = 1 << iota
	ServerToClient
	BothDirections = ClientToServer | ServerToClient
)

// Which protocol version defines which message type. Protocol v3's table
// (protocol-v3.md §4) is frozen: its built-in types are 1..18, Connect to
// ScoreUpdate, and module types (≥ FirstUserDefined) travel under both
// versions by the same schema rules (§10: size bounds and string offset).
// Every built-in id added since — CookieReply, MessageRefused,
// ModuleSchemas, the room messages 32..45 — is protocol v4's: a v3 peer
// must never be sent one, and a v3 peer's message of one is of an unknown
// type. A type a later version adds is given its version here.
const lastV3Type MessageType = 18

// LastV3DisconnectReason is the highest Disconnect reason protocol v3
// defines (ModuleFailure); later reasons (ServerFull) reach a v3 peer as
// DisconnectUnknown, their detail saying what happened.
const LastV3DisconnectReason = DisconnectModuleFailure

// IntroducedIn returns the protocol version that defines message type t:
// 3 for the built-in types of v3's table and for module types, 4 for every
// other built-in id.
func IntroducedIn(t MessageType) uint16 {
	if t >= FirstUserDefined || (t >= TypeConnect && t <= lastV3Type) {
		return ProtocolVersion
	}
	return ProtocolVersion4
}

// InProtocol reports whether a session of protocol version may carry
// message type t (type 0 is no type in any version).
func InProtocol(version uint16, t MessageType) bool {
	return t != 0 && version >= IntroducedIn(t)
}
