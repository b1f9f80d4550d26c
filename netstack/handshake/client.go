package handshake

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// ClientHandshake is the client's side of one handshake attempt: its ephemeral
// key and the exact ClientHello core it sends (and resends, byte-identical,
// §5.5), in protocol v3 or v4. It is not safe for concurrent use.
type ClientHandshake struct {
	priv    *ecdh.PrivateKey // nil once finished or closed
	version uint16
	hello   [ClientHelloSize]byte // the v3 hello, or the core of the v4 one
}

// ClientResult is what the client learns from a verified ConnectAccepted.
type ClientResult struct {
	// ClientID is the id assigned in the verified accept prefix (never 0); the
	// client's SenderID from ClientFinished on.
	ClientID uint32
	// ServerTime is the server clock (seconds) from the accept prefix.
	ServerTime float32
	// TH is the transcript hash th.
	TH [KeySize]byte
	// IdentityPub is the server identity key whose signature verified. A trust
	// on first use store records it now, never before (§5.3).
	IdentityPub [KeySize]byte
	// C2S is K_c2s[0], the key the client seals with.
	C2S [KeySize]byte
	// S2C is K_s2c[0], the key the client opens server frames with.
	S2C [KeySize]byte
	// Version is the protocol version of the session (3 or 4).
	Version uint16
	// DowngradeMarked reports a v3 ConnectAccepted whose (signed) server
	// nonce ends with DowngradeSentinel: the server also speaks v4. A client
	// that fell back to v3 after a ProtocolTooNew must abandon the handshake:
	// that ProtocolTooNew was forged.
	DowngradeMarked bool
}

// NewClientHandshake starts a v3 handshake with a fresh ephemeral key and nonce
// drawn from rng (nil means crypto/rand).
func NewClientHandshake(rng io.Reader) (*ClientHandshake, error) {
	return newClientHandshake(ProtocolVersion, rng)
}

// NewClientHandshake4 starts a v4 handshake with a fresh ephemeral key and
// nonce drawn from rng (nil means crypto/rand).
func NewClientHandshake4(rng io.Reader) (*ClientHandshake, error) {
	return newClientHandshake(ProtocolVersion4, rng)
}

func newClientHandshake(version uint16, rng io.Reader) (*ClientHandshake, error) {
	if rng == nil {
		rng = rand.Reader
	}
	var buf [KeySize + NonceSize]byte
	defer clear(buf[:])
	if _, err := io.ReadFull(rng, buf[:]); err != nil {
		return nil, fmt.Errorf("handshake: reading client ephemeral randomness: %w", err)
	}
	var eph [KeySize]byte
	var nonce [NonceSize]byte
	copy(eph[:], buf[:KeySize])
	copy(nonce[:], buf[KeySize:])
	defer clear(eph[:])
	return newClientHandshakeWith(version, eph, nonce)
}

// NewClientHandshakeWith starts a v3 handshake with an explicit ephemeral
// X25519 secret (raw scalar) and nonce, for test vectors. Production code
// calls NewClientHandshake.
func NewClientHandshakeWith(ephSecret [KeySize]byte, nonce [NonceSize]byte) (*ClientHandshake, error) {
	return newClientHandshakeWith(ProtocolVersion, ephSecret, nonce)
}

// NewClientHandshake4With is NewClientHandshakeWith for a v4 handshake.
func NewClientHandshake4With(ephSecret [KeySize]byte, nonce [NonceSize]byte) (*ClientHandshake, error) {
	return newClientHandshakeWith(ProtocolVersion4, ephSecret, nonce)
}

func newClientHandshakeWith(version uint16, ephSecret [KeySize]byte, nonce [NonceSize]byte) (*ClientHandshake, error) {
	defer clear(ephSecret[:])
	priv, err := ecdh.X25519().NewPrivateKey(ephSecret[:])
	if err != nil {
		return nil, fmt.Errorf("handshake: client ephemeral key: %w", err)
	}
	h := &ClientHandshake{priv: priv, version: version}
	ch := ClientHello{Version: version, Suite: SuiteX25519, Nonce: nonce}
	copy(ch.EphemeralPub[:], priv.PublicKey().Bytes())
	ch.Append(h.hello[:0])
	return h, nil
}

// Version returns the protocol version of this handshake (3 or 4).
func (h *ClientHandshake) Version() uint16 { return h.version }

// Nonce returns the client nonce of the hello (a CookieReply echoes it).
func (h *ClientHandshake) Nonce() [NonceSize]byte {
	var n [NonceSize]byte
	copy(n[:], h.hello[offHelloNonce:])
	return n
}

// Hello returns a copy of the 55-byte ClientHello to send as the Connect
// payload of a v3 handshake; for a v4 one it is the hello core (see Hello4).
func (h *ClientHandshake) Hello() []byte {
	out := make([]byte, ClientHelloSize)
	copy(out, h.hello[:])
	return out
}

