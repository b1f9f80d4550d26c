package wire

// Protocol v4 additions to the plain handshake frames (docs/protocol.md §3).
// They live in their own file: the game message types are elsewhere.
const (
	// ProtocolVersion4 is the address-validating protocol version.
	ProtocolVersion4 uint16 = 4

	// TypeCookieReply is the v4 server's answer to a ClientHello from a source
	// that has not proven its address: plain frame, channel 0, server to
	// client only (a server drops it as plaintextFramesDropped). Its payload
	// is parsed by package handshake.
	TypeCookieReply MessageType = 19

	// DisconnectServerFull closes a handshake whose ClientFinished arrived
	// when max_clients were already admitted (half-open handshakes do not
	// hold a slot in v4, so capacity is judged again at admission).
	DisconnectServerFull DisconnectReason = 12

	// DisconnectAddressLimit closes a handshake whose ClientFinished arrived
	// when the admission caps of its address or prefix were reached
	// (docs/protocol.md §3.7): several half-open handshakes of one address
	// may all have passed the caps at the hello.
	DisconnectAddressLimit DisconnectReason = 13

	// DisconnectServerDraining closes a session because the server is
	// draining (docs/protocol.md §3.14): a handshake whose ClientFinished
	// arrived after the drain began, or a player whose match ended (or
	// whose drain deadline passed) while the server drains.
	DisconnectServerDraining DisconnectReason = 16
)
