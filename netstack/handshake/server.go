package handshake

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// ServerIdentity is the server's long-term Ed25519 identity key pair (§12).
// Build it with NewServerIdentity so Public is known to match Private.
type ServerIdentity struct {
	Private ed25519.PrivateKey
	Public  [KeySize]byte
}

// NewServerIdentity checks priv and returns the identity. It refuses a key whose
// public half does not belong to its seed: such a key would sign ServerHellos
// that no client can verify.
func NewServerIdentity(priv ed25519.PrivateKey) (*ServerIdentity, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("handshake: identity key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	derived := ed25519.NewKeyFromSeed(priv.Seed())
	defer clear(derived)
	if subtle.ConstantTimeCompare(derived[32:], priv[32:]) != 1 {
		return nil, errors.New("handshake: identity key's public half does not match its seed; the key file is corrupt")
	}
	id := &ServerIdentity{Private: priv}
	copy(id.Public[:], priv[32:])
	return id, nil
}

// ServerResult is what the server keeps from an accepted hello.
type ServerResult struct {
	// Payload is the ConnectAccepted payload (accept prefix ‖ ServerHello). The
	// caller caches it to answer a byte-identical repeated Connect (§5.5).
	Payload [ConnectAcceptedSize]byte
	// TH is the transcript hash th.
	TH [KeySize]byte
	// C2S is K_c2s[0], the key the server opens client frames with.
	C2S [KeySize]byte
	// S2C is K_s2c[0], the key the server seals its frames with.
	S2C [KeySize]byte
}

// Accept answers a v3 ClientHello that passed CheckClientHello (and the
// caller's ban and capacity checks): it draws the server ephemeral secret and
// nonce from rng (nil means crypto/rand) and calls AcceptWith. A v4-capable
// server answers v3 hellos with AcceptV3Marked instead.
func Accept(id *ServerIdentity, helloPayload []byte, hello ClientHello, clientID uint32, serverTime float32, rng io.Reader) (*ServerResult, error) {
	eph, nonce, err := serverRandom(rng)
	if err != nil {
		return nil, err
	}
	defer clear(eph[:])
	return AcceptWith(id, helloPayload, hello, clientID, serverTime, eph, nonce)
}

// AcceptV3Marked is Accept for a server that also speaks v4: the last 8 bytes
// of its server nonce are DowngradeSentinel, so that a v4 client that fell back
// to v3 learns, from the signed ServerHello, that it was misled (see
// ClientResult.DowngradeMarked). A v3 client sees a random-looking nonce.
func AcceptV3Marked(id *ServerIdentity, helloPayload []byte, hello ClientHello, clientID uint32, serverTime float32, rng io.Reader) (*ServerResult, error) {
	eph, nonce, err := serverRandom(rng)
	if err != nil {
		return nil, err
	}
	defer clear(eph[:])
	copy(nonce[NonceSize-len(DowngradeSentinel):], DowngradeSentinel[:])
	return AcceptWith(id, helloPayload, hello, clientID, serverTime, eph, nonce)
}

// AcceptV4 answers a v4 ClientHello that passed CheckClientHello4, the
// address validation and the caller's ban and capacity checks, with fresh
// randomness from rng (nil means crypto/rand).
func AcceptV4(id *ServerIdentity, helloPayload []byte, clientID uint32, serverTime float32, rng io.Reader) (*ServerResult, error) {
	eph, nonce, err := serverRandom(rng)
	if err != nil {
		return nil, err
	}
	defer clear(eph[:])
	return AcceptV4With(id, helloPayload, clientID, serverTime, eph, nonce)
}

func serverRandom(rng io.Reader) (eph [KeySize]byte, nonce [NonceSize]byte, err error) {
	if rng == nil {
		rng = rand.Reader
	}
	var buf [KeySize + NonceSize]byte
	defer clear(buf[:])
	if _, err := io.ReadFull(rng, buf[:]); err != nil {
		return eph, nonce, fmt.Errorf("handshake: reading server ephemeral randomness: %w", err)
	}
	copy(eph[:], buf[:KeySize])
	copy(nonce[:], buf[KeySize:])
	return eph, nonce, nil
}

// AcceptWith is Accept with an explicit server ephemeral X25519 secret (raw
// scalar; X25519 clamps it) and server nonce, so the test vectors reproduce.
// Production code calls Accept.
//
// Order (§5.3, §5.5): the hello is re-checked (a refusal is a *RejectError), ss
// is computed, and an all-zero ss is refused as MalformedHandshake — all before
// the one Ed25519 signature, so a refused hello never costs a signature.
// serverTime is seconds since the server process started (§5.2).
func AcceptWith(id *ServerIdentity, helloPayload []byte, hello ClientHello, clientID uint32, serverTime float32, ephSecret [KeySize]byte, nonce [NonceSize]byte) (*ServerResult, error) {
	defer clear(ephSecret[:])
	// Cheap and allocation-free: it keeps a caller that skipped CheckClientHello,
	// or passed a hello that is not helloPayload, from signing the wrong transcript.
	checked, reason := CheckClientHello(helloPayload)
	if reason != RejectNone {
		return nil, &RejectError{Reason: reason, Err: errors.New("ClientHello refused")}
	}
	if checked != hello {
		return nil, errors.New("handshake: hello does not match helloPayload")
	}
	return accept(id, ProtocolVersion, helloPayload, &hello.EphemeralPub, clientID, serverTime, &ephSecret, nonce)
}

// AcceptV4With is AcceptV4 with explicit server randomness, for the test
// vectors. The hello is re-checked with CheckClientHello4 (a refusal is a
// *RejectError); the transcript covers its core (bytes 0..54), not the cookie
// or the padding.
func AcceptV4With(id *ServerIdentity, helloPayload []byte, clientID uint32, serverTime float32, ephSecret [KeySize]byte, nonce [NonceSize]byte) (*ServerResult, error) {
	defer clear(ephSecret[:])
	hello, reason := CheckClientHello4(helloPayload)
	if reason != RejectNone {
		return nil, &RejectError{Reason: reason, Err: errors.New("v4 ClientHello refused")}
	}
	return accept(id, ProtocolVersion4, helloPayload[:HelloCoreSize], &hello.EphemeralPub, clientID, serverTime, &ephSecret, nonce)
}

// accept computes ss, refuses an all-zero one, then builds and signs the
// ConnectAccepted of the given version over the hello core.
func accept(id *ServerIdentity, version uint16, core []byte, clientPub *[KeySize]byte, clientID uint32, serverTime float32, ephSecret *[KeySize]byte, nonce [NonceSize]byte) (*ServerResult, error) {
	if id == nil || len(id.Private) != ed25519.PrivateKeySize {
		return nil, errors.New("handshake: server identity missing; build it with NewServerIdentity")
	}
	if clientID == 0 {
		return nil, errors.New("handshake: client id 0 is reserved; assign ids from 1")
	}
	var ss [KeySize]byte
	defer clear(ss[:])
	x25519(&ss, ephSecret, clientPub)
	var zero [KeySize]byte
	if subtle.ConstantTimeCompare(ss[:], zero[:]) == 1 {
		return nil, &RejectError{Reason: RejectMalformedHandshake, Err: ErrZeroSharedSecret}
	}
	var ephPub [KeySize]byte
	x25519Base(&ephPub, ephSecret)

	r := &ServerResult{}
	p := r.Payload[:0]
	p = binary.LittleEndian.AppendUint32(p, clientID)
	p = binary.LittleEndian.AppendUint32(p, math.Float32bits(serverTime))
	p = binary.LittleEndian.AppendUint16(p, version)
	p = append(p, SuiteX25519)
	p = append(p, id.Public[:]...)
	p = append(p, ephPub[:]...)
	p = append(p, nonce[:]...)
	if len(p) != offSignature {
		panic("handshake: ServerHello layout broken")
	}
	r.TH = transcript(version, core, r.Payload[:AcceptPrefixSize], r.Payload[AcceptPrefixSize:offSignature])
	copy(r.Payload[offSignature:], ed25519.Sign(id.Private, r.TH[:]))
	r.C2S, r.S2C = deriveSessionKeys(version, ss, r.TH)
	return r, nil
}
