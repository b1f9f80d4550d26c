// Package handshake owns the handshakes of protocol v3 and v4 (docs/protocol.md
// §3): the ClientHellos and their server-side checks, the v4 CookieReply, the
// ConnectAccepted (accept prefix ‖ signed ServerHello), the transcript hash,
// the downgrade sentinel and the key schedule that feeds the sealed channel.
// The cookie itself (its MAC and secrets) is package cookie's.
//
// It is pure computation: no sockets, no clocks, no slots. It never sends
// anything and never decides policy (budgets, bans, capacity); callers do, in
// the order §5.5 prescribes. A refused hello never costs a signature: everything
// that can refuse runs before Ed25519 signs.
package handshake

import (
	"errors"
	"fmt"
)

// Sizes and identifiers of §5.1 and §5.2.
const (
	// HandshakeMagic opens a ClientHello: bytes 53 50 4E 48 ("SPNH").
	HandshakeMagic uint32 = 0x484E5053
	// ProtocolVersion is protocol v3, the version of the original handshake
	// (ProtocolVersion4 is the address-validating one).
	ProtocolVersion uint16 = 3
	// SuiteX25519 is suite 1: X25519 / Ed25519 / ChaCha20-Poly1305 / SHA-256 /
	// HKDF-SHA256, the only suite of protocol v3.
	SuiteX25519 uint8 = 1

	// ClientHelloSize is the exact size of a ClientHello (Connect payload).
	ClientHelloSize = 55
	// AcceptPrefixSize is CONNECT_ACCEPT_PREFIX_SIZE: client id, server time, version.
	AcceptPrefixSize = 10
	// ServerHelloSize is the signed ServerHello: suite, identity, ephemeral, nonce, signature.
	ServerHelloSize = 145
	// ServerHelloSignedSize is the part of the ServerHello covered by the transcript
	// (everything but the signature).
	ServerHelloSignedSize = 81
	// ConnectAcceptedSize is the exact ConnectAccepted payload size.
	ConnectAcceptedSize = AcceptPrefixSize + ServerHelloSize

	// KeySize is the size of X25519 keys, the transcript hash and session keys.
	KeySize = 32
	// NonceSize is the size of the client and server handshake nonces.
	NonceSize = 16
)

// Offsets inside the ConnectAccepted payload (§5.2).
const (
	offClientID   = 0
	offServerTime = 4
	offVersion    = 8
	offSuite      = 10
	offIdentity   = 11
	offEphemeral  = 43
	offNonce      = 75
	offSignature  = 91
)

// Offsets inside the ClientHello (§5.1).
const (
	offHelloVersion   = 4
	offHelloSuite     = 6
	offHelloEphemeral = 7
	offHelloNonce     = 39
)

// RejectReason is a ConnectRejected reason code of §5.6. It is an alias of
// uint8 on purpose: package wire defines the typed enum for the message, and
// these constants convert to it without an import cycle or a conversion table.
type RejectReason = uint8

// Reason codes of §5.6. RejectNone (0) is not on the wire: it means "accept".
const (
	RejectNone               RejectReason = 0
	RejectProtocolMissing    RejectReason = 1
	RejectProtocolTooOld     RejectReason = 2
	RejectProtocolTooNew     RejectReason = 3
	RejectMalformedHandshake RejectReason = 4
	RejectUnsupportedSuite   RejectReason = 5
	RejectServerFull         RejectReason = 6
	RejectBanned             RejectReason = 7
)

// Sentinel errors. Client-side ones mean "nothing is sent"; callers match them
// with errors.Is.
var (
	// ErrMalformedAccept: the ConnectAccepted payload is not exactly 155 bytes.
	ErrMalformedAccept = errors.New("handshake: ConnectAccepted payload is not 155 bytes")
	// ErrVersionMismatch: the server echoed a protocol version other than the hello's.
	ErrVersionMismatch = errors.New("handshake: server answered with another protocol version")
	// ErrSuiteMismatch: the server chose a suite other than 1.
	ErrSuiteMismatch = errors.New("handshake: server chose an unsupported cipher suite")
	// ErrServerIdentityMismatch: the identity key is not the pinned or known one
	// (HandshakeError ServerIdentityMismatch). The verifier's error is wrapped.
	ErrServerIdentityMismatch = errors.New("handshake: server identity key does not match the pin or known_hosts; check the pin, or the server was replaced")
	// ErrHandshakeAuthFailed: the ServerHello signature does not verify over the
	// transcript (HandshakeError HandshakeAuthFailed).
	ErrHandshakeAuthFailed = errors.New("handshake: server signature does not verify")
	// ErrAbandon: the shared secret is all zero (a small-order server key). The
	// client abandons the handshake silently.
	ErrAbandon = errors.New("handshake: all-zero shared secret, handshake abandoned")
	// ErrInvalidClientID: the (verified) accept prefix assigns client id 0.
	ErrInvalidClientID = errors.New("handshake: server assigned client id 0")
	// ErrHandshakeDone: Finish already succeeded or the handshake was closed.
	ErrHandshakeDone = errors.New("handshake: handshake already finished or closed")
	// ErrZeroSharedSecret: the server computed an all-zero ss; answer
	// MalformedHandshake (Accept wraps it in a *RejectError).
	ErrZeroSharedSecret = errors.New("handshake: all-zero shared secret")
)

// DowngradeSentinel ends the server nonce of every v3 ConnectAccepted sent by
// a server that also speaks v4 ("SPv4DOWN"). The nonce is signed, so only the
// server can set it; a v3 client takes it for random bytes.
var DowngradeSentinel = [8]byte{'S', 'P', 'v', '4', 'D', 'O', 'W', 'N'}

// RejectError is a server-side refusal that must reach the client as a
// ConnectRejected with Reason.
type RejectError struct {
	Reason RejectReason
	Err    error
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("handshake: reject (reason %d): %v", e.Reason, e.Err)
}

// Unwrap returns the cause, so errors.Is works through a RejectError.
func (e *RejectError) Unwrap() error { return e.Err }
