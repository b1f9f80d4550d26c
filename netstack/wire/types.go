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
