package handshake

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol v4 handshake frames (docs/protocol.md §3): the padded ClientHello
// and the CookieReply of address validation.
const (
	// ProtocolVersion4 is the version a v4 ClientHello carries.
	ProtocolVersion4 uint16 = 4

	// ClientHello4Size is the exact size of a v4 ClientHello (the Connect
	// payload). With the frame byte and the 23-byte packet header the Connect
	// datagram is HelloDatagramSize bytes, so that every answer the server
	// sends before the source is validated is smaller than what it received.
	ClientHello4Size = 1176
	// HelloDatagramSize is the size of a v4 Connect datagram: 0x01 ‖ header ‖ hello.
	HelloDatagramSize = 1 + 23 + ClientHello4Size

	// HelloCoreSize is the part of a ClientHello that identifies it: magic,
	// version, suite, ephemeral key and nonce (bytes 0..54, the whole v3
	// hello). The v4 transcript and the cookie cover exactly these bytes.
	HelloCoreSize = ClientHelloSize

	// MaxCookieSize bounds the cookie a CookieReply carries and a hello echoes.
	MaxCookieSize = 64

	// CookieReplyMinSize and CookieReplyMaxSize bound the CookieReply payload:
	// version u16, client nonce [16], cookie_len u8, cookie [cookie_len ≥ 1].
	CookieReplyMinSize = 2 + NonceSize + 1 + 1
	CookieReplyMaxSize = 2 + NonceSize + 1 + MaxCookieSize
)

// Offsets inside the v4 ClientHello beyond the core.
const (
	offHelloCookieLen = HelloCoreSize
	offHelloCookie    = HelloCoreSize + 1
)

// ClientHello4 is a parsed v4 ClientHello: the core fields and the echoed
// cookie (empty in a first hello).
type ClientHello4 struct {
	ClientHello
	// Cookie aliases the payload it was parsed from; empty when cookie_len is 0.
	Cookie []byte
}

// PeekVersion applies the first check of every ClientHello, whatever its
// version: at least 6 bytes starting with the SPNH magic (else
// ProtocolMissing). It returns the version field, which the caller judges
// before the length so that a longer hello of a future version can still be
// told ProtocolTooNew.
func PeekVersion(payload []byte) (uint16, RejectReason) {
	if len(payload) < 6 || binary.LittleEndian.Uint32(payload) != HandshakeMagic {
		return 0, RejectProtocolMissing
	}
	return binary.LittleEndian.Uint16(payload[offHelloVersion:]), RejectNone
}

// CheckClientHello4 applies the v4 ClientHello checks in their normative order
// and returns the parsed hello with RejectNone, or the reason to answer:
//
//  1. ProtocolMissing: shorter than 6 bytes or no SPNH magic; a version other
//     than 4 is the caller's (it is never accepted here: MalformedHandshake);
//  2. MalformedHandshake: length ≠ 1176;
//  3. UnsupportedSuite: suite ≠ 1;
//  4. MalformedHandshake: cookie_len > 64, or a nonzero byte after the cookie
//     (the padding must be zero);
//  5. MalformedHandshake: a small-order ephemeral key, before any curve work.
//
// It never allocates and never panics; Cookie aliases payload.
func CheckClientHello4(payload []byte) (ClientHello4, RejectReason) {
	var h ClientHello4
	v, reason := PeekVersion(payload)
	if reason != RejectNone {
		return h, reason
	}
	h.Version = v
	if v != ProtocolVersion4 || len(payload) != ClientHello4Size {
		return h, RejectMalformedHandshake
	}
	h.Suite = payload[offHelloSuite]
	if h.Suite != SuiteX25519 {
		return h, RejectUnsupportedSuite
	}
	n := int(payload[offHelloCookieLen])
	if n > MaxCookieSize || !allZero(payload[offHelloCookie+n:]) {
		return h, RejectMalformedHandshake
	}
	copy(h.EphemeralPub[:], payload[offHelloEphemeral:])
	copy(h.Nonce[:], payload[offHelloNonce:])
	if IsSmallOrder(&h.EphemeralPub) {
		return h, RejectMalformedHandshake
	}
	if n > 0 {
		h.Cookie = payload[offHelloCookie : offHelloCookie+n]
	}
	return h, RejectNone
}

func allZero(b []byte) bool {
	var acc byte
	for _, c := range b {
		acc |= c
	}
	return acc == 0
}

// AppendClientHello4 appends the 1176-byte v4 ClientHello with the core fields
// of h (its Version is ignored: 4 is written) and cookie (nil for a first
// hello; at most MaxCookieSize bytes, longer is a programming error and panics).
func AppendClientHello4(dst []byte, h *ClientHello, cookie []byte) []byte {
	if len(cookie) > MaxCookieSize {
		panic("handshake: cookie longer than MaxCookieSize")
	}
	core := ClientHello{Version: ProtocolVersion4, Suite: h.Suite, EphemeralPub: h.EphemeralPub, Nonce: h.Nonce}
	start := len(dst)
	dst = core.Append(dst)
	dst = append(dst, byte(len(cookie)))
	dst = append(dst, cookie...)
	return append(dst, make([]byte, ClientHello4Size-(len(dst)-start))...)
}

// CookieReply is the payload of the server's answer to a v4 hello from a
// source that has not proven its address yet.
type CookieReply struct {
	// Nonce echoes the client nonce of the hello it answers.
	Nonce [NonceSize]byte
	// Cookie is opaque to the client, which echoes it byte for byte. It
	// aliases the payload it was parsed from.
	Cookie []byte
}

// ErrMalformedCookieReply: a CookieReply that does not parse (a client drops it).
var ErrMalformedCookieReply = errors.New("handshake: malformed CookieReply")

// AppendCookieReply appends the CookieReply payload: version 4, the echoed
// nonce, cookie_len and the cookie (1..MaxCookieSize bytes; other lengths are
// a programming error and panic).
func AppendCookieReply(dst []byte, nonce *[NonceSize]byte, cookie []byte) []byte {
	if len(cookie) < 1 || len(cookie) > MaxCookieSize {
		panic("handshake: cookie length outside 1..MaxCookieSize")
	}
	dst = binary.LittleEndian.AppendUint16(dst, ProtocolVersion4)
	dst = append(dst, nonce[:]...)
	dst = append(dst, byte(len(cookie)))
	return append(dst, cookie...)
}

// ParseCookieReply checks a CookieReply payload: version 4, cookie_len 1..64
// and exactly that many bytes after it. It never allocates: Cookie aliases p.
func ParseCookieReply(p []byte) (CookieReply, error) {
	var r CookieReply
	if len(p) < CookieReplyMinSize || len(p) > CookieReplyMaxSize {
		return r, fmt.Errorf("%w: %d bytes", ErrMalformedCookieReply, len(p))
	}
	if v := binary.LittleEndian.Uint16(p); v != ProtocolVersion4 {
		return r, fmt.Errorf("%w: version %d", ErrMalformedCookieReply, v)
	}
	copy(r.Nonce[:], p[2:])
	n := int(p[2+NonceSize])
	if n < 1 || len(p) != 2+NonceSize+1+n {
		return r, fmt.Errorf("%w: cookie_len %d in %d bytes", ErrMalformedCookieReply, n, len(p))
	}
	r.Cookie = p[2+NonceSize+1:]
	return r, nil
}
