// Package scram implements SCRAM-SHA-256 (RFC 5802, RFC 7677) for the mmo
// module: the registration verifier a client computes from its password, and
// the client and server state machines of a login, with channel binding to the
// session's handshake transcript hash.
//
// No password ever leaves the client. At registration the client sends a
// Verifier (salt, iteration count, StoredKey, ServerKey); at login it proves
// knowledge of the password with a ClientProof that is bound to the session:
// the gs2 header is "p=sparkhost-th,," and the channel-binding attribute is
// base64(gs2 header ‖ th), th being the 32-byte transcript hash both ends of
// the sealed channel share. A proof recorded in one session therefore fails in
// any other. Without a channel-binding value (RFC 7677's test vector) the plain
// "n,," header is supported too; a Server given a channel-binding value refuses
// it, and refuses "y,," as a downgrade.
//
// Choices where the RFCs leave one:
//   - SASLprep: a password must be 1..MaxPasswordLen bytes of printable ASCII
//     (0x20..0x7E). SASLprep (RFC 4013) maps every such string to itself, so the
//     result is what a full SASLprep implementation computes for these
//     passwords; anything else is refused with ErrPasswordInvalid rather than
//     normalised.
//   - Extensions and the reserved "m=" attribute are refused (ErrMalformed): the
//     mechanism profile is closed, and every accepted message then has exactly
//     one encoding, which ParseXxx followed by String reproduces.
//   - Nonces are 24 characters (18 random bytes, base64url without padding)
//     from each side; a received nonce part may be 1..MaxNonceLen characters.
//   - Every comparison of secret-derived bytes is constant-time.
//
// The package never panics on hostile input: every message is bounded by
// MaxMessageLen before it is parsed, and every length is checked before
// anything is allocated.
package scram
