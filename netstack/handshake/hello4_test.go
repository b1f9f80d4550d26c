package handshake_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

func TestCheckClientHello4Order(t *testing.T) {
	v := loadVectors4(t)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(v.Hello)) }
	cases := []struct {
		name string
		p    []byte
		want handshake.RejectReason
	}{
		{"valid", v.Hello, handshake.RejectNone},
		{"valid with cookie", v.HelloWithCookie, handshake.RejectNone},
		{"5 bytes", v.Hello[:5], handshake.RejectProtocolMissing},
		{"no magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), handshake.RejectProtocolMissing},
		{"version 3, padded", mod(func(b []byte) []byte { b[4] = 3; return b }), handshake.RejectMalformedHandshake},
		{"1175 bytes", v.Hello[:1175], handshake.RejectMalformedHandshake},
		{"1177 bytes", append(bytes.Clone(v.Hello), 0), handshake.RejectMalformedHandshake},
		{"suite 2", mod(func(b []byte) []byte { b[6] = 2; return b }), handshake.RejectUnsupportedSuite},
		// The suite is judged before the cookie and the padding.
		{"suite 2, bad padding", mod(func(b []byte) []byte { b[6] = 2; b[1000] = 1; return b }), handshake.RejectUnsupportedSuite},
		{"cookie_len 65", mod(func(b []byte) []byte { b[55] = 65; return b }), handshake.RejectMalformedHandshake},
		{"nonzero padding", mod(func(b []byte) []byte { b[1175] = 1; return b }), handshake.RejectMalformedHandshake},
		{"cookie byte beyond cookie_len", mod(func(b []byte) []byte { b[55] = 2; b[58] = 1; return b }), handshake.RejectMalformedHandshake},
		{"small-order key", mod(func(b []byte) []byte { clear(b[7:39]); return b }), handshake.RejectMalformedHandshake},
	}
	for _, tc := range cases {
		h, reason := handshake.CheckClientHello4(tc.p)
		if reason != tc.want {
			t.Errorf("%s: reason %d, want %d", tc.name, reason, tc.want)
		}
		if tc.name == "valid with cookie" && !bytes.Equal(h.Cookie, v.Cookie) {
			t.Errorf("cookie %x, want %x", h.Cookie, v.Cookie)
		}
	}
	if ver, r := handshake.PeekVersion(v.Hello); ver != 4 || r != handshake.RejectNone {
		t.Errorf("PeekVersion = %d, %d", ver, r)
	}
}

// A v4 handshake refuses a v3 answer (and the reverse): the echoed version
// must be the hello's, so no answer of one version completes the other.
func TestFinishChecksTheVersion(t *testing.T) {
	v3, v4 := loadVectors(t), loadVectors4(t)
	c4, _ := handshake.NewClientHandshake4With(arr32(v4.Inputs.ClientSecret), arr16(v4.Inputs.ClientNonce))
	if _, err := c4.Finish(v3.AcceptedPayload, pinVerifier(v3.IdentityPub)); !errors.Is(err, handshake.ErrVersionMismatch) {
		t.Fatalf("v4 handshake, v3 answer: %v", err)
	}
	c3, _ := handshake.NewClientHandshakeWith(arr32(v3.Inputs.ClientSecret), arr16(v3.Inputs.ClientNonce))
	if _, err := c3.Finish(v4.AcceptedPayload, pinVerifier(v3.IdentityPub)); !errors.Is(err, handshake.ErrVersionMismatch) {
		t.Fatalf("v3 handshake, v4 answer: %v", err)
	}
	// A v4 answer with its version byte changed to 3 fails the signature.
	forged := bytes.Clone(v4.AcceptedPayload)
	forged[8] = 3
	c3b, _ := handshake.NewClientHandshakeWith(arr32(v3.Inputs.ClientSecret), arr16(v3.Inputs.ClientNonce))
	if _, err := c3b.Finish(forged, pinVerifier(v3.IdentityPub)); !errors.Is(err, handshake.ErrHandshakeAuthFailed) {
		t.Fatalf("relabelled answer: %v", err)
	}
}
