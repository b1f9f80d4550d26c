package wire

import "strconv"

// MessageType is the u16 type of a packet (§4).
type MessageType uint16

// Built-in message types of §4.
const (
	TypeConnect           MessageType = 1 // plain: ClientHello; sealed: ClientFinished
	TypeConnectAccepted   MessageType = 2
	TypeConnectRejected   MessageType = 3
	TypeDisconnect        MessageType = 4
	TypeHeartbeat         MessageType = 5
	TypeAck               MessageType = 6
	TypeEntitySpawn       MessageType = 7
	TypeEntityDestroy     MessageType = 8
	TypeEntityStateUpdate MessageType = 9
	TypeEntityRPC         MessageType = 10
	TypeClientInput       MessageType = 11
	TypeInputAck          MessageType = 12
	TypeChatMessage       MessageType = 13
	TypeGameStateSync     MessageType = 14
	TypeMatchStart        MessageType = 15
	TypeMatchEnd          MessageType = 16
	TypePlayerRespawn     MessageType = 17
	TypeScoreUpdate       MessageType = 18

	// FirstUserDefined is the lowest id a module may register (§10).
	FirstUserDefined MessageType = 1000
)

var typeNames = [...]string{
	TypeConnect: "Connect", TypeConnectAccepted: "ConnectAccepted",
	TypeConnectRejected: "ConnectRejected", TypeDisconnect: "Disconnect",
	TypeHeartbeat: "Heartbeat", TypeAck: "Ack", TypeEntitySpawn: "EntitySpawn",
	TypeEntityDestroy: "EntityDestroy", TypeEntityStateUpdate: "EntityStateUpdate",
	TypeEntityRPC: "EntityRPC", TypeClientInput: "ClientInput", TypeInputAck: "InputAck",
	TypeChatMessage: "ChatMessage", TypeGameStateSync: "GameStateSync",
	TypeMatchStart: "MatchStart", TypeMatchEnd: "MatchEnd",
	TypePlayerRespawn: "PlayerRespawn", TypeScoreUpdate: "ScoreUpdate",
}

// String names built-in types; other values print as their number.
func (t MessageType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
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