// Hello4 returns the 1176-byte v4 ClientHello echoing cookie (nil for the
// first hello). It panics on a v3 handshake or a cookie over MaxCookieSize.
func (h *ClientHandshake) Hello4(cookie []byte) []byte {
	if h.version != ProtocolVersion4 {
		panic("handshake: Hello4 on a v3 handshake")
	}
	var core ClientHello
	core.Suite = h.hello[offHelloSuite]
	copy(core.EphemeralPub[:], h.hello[offHelloEphemeral:])
	copy(core.Nonce[:], h.hello[offHelloNonce:])
	return AppendClientHello4(make([]byte, 0, ClientHello4Size), &core, cookie)
}

// Finish verifies a ConnectAccepted payload and derives the session keys, in the
// order of §5.3:
//
//  1. exactly 155 bytes (ErrMalformedAccept), echoed version = the
//     handshake's (ErrVersionMismatch), suite 1 (ErrSuiteMismatch);
//  2. the identity key against the pin or known_hosts, through verifyIdentity
//     (ErrServerIdentityMismatch, wrapping the verifier's error). verifyIdentity
//     must only check, never record: the signature is not verified yet. A nil
//     verifyIdentity fails closed;
//  3. the Ed25519 signature over th (ErrHandshakeAuthFailed);
//  4. the client id, taken only from the verified prefix (ErrInvalidClientID for 0);
//  5. ss; all-zero → ErrAbandon, and the handshake is closed.
//
// On any error nothing may be sent. An error before step 5 leaves the
// handshake usable, so a forged or corrupted datagram cannot kill an attempt
// whose genuine answer is still on its way; call Close to give up. After
// success the ephemeral key is dropped and Finish returns ErrHandshakeDone.
func (h *ClientHandshake) Finish(accepted []byte, verifyIdentity func(pub [KeySize]byte) error) (*ClientResult, error) {
	if h.priv == nil {
		return nil, ErrHandshakeDone
	}
	if len(accepted) != ConnectAcceptedSize {
		return nil, fmt.Errorf("%w (got %d)", ErrMalformedAccept, len(accepted))
	}
	if v := binary.LittleEndian.Uint16(accepted[offVersion:]); v != h.version {
		return nil, fmt.Errorf("%w: version %d", ErrVersionMismatch, v)
	}
	if s := accepted[offSuite]; s != SuiteX25519 {
		return nil, fmt.Errorf("%w: suite %d", ErrSuiteMismatch, s)
	}

	r := &ClientResult{}
	copy(r.IdentityPub[:], accepted[offIdentity:offEphemeral])
	if verifyIdentity == nil {
		return nil, fmt.Errorf("%w: no pin or known_hosts verifier configured", ErrServerIdentityMismatch)
	}
	if err := verifyIdentity(r.IdentityPub); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServerIdentityMismatch, err)
	}

	r.TH = transcript(h.version, h.hello[:], accepted[:AcceptPrefixSize], accepted[AcceptPrefixSize:offSignature])
	if !ed25519.Verify(r.IdentityPub[:], r.TH[:], accepted[offSignature:]) {
		return nil, ErrHandshakeAuthFailed
	}

	r.ClientID = binary.LittleEndian.Uint32(accepted[offClientID:])
	if r.ClientID == 0 {
		return nil, ErrInvalidClientID
	}
	r.ServerTime = math.Float32frombits(binary.LittleEndian.Uint32(accepted[offServerTime:]))
	r.Version = h.version
	r.DowngradeMarked = h.version == ProtocolVersion &&
		[len(DowngradeSentinel)]byte(accepted[offSignature-len(DowngradeSentinel):offSignature]) == DowngradeSentinel

	peer, err := ecdh.X25519().NewPublicKey(accepted[offEphemeral:offNonce])
	if err != nil {
		return nil, fmt.Errorf("handshake: server ephemeral key: %w", err)
	}
	var ss [KeySize]byte
	ok := sharedSecret(&ss, h.priv, peer)
	h.Close()
	if !ok {
		return nil, ErrAbandon
	}
	r.C2S, r.S2C = deriveSessionKeys(h.version, ss, r.TH)
	clear(ss[:])
	return r, nil
}

// Close abandons the handshake and drops the ephemeral key. crypto/ecdh keeps
// its own copy of the scalar, which cannot be wiped; dropping the last
// reference is the best this package can do.
func (h *ClientHandshake) Close() { h.priv = nil }

// sharedSecret computes ss = X25519(priv, peer) into dst and reports false for
// the all-zero result. crypto/ecdh already refuses it with an error; the
// explicit check keeps the rule visible and independent of that behaviour.
func sharedSecret(dst *[KeySize]byte, priv *ecdh.PrivateKey, peer *ecdh.PublicKey) bool {
	out, err := priv.ECDH(peer)
	if err != nil || len(out) != KeySize {
		return false
	}
	copy(dst[:], out)
	clear(out)
	var zero [KeySize]byte
	return subtle.ConstantTimeCompare(dst[:], zero[:]) == 0
}
