package handshake

import "encoding/binary"

// ClientHello is the Connect payload of §5.1.
type ClientHello struct {
	Version      uint16
	Suite        uint8
	EphemeralPub [KeySize]byte
	Nonce        [NonceSize]byte
}

// Append appends the 55-byte encoding of h to dst.
func (h *ClientHello) Append(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, HandshakeMagic)
	dst = binary.LittleEndian.AppendUint16(dst, h.Version)
	dst = append(dst, h.Suite)
	dst = append(dst, h.EphemeralPub[:]...)
	return append(dst, h.Nonce[:]...)
}

// CheckClientHello applies the ClientHello checks of §5.5 in their exact order
// and returns the parsed hello with RejectNone, or the reason to send in the
// ConnectRejected:
//
//  1. ProtocolMissing: shorter than 6 bytes, or no SPNH magic;
//  2. ProtocolTooOld / ProtocolTooNew: version < 3 / > 3, judged before the
//     length so that a longer hello of a future version is still told TooNew;
//  3. MalformedHandshake: length ≠ 55;
//  4. UnsupportedSuite: suite ≠ 1;
//  5. MalformedHandshake: a small-order ephemeral key, before any curve work.
//
// Banned and ServerFull come after these and are the caller's. It never
// allocates and never panics.
func CheckClientHello(payload []byte) (ClientHello, RejectReason) {
	var h ClientHello
	if len(payload) < 6 || binary.LittleEndian.Uint32(payload) != HandshakeMagic {
		return h, RejectProtocolMissing
	}
	h.Version = binary.LittleEndian.Uint16(payload[offHelloVersion:])
	switch {
	case h.Version < ProtocolVersion:
		return h, RejectProtocolTooOld
	case h.Version > ProtocolVersion:
		return h, RejectProtocolTooNew
	}
	if len(payload) != ClientHelloSize {
		return h, RejectMalformedHandshake
	}
	h.Suite = payload[offHelloSuite]
	if h.Suite != SuiteX25519 {
		return h, RejectUnsupportedSuite
	}
	copy(h.EphemeralPub[:], payload[offHelloEphemeral:])
	copy(h.Nonce[:], payload[offHelloNonce:])
	if IsSmallOrder(&h.EphemeralPub) {
		return h, RejectMalformedHandshake
	}
	return h, RejectNone
}

// smallOrder is libsodium's list of X25519 public keys of small order (the
// blocklist of crypto_scalarmult_curve25519's has_small_order), little-endian:
// 0, 1, the two points of order 8, p-1, p and p+1. Any clamped scalar times one
// of them is the all-zero shared secret.
var smallOrder = [7][KeySize]byte{
	{},  // 0 (order 4)
	{1}, // 1 (order 1)
	{ // order 8: 325606250916557431795983626356110631294008115727848805560023387167927233504
		0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
		0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00,
	},
	{ // order 8: 39382357235489614581723060781553021112529911719440698176882885853963445705823
		0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b,
		0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57,
	},
	{ // p-1 (order 2)
		0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
	},
	{ // p = 0 (order 4)
		0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
	},
	{ // p+1 = 1 (order 1)
		0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
	},
}

// IsSmallOrder reports whether pub, with bit 255 cleared (X25519 ignores it),
// is one of the 7 small-order encodings. Ephemeral public keys are public, so
// a plain comparison leaks nothing and keeps refusing a flood cheap.
func IsSmallOrder(pub *[KeySize]byte) bool {
	k := *pub
	k[31] &= 0x7f
	for i := range smallOrder {
		if k == smallOrder[i] {
			return true
		}
	}
	return false
}
