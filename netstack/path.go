package netstack

// addrProof says how a peer proved that it receives at its address
// (docs/protocol.md §3.4): what the handshake knew of the path when it
// admitted the session.
type addrProof uint8

const (
	// proofNone: the source address was taken on trust (a v3 session, or
	// SkipAddressValidation on a private bind).
	proofNone addrProof = iota
	// proofCookie: the source echoed a cookie minted for its address.
	proofCookie
	// proofTransport: the transport's own handshake proved it (a
	// WebTransport or WebSocket session; transport.Message.Validated).
	proofTransport
)

func (p addrProof) String() string {
	switch p {
	case proofCookie:
		return "cookie"
	case proofTransport:
		return "transport"
	}
	return "none"
}
