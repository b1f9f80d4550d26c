package handshake_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

// FuzzCheckClientHello: never panics, returns only the five reasons it owns,
// and accepts exactly the well-formed hellos, which re-encode byte for byte.
func FuzzCheckClientHello(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.ClientHello))
	f.Add([]byte(v.ClientHello[:6]))
	f.Add(append(bytes.Clone(v.ClientHello), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, reason := handshake.CheckClientHello(p)
		if reason > handshake.RejectUnsupportedSuite {
			t.Fatalf("reason %d is not CheckClientHello's", reason)
		}
		if reason != handshake.RejectNone {
			return
		}
		if len(p) != handshake.ClientHelloSize || binary.LittleEndian.Uint32(p) != handshake.HandshakeMagic ||
			h.Version != 3 || h.Suite != 1 || handshake.IsSmallOrder(&h.EphemeralPub) {
			t.Fatalf("accepted a bad hello %x", p)
		}
		if !bytes.Equal(h.Append(nil), p) {
			t.Fatalf("accepted hello does not re-encode: %x", p)
		}
	})
}

// FuzzClientFinish: the client parses any ConnectAccepted without panicking,
// and accepts only the genuine one — the payload is fully bound by the
// transcript and Go's Ed25519 rejects non-canonical signatures.
func FuzzClientFinish(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.AcceptedPayload))
	f.Add([]byte(v.AcceptedPayload[:handshake.AcceptPrefixSize]))
	f.Add(append(bytes.Clone(v.AcceptedPayload), 0))
	f.Add([]byte{})
	secret, nonce := arr32(v.Inputs.ClientSecret), arr16(v.Inputs.ClientNonce)
	pin := pinVerifier(v.IdentityPub)
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := handshake.NewClientHandshakeWith(secret, nonce)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Finish(p, pin)
		if err == nil && (res == nil || !bytes.Equal(p, v.AcceptedPayload)) {
			t.Fatalf("accepted a forged ConnectAccepted %x", p)
		}
		if err != nil && res != nil {
			t.Fatal("result returned with an error")
		}
	})
}

// FuzzCheckClientHello4: never panics, returns only its own reasons, and
// accepts exactly the well-formed v4 hellos: 1176 bytes, version 4, suite 1,
// cookie_len ≤ 64, zero padding, no small-order key. An accepted hello
// re-encodes byte for byte and its cookie aliases the payload.
func FuzzCheckClientHello4(f *testing.F) {
	v := loadVectors4(f)
	f.Add([]byte(v.Hello))
	f.Add([]byte(v.HelloWithCookie))
	f.Add([]byte(v.Hello[:handshake.HelloCoreSize]))
	f.Add(append(bytes.Clone(v.Hello), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, reason := handshake.CheckClientHello4(p)
		switch reason {
		case handshake.RejectNone, handshake.RejectProtocolMissing, handshake.RejectMalformedHandshake, handshake.RejectUnsupportedSuite:
		default:
			t.Fatalf("reason %d is not CheckClientHello4's", reason)
		}
		if reason != handshake.RejectNone {
			return
		}
		if len(p) != handshake.ClientHello4Size || h.Version != 4 || h.Suite != 1 ||
			len(h.Cookie) > handshake.MaxCookieSize || handshake.IsSmallOrder(&h.EphemeralPub) {
			t.Fatalf("accepted a bad hello %x", p)
		}
		core := h.ClientHello
		if got := handshake.AppendClientHello4(nil, &core, h.Cookie); !bytes.Equal(got, p) {
			t.Fatalf("accepted hello does not re-encode: %x", p)
		}
	})
}

// FuzzParseCookieReply: never panics; accepts exactly version 4, a cookie of
// 1..64 bytes and nothing after it, and re-encodes byte for byte.
func FuzzParseCookieReply(f *testing.F) {
	v := loadVectors4(f)
	f.Add([]byte(v.CookieReply))
	f.Add([]byte(v.CookieReply[:handshake.CookieReplyMinSize-1]))
	f.Add(append(bytes.Clone(v.CookieReply), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := handshake.ParseCookieReply(p)
		if err != nil {
			return
		}
		if len(r.Cookie) < 1 || len(r.Cookie) > handshake.MaxCookieSize {
			t.Fatalf("accepted a cookie of %d bytes", len(r.Cookie))
		}
		if got := handshake.AppendCookieReply(nil, &r.Nonce, r.Cookie); !bytes.Equal(got, p) {
			t.Fatalf("accepted reply does not re-encode: %x", p)
		}
	})
}
