package wire

import "strconv"

// RejectReason is ConnectRejected.reason (§5.6).
type RejectReason uint8

// Rejection reasons of §5.6.
const (
	RejectProtocolMissing    RejectReason = 1
	RejectProtocolTooOld     RejectReason = 2
	RejectProtocolTooNew     RejectReason = 3
	RejectMalformedHandshake RejectReason = 4
	RejectUnsupportedSuite   RejectReason = 5
	RejectServerFull         RejectReason = 6
	RejectBanned             RejectReason = 7
	// RejectAddressLimit (v4 servers): too many clients admitted from the
	// source's address, or its IPv4 /24 or IPv6 /64 (docs/protocol.md §3.5
	// step 13). Clients that predate it accept it as any unknown reason.
	RejectAddressLimit RejectReason = 8
	// RejectServerDraining (v4 servers): the server is draining — finishing
	// its matches before it stops — and admits nobody (docs/protocol.md
	// §3.14). The client gives up with it and tries another server.
	RejectServerDraining RejectReason = 11
)

var rejectNames = [...]string{"", "ProtocolMissing", "ProtocolTooOld", "ProtocolTooNew",
	"MalformedHandshake", "UnsupportedSuite", "ServerFull", "Banned", "AddressLimit",
	11: "ServerDraining"}

// String returns the spec's name of r, or "RejectReason(n)" for other codes.
func (r RejectReason) String() string { return enumName(rejectNames[:], uint8(r), "RejectReason") }

// DisconnectReason is Disconnect.reason (§8).
type DisconnectReason uint8

// Disconnect reasons of §8.
const (
	DisconnectUnknown                DisconnectReason = 0
	DisconnectClientQuit             DisconnectReason = 1
	DisconnectServerShutdown         DisconnectReason = 2
	DisconnectKicked                 DisconnectReason = 3
	DisconnectBanned                 DisconnectReason = 4
	DisconnectTimeout                DisconnectReason = 5
	DisconnectProtocolError          DisconnectReason = 6
	DisconnectReliableDeliveryFailed DisconnectReason = 7
	DisconnectKeyExhausted           DisconnectReason = 8
	DisconnectNameInvalid            DisconnectReason = 9
	DisconnectRateLimited            DisconnectReason = 10
	DisconnectModuleFailure          DisconnectReason = 11
)

var disconnectNames = [...]string{"Unknown", "ClientQuit", "ServerShutdown", "Kicked",
	"Banned", "Timeout", "ProtocolError", "ReliableDeliveryFailed", "KeyExhausted",
	"NameInvalid", "RateLimited", "ModuleFailure", "ServerFull", "AddressLimit",
	16: "ServerDraining"}

// String returns the spec's name of d, or "DisconnectReason(n)" for other codes.
func (d DisconnectReason) String() string {
	return enumName(disconnectNames[:], uint8(d), "DisconnectReason")
}

func enumName(names []string, v uint8, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}
