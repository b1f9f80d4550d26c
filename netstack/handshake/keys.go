package handshake

import (
	"crypto/hkdf"
	"crypto/sha256"
)

// Labels of the key schedule (§5.3): ASCII bytes, no terminator. Protocol v4
// uses its own transcript and session labels, so that no transcript or
// session secret of one version can ever be taken for one of the other.
const (
	TranscriptLabel   = "SPNH-v3"
	TranscriptLabelV4 = "SPNH-v4"
	sessionLabel      = "spark-net-100 session v3"
	sessionLabelV4    = "spark-net-100 session v4"
	c2sLabel          = "spark-net-100 c2s"
	s2cLabel          = "spark-net-100 s2c"
	ratchetLabel      = "spark-net-100 ratchet"
)

// Transcript returns th = SHA-256("SPNH-v3" ‖ clientHello ‖ acceptPrefix ‖
// serverHello81), where serverHello81 is ServerHello bytes 0..80 (everything
// but the signature). Callers pass exactly 55, 10 and 81 bytes; the hash binds
// the server's answer to this client's hello and ephemeral key.
func Transcript(clientHello, acceptPrefix, serverHello81 []byte) [KeySize]byte {
	return transcript(ProtocolVersion, clientHello, acceptPrefix, serverHello81)
}

// TranscriptV4 returns the v4 th = SHA-256("SPNH-v4" ‖ hello core ‖
// acceptPrefix ‖ serverHello81): the core is bytes 0..54 of the v4 ClientHello
// (magic, version, suite, ephemeral key, nonce); the cookie and the padding are
// not part of it.
func TranscriptV4(helloCore, acceptPrefix, serverHello81 []byte) [KeySize]byte {
	return transcript(ProtocolVersion4, helloCore, acceptPrefix, serverHello81)
}

func transcript(version uint16, clientHello, acceptPrefix, serverHello81 []byte) [KeySize]byte {
	label := TranscriptLabel
	if version == ProtocolVersion4 {
		label = TranscriptLabelV4
	}
	// One stack buffer and Sum256: no allocation, one pass.
	var buf [len(TranscriptLabel) + ClientHelloSize + AcceptPrefixSize + ServerHelloSignedSize]byte
	b := append(buf[:0], label...)
	b = append(b, clientHello...)
	b = append(b, acceptPrefix...)
	b = append(b, serverHello81...)
	return sha256.Sum256(b)
}

// DeriveSessionKeys derives the epoch-0 keys of both directions from the shared
// secret ss and the transcript hash th:
//
//	S        = HKDF-SHA256(salt = th, ikm = ss, info = "spark-net-100 session v3", L = 32)
//	K_c2s[0] = HKDF-Expand(S, "spark-net-100 c2s", 32)
//	K_s2c[0] = HKDF-Expand(S, "spark-net-100 s2c", 32)
//
// S is zeroed before returning.
func DeriveSessionKeys(ss, th [KeySize]byte) (c2s, s2c [KeySize]byte) {
	return deriveSessionKeys(ProtocolVersion, ss, th)
}

// DeriveSessionKeysV4 is DeriveSessionKeys with the v4 session label
// "spark-net-100 session v4"; the direction and ratchet labels are shared.
func DeriveSessionKeysV4(ss, th [KeySize]byte) (c2s, s2c [KeySize]byte) {
	return deriveSessionKeys(ProtocolVersion4, ss, th)
}

func deriveSessionKeys(version uint16, ss, th [KeySize]byte) (c2s, s2c [KeySize]byte) {
	s := sessionSecret(version, ss, th)
	c2s = expand(s[:], c2sLabel)
	s2c = expand(s[:], s2cLabel)
	clear(s[:])
	clear(ss[:])
	return c2s, s2c
}

// sessionSecret returns S; split out so the vector test can check it.
func sessionSecret(version uint16, ss, th [KeySize]byte) [KeySize]byte {
	label := sessionLabel
	if version == ProtocolVersion4 {
		label = sessionLabelV4
	}
	// hkdf.Key only fails for lengths above 255*32; 32 cannot.
	out, err := hkdf.Key(sha256.New, ss[:], th[:], label, KeySize)
	if err != nil {
		panic("handshake: hkdf.Key: " + err.Error())
	}
	var s [KeySize]byte
	copy(s[:], out)
	clear(out)
	return s
}

// Ratchet returns the next epoch key of a direction: K[e+1] = HKDF-Expand(K[e],
// "spark-net-100 ratchet", 32). The two directions ratchet independently; the
// caller zeroes K[e] once it is retired.
func Ratchet(k [KeySize]byte) [KeySize]byte {
	next := expand(k[:], ratchetLabel)
	clear(k[:])
	return next
}

func expand(prk []byte, info string) [KeySize]byte {
	out, err := hkdf.Expand(sha256.New, prk, info, KeySize)
	if err != nil {
		panic("handshake: hkdf.Expand: " + err.Error())
	}
	var k [KeySize]byte
	copy(k[:], out)
	clear(out)
	return k
}
