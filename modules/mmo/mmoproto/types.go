package mmoproto

import (
	"encoding/binary"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Owner is the module name the schemas are registered under.
const Owner = "mmo"

// Message types (docs/mmo.md §2). C: client→server, S: server→client.
const (
	TypeRegister             wire.MessageType = 1100 + iota // C
	TypeRegisterResult                                      // S
	TypeLoginStart                                          // C
	TypeLoginChallenge                                      // S
	TypeLoginFinish                                         // C
	TypeLoginResult                                         // S
	TypeLogout                                              // C
	TypeLoggedOut                                           // S, unsolicited
	TypeCharacterListRequest                                // C
	TypeCharacterList                                       // S
	TypeCharacterCreate                                     // C
	TypeCharacterDelete                                     // C
	TypeEnter                                               // C
	TypeEntered                                             // S
	TypeLeave                                               // C
	TypeMoveIntent                                          // C
	TypeStop                                                // C
	TypeWhere                                               // C
	TypeWhereResult                                         // S
	TypePositionUpload                                      // C, always refused
	TypeAppear                                              // S, unsolicited
	TypeDisappear                                           // S, unsolicited
	TypePositions                                           // S, unsolicited
	TypeGreet                                               // C
	TypeGreeting                                            // S, unsolicited
	TypeResult                                              // S
	TypeHandoffKey                                          // C
	TypeHandoff                                             // S, unsolicited
	TypeTicketResult                                        // S, unsolicited
	TypeVerifierUpgrade                                     // S, unsolicited
	TypeSetVerifier                                         // C
	TypeWorldUpdate                                         // S, unsolicited

	// FirstType and LastType bound the module's ids.
	FirstType = TypeRegister
	LastType  = TypeWorldUpdate
)

// Field bounds, in bytes unless stated.
const (
	MaxNameField   = 64  // an account or character name field
	MaxSCRAMField  = 512 // a SCRAM message field (scram.MaxMessageLen)
	MaxDetailField = 256 // Result and LoggedOut detail
	SaltLen        = 16  // Register salt
	KeyLen         = 32  // Register StoredKey and ServerKey
	MaxAreaField   = 32  // Handoff's area name
	MaxAddrField   = 64  // Handoff's HOST:PORT
	MaxPinField    = 96  // Handoff's pin ("ed25519:" and 43 base64url characters)
	MaxTicketField = 256 // Handoff's signed ticket (a ClientFinished holds at most 256 bytes)
	// MaxListedCharacters bounds CharacterList's entries.
	MaxListedCharacters = 16
	// RecommendedMaxPayload is the size a sender should keep Appear,
	// Disappear and Positions under by splitting its lists, so that a packet
	// fits one Ethernet frame; the parsers accept up to wire.MaxPayload.
	RecommendedMaxPayload = 1100
)

// Encoded sizes of the fixed parts and list entries.
const (
	strMin            = 2 // a str's length prefix
	appearEntryMin    = 4 + 4 + 4 + strMin
	disappearEntry    = 4
	positionEntry     = 4 + 4 + 4
	listHeader        = 4 + 2   // tick u32, count u16
	worldUpdateMin    = 4 + 3*2 // tick u32, three counts u16
	characterEntryMin = strMin + 4 + 4
	registerFixed     = 4 + strMin + SaltLen + 4 + KeyLen + KeyLen
	setVerifierLen    = 4 + SaltLen + 4 + KeyLen + KeyLen
	enteredFixed      = 9 * 4
)

var (
	c2s = wire.ClientToServer
	s2c = wire.ServerToClient
)

// The mmo protocol versions this code speaks (docs/mmo.md §1.1): 2
// replicates with WorldUpdate, 1 with Appear, Positions and Disappear. A
// client states its version in LoginStart (none stated: 1).
const (
	Protocol       uint16 = 2
	OldestProtocol uint16 = 1
)

// schemas is the table of docs/mmo.md §2, indexed by type − FirstType.
var schemas = [...]wire.Schema{
	sc(TypeRegister, "Register", c2s, registerFixed, registerFixed+MaxNameField, 4),
	sc(TypeRegisterResult, "RegisterResult", s2c, 4+strMin, 4+strMin+MaxNameField, 4),
	sc(TypeLoginStart, "LoginStart", c2s, 4+strMin, 4+strMin+MaxSCRAMField+2, 4), // + the protocol, optional
	sc(TypeLoginChallenge, "LoginChallenge", s2c, 4+strMin, 4+strMin+MaxSCRAMField, 4),
	sc(TypeLoginFinish, "LoginFinish", c2s, 4+strMin, 4+strMin+MaxSCRAMField, 4),
	sc(TypeLoginResult, "LoginResult", s2c, 4+2*strMin, 4+2*strMin+MaxNameField+MaxSCRAMField, 4),
	sc(TypeLogout, "Logout", c2s, 4, 4, wire.NoStringFields),
	sc(TypeLoggedOut, "LoggedOut", s2c, 1+strMin, 1+strMin+MaxDetailField, 1),
	sc(TypeCharacterListRequest, "CharacterListRequest", c2s, 4, 4, wire.NoStringFields),
	sc(TypeCharacterList, "CharacterList", s2c, 5, 5+MaxListedCharacters*(characterEntryMin+MaxNameField), wire.NoStringFields),
	sc(TypeCharacterCreate, "CharacterCreate", c2s, 4+strMin, 4+strMin+MaxNameField, 4),
	sc(TypeCharacterDelete, "CharacterDelete", c2s, 4+strMin, 4+strMin+MaxNameField, 4),
	sc(TypeEnter, "Enter", c2s, 4+strMin, 4+strMin+MaxNameField, 4),
	sc(TypeEntered, "Entered", s2c, enteredFixed+strMin, enteredFixed+strMin+MaxNameField, enteredFixed),
	sc(TypeLeave, "Leave", c2s, 4, 4, wire.NoStringFields),
	sc(TypeMoveIntent, "MoveIntent", c2s, 12, 12, wire.NoStringFields),
	sc(TypeStop, "Stop", c2s, 4, 4, wire.NoStringFields),
	sc(TypeWhere, "Where", c2s, 4, 4, wire.NoStringFields),
	sc(TypeWhereResult, "WhereResult", s2c, 24, 24, wire.NoStringFields),
	sc(TypePositionUpload, "PositionUpload", c2s, 12, 12, wire.NoStringFields),
	sc(TypeAppear, "Appear", s2c, listHeader, wire.MaxPayload, wire.NoStringFields),
	sc(TypeDisappear, "Disappear", s2c, listHeader, listHeader+disappearEntry*((wire.MaxPayload-listHeader)/disappearEntry), wire.NoStringFields),
	sc(TypePositions, "Positions", s2c, listHeader, listHeader+positionEntry*((wire.MaxPayload-listHeader)/positionEntry), wire.NoStringFields),
	sc(TypeGreet, "Greet", c2s, 4+strMin, 4+strMin+MaxNameField, 4),
	sc(TypeGreeting, "Greeting", s2c, 8+2*strMin, 8+2*(strMin+MaxNameField), 8),
	sc(TypeResult, "Result", s2c, 10+strMin, 10+strMin+MaxDetailField, 10),
	sc(TypeHandoffKey, "HandoffKey", c2s, 4+KeyLen, 4+KeyLen, wire.NoStringFields),
	sc(TypeHandoff, "Handoff", s2c, 3*strMin+2, 3*strMin+MaxAreaField+MaxAddrField+MaxPinField+2+MaxTicketField, 0),
	sc(TypeTicketResult, "TicketResult", s2c, 2+2*strMin, 2+2*strMin+MaxNameField+MaxDetailField, 2),
	sc(TypeVerifierUpgrade, "VerifierUpgrade", s2c, 4, 4, wire.NoStringFields),
	sc(TypeSetVerifier, "SetVerifier", c2s, setVerifierLen, setVerifierLen, wire.NoStringFields),
	sc(TypeWorldUpdate, "WorldUpdate", s2c, worldUpdateMin, wire.MaxPayload, wire.NoStringFields),
}

func sc(t wire.MessageType, name string, dir wire.Direction, minLen, maxLen int, strOff uint32) wire.Schema {
	return wire.Schema{
		ID: t, Name: name, Direction: dir, Channel: wire.ReliableOrdered,
		MinLen: uint32(minLen), MaxLen: uint32(maxLen), StringFieldOffset: strOff,
		RequiresAdmitted: true,
	}
}

// Schemas returns the receive schemas of every type, in id order, for
// registration under Owner.
func Schemas() []wire.Schema { return append([]wire.Schema(nil), schemas[:]...) }

// SchemaOf returns the schema of t.
func SchemaOf(t wire.MessageType) (wire.Schema, bool) {
	if t < FirstType || t > LastType {
		return wire.Schema{}, false
	}
	return schemas[t-FirstType], true
}

// Name returns the name of t ("Register"), or t's wire name if it is not one
// of this package's types.
func Name(t wire.MessageType) string {
	if s, ok := SchemaOf(t); ok {
		return s.Name
	}
	return t.String()
}

// RegisterAll registers every schema in r under owner (normally Owner).
func RegisterAll(r *wire.Registry, owner string) error {
	for _, s := range schemas {
		if err := r.Register(owner, s); err != nil {
			r.UnregisterOwner(owner)
			return err
		}
	}
	return nil
}

// IsRequest reports whether t is a client→server type (all of which start
// with a request id).
func IsRequest(t wire.MessageType) bool {
	s, ok := SchemaOf(t)
	return ok && s.Direction == wire.ClientToServer
}

// PeekRequestID returns the request id at the start of a request payload, so
// that a server can answer even a request that fails to parse with
// Result{BadRequest}.
func PeekRequestID(p []byte) (uint32, bool) {
	if len(p) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(p), true
}

// Message is any message of this package.
type Message interface {
	// Type returns the message's wire type.
	Type() wire.MessageType
	// Append appends the message's encoding to dst.
	Append(dst []byte) []byte
}

// Parse parses a payload of type t into the matching message (a pointer to
// Register, Result, ...). An unknown t is malformed.
func Parse(t wire.MessageType, p []byte) (Message, error) {
	if t < FirstType || t > LastType {
		return nil, errUnknownType
	}
	return parsers[t-FirstType](p)
}

func boxed[M any, P interface {
	*M
	Message
	decoder
}](p []byte) (Message, error) {
	m, err := parseAs[M, P](p)
	if err != nil {
		return nil, err
	}
	return P(&m), nil
}

var parsers = [...]func([]byte) (Message, error){
	boxed[Register], boxed[RegisterResult], boxed[LoginStart], boxed[LoginChallenge],
	boxed[LoginFinish], boxed[LoginResult], boxed[Logout], boxed[LoggedOut],
	boxed[CharacterListRequest], boxed[CharacterList], boxed[CharacterCreate],
	boxed[CharacterDelete], boxed[Enter], boxed[Entered], boxed[Leave], boxed[MoveIntent],
	boxed[Stop], boxed[Where], boxed[WhereResult], boxed[PositionUpload], boxed[Appear],
	boxed[Disappear], boxed[Positions], boxed[Greet], boxed[Greeting], boxed[Result],
	boxed[HandoffKey], boxed[Handoff], boxed[TicketResult],
	boxed[VerifierUpgrade], boxed[SetVerifier], boxed[WorldUpdate],
}
