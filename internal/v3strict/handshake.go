package v3strict

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Handshake constants of §5.
const (
	handshakeMagic uint32 = 0x484E5053 // bytes 53 50 4E 48, "SPNH"
	// Suite is the one suite of v3: X25519 / Ed25519 / ChaCha20-Poly1305 /
	// SHA-256 / HKDF-SHA256.
	Suite uint8 = 1
	// HelloSize is the ClientHello (the Connect payload).
	HelloSize = 55
	// AcceptedSize is the ConnectAccepted payload.
	AcceptedSize = 155
	// acceptPrefixSize is CONNECT_ACCEPT_PREFIX_SIZE.
	acceptPrefixSize = 10
	// signedHelloSize is the part of ServerHello the transcript covers.
	signedHelloSize = 81

	transcriptLabel = "SPNH-v3"
	sessionLabel    = "spark-net-100 session v3"
	c2sLabel        = "spark-net-100 c2s"
	s2cLabel        = "spark-net-100 s2c"
	ratchetLabel    = "spark-net-100 ratchet"
)

// Rejection reasons of §5.6.
const (
	RejectProtocolMissing    uint8 = 1
	RejectProtocolTooOld     uint8 = 2
	RejectProtocolTooNew     uint8 = 3
	RejectMalformedHandshake uint8 = 4
	RejectUnsupportedSuite   uint8 = 5
	RejectServerFull         uint8 = 6
	RejectBanned             uint8 = 7
)

// clientHello is one ClientHello with the ephemeral secret behind it.
type clientHello struct {
	secret *ecdh.PrivateKey
	bytes  []byte // the 55-byte payload
}

// newHello builds a ClientHello of version; secret and nonce nil draw
// fresh random ones (the vectors give fixed ones).
func newHello(version uint16, secret []byte, nonce []byte) (*clientHello, error) {
	var err error
	var sk *ecdh.PrivateKey
	if secret == nil {
		sk, err = ecdh.X25519().GenerateKey(rand.Reader)
	} else {
		sk, err = ecdh.X25519().NewPrivateKey(secret)
	}
	if err != nil {
		return nil, err
	}
	if nonce == nil {
		nonce = make([]byte, 16)
		rand.Read(nonce)
	}
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, HelloSize), handshakeMagic)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = append(b, Suite)
	b = append(b, sk.PublicKey().Bytes()...)
	b = append(b, nonce[:16]...)
	return &clientHello{secret: sk, bytes: b}, nil
}

// accepted is a parsed ConnectAccepted payload (§5.2).
type accepted struct {
	ClientID   uint32
	ServerTime float32
	Version    uint16
	Suite      uint8
	Identity   [32]byte
	Ephemeral  [32]byte
	Nonce      [16]byte
	Signature  [64]byte
}

// parseAccepted parses a ConnectAccepted payload of exactly 155 bytes.
func parseAccepted(p []byte) (accepted, error) {
	var a accepted
	if len(p) != AcceptedSize {
		return a, fmt.Errorf("ConnectAccepted of %d bytes, want %d", len(p), AcceptedSize)
	}
	a.ClientID = binary.LittleEndian.Uint32(p)
	a.ServerTime = math.Float32frombits(binary.LittleEndian.Uint32(p[4:]))
	a.Version = binary.LittleEndian.Uint16(p[8:])
	a.Suite = p[10]
	copy(a.Identity[:], p[11:43])
	copy(a.Ephemeral[:], p[43:75])
	copy(a.Nonce[:], p[75:91])
	copy(a.Signature[:], p[91:155])
	switch {
	case a.ClientID == 0:
		return a, errors.New("ConnectAccepted assigns client id 0")
	case a.Version != ProtocolVersion:
		return a, fmt.Errorf("ConnectAccepted echoes version %d, want %d", a.Version, ProtocolVersion)
	case a.Suite != Suite:
		return a, fmt.Errorf("ConnectAccepted suite %d, want %d", a.Suite, Suite)
	case math.IsNaN(float64(a.ServerTime)) || math.IsInf(float64(a.ServerTime), 0):
		return a, errors.New("ConnectAccepted server time is not finite")
	}
	return a, nil
}

// transcript is th of §5.3 over the hello and the ConnectAccepted payload.
func transcript(hello, acceptedPayload []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(transcriptLabel))
	h.Write(hello)
	h.Write(acceptedPayload[:acceptPrefixSize])
	h.Write(acceptedPayload[acceptPrefixSize : acceptPrefixSize+signedHelloSize])
	var th [32]byte
	h.Sum(th[:0])
	return th
}

// sessionKeys are the keys of §5.3.
type sessionKeys struct {
	S, C2S, S2C [32]byte
}

// deriveKeys derives S and the two directions' epoch-0 keys from th and ss.
func deriveKeys(th, ss []byte) (sessionKeys, error) {
	var k sessionKeys
	s, err := hkdf.Key(sha256.New, ss, th, sessionLabel, 32)
	if err != nil {
		return k, err
	}
	copy(k.S[:], s)
	c2s, err := hkdf.Expand(sha256.New, s, c2sLabel, 32)
	if err != nil {
		return k, err
	}
	s2c, err := hkdf.Expand(sha256.New, s, s2cLabel, 32)
	if err != nil {
		return k, err
	}
	copy(k.C2S[:], c2s)
	copy(k.S2C[:], s2c)
	return k, nil
}

// ratchet is K_d[e+1] of K_d[e].
func ratchet(k [32]byte) [32]byte {
	var out [32]byte
	n, err := hkdf.Expand(sha256.New, k[:], ratchetLabel, 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 output is always within HKDF's limit
	}
	copy(out[:], n)
	return out
}

// ParsePin parses `ed25519:` and 43 characters of unpadded base64url.
func ParsePin(pin string) ([32]byte, error) {
	var key [32]byte
	rest, ok := strings.CutPrefix(pin, "ed25519:")
	if !ok || len(rest) != 43 {
		return key, fmt.Errorf("pin %q: want ed25519: and 43 base64url characters", pin)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil || len(b) != 32 {
		return key, fmt.Errorf("pin %q: %v", pin, err)
	}
	copy(key[:], b)
	return key, nil
}

// finish verifies a ConnectAccepted payload against the pin and the hello
// (§5.3: identity first, then the signature) and derives the keys.
func (ch *clientHello) finish(payload []byte, pin [32]byte) (accepted, sessionKeys, [32]byte, error) {
	a, err := parseAccepted(payload)
	if err != nil {
		return a, sessionKeys{}, [32]byte{}, err
	}
	if !bytes.Equal(a.Identity[:], pin[:]) {
		return a, sessionKeys{}, [32]byte{}, errors.New("ServerIdentityMismatch: the server's identity key is not the pinned one")
	}
	th := transcript(ch.bytes, payload)
	if !ed25519.Verify(ed25519.PublicKey(a.Identity[:]), th[:], a.Signature[:]) {
		return a, sessionKeys{}, th, errors.New("HandshakeAuthFailed: the ConnectAccepted signature does not verify")
	}
	peer, err := ecdh.X25519().NewPublicKey(a.Ephemeral[:])
	if err != nil {
		return a, sessionKeys{}, th, err
	}
	ss, err := ch.secret.ECDH(peer) // an all-zero ss is an error: abandon
	if err != nil {
		return a, sessionKeys{}, th, fmt.Errorf("key agreement: %w", err)
	}
	k, err := deriveKeys(th[:], ss)
	clear(ss)
	return a, k, th, err
}
