package handshake_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

func acceptAny([32]byte) error { return nil }

// resign rebuilds a ConnectAccepted from the vector one with mutate applied to
// bytes 0..90 and a valid signature by the real identity over the new
// transcript: what a compromised or buggy server could send.
func resign(f *fixture, mutate func(p []byte)) []byte {
	p := bytes.Clone(f.v.AcceptedPayload)
	mutate(p)
	th := handshake.Transcript(f.v.ClientHello, p[:10], p[10:91])
	copy(p[91:], ed25519.Sign(f.id.Private, th[:]))
	return p
}

func TestFinishTamper(t *testing.T) {
	f := newFixture(t)
	pin := pinVerifier(f.v.IdentityPub)

	t.Run("every byte flip", func(t *testing.T) {
		for off := 0; off < handshake.ConnectAcceptedSize; off++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				p := bytes.Clone(f.v.AcceptedPayload)
				p[off] ^= x
				var want error
				switch {
				case off == 8 || off == 9:
					want = handshake.ErrVersionMismatch
				case off == 10:
					want = handshake.ErrSuiteMismatch
				case off >= 11 && off < 43:
					want = handshake.ErrServerIdentityMismatch
				default:
					want = handshake.ErrHandshakeAuthFailed
				}
				res, err := f.client.Finish(p, pin)
				if res != nil || !errors.Is(err, want) {
					t.Fatalf("offset %d ^%#x: %v, want %v", off, x, err, want)
				}
				// With a verifier that trusts any key (first use), an identity
				// flip is still caught by the signature.
				if off >= 11 && off < 43 {
					if _, err := f.client.Finish(p, acceptAny); !errors.Is(err, handshake.ErrHandshakeAuthFailed) {
						t.Fatalf("offset %d ^%#x with TOFU: %v, want auth failure", off, x, err)
					}
				}
			}
		}
	})
	t.Run("pin mismatch wraps the verifier error", func(t *testing.T) {
		p := bytes.Clone(f.v.AcceptedPayload)
		p[20] ^= 1
		_, err := f.client.Finish(p, pin)
		if !errors.Is(err, handshake.ErrServerIdentityMismatch) || !errors.Is(err, errPinMismatch) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("nil verifier fails closed", func(t *testing.T) {
		if _, err := f.client.Finish(f.v.AcceptedPayload, nil); !errors.Is(err, handshake.ErrServerIdentityMismatch) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("every truncation and extension", func(t *testing.T) {
		for n := 0; n <= 2*handshake.ConnectAcceptedSize; n++ {
			if n == handshake.ConnectAcceptedSize {
				continue
			}
			p := make([]byte, n)
			copy(p, f.v.AcceptedPayload)
			if _, err := f.client.Finish(p, pin); !errors.Is(err, handshake.ErrMalformedAccept) {
				t.Fatalf("length %d: %v", n, err)
			}
		}
	})
	t.Run("signed downgrades", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			mutate func(p []byte)
			want   error
		}{
			{"version 2", func(p []byte) { binary.LittleEndian.PutUint16(p[8:], 2) }, handshake.ErrVersionMismatch},
			{"version 4", func(p []byte) { binary.LittleEndian.PutUint16(p[8:], 4) }, handshake.ErrVersionMismatch},
			{"suite 0", func(p []byte) { p[10] = 0 }, handshake.ErrSuiteMismatch},
			{"suite 2", func(p []byte) { p[10] = 2 }, handshake.ErrSuiteMismatch},
			{"client id 0", func(p []byte) { clear(p[0:4]) }, handshake.ErrInvalidClientID},
		} {
			t.Run(c.name, func(t *testing.T) {
				if _, err := f.client.Finish(resign(f, c.mutate), pin); !errors.Is(err, c.want) {
					t.Fatalf("%v, want %v", err, c.want)
				}
			})
		}
	})
	t.Run("ServerHello replayed from another session", func(t *testing.T) {
		other, err := handshake.NewClientHandshake(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Finish(f.v.AcceptedPayload, pin); !errors.Is(err, handshake.ErrHandshakeAuthFailed) {
			t.Fatalf("vector answer to another hello: %v", err)
		}
		h, _ := handshake.CheckClientHello(other.Hello())
		res, err := handshake.Accept(f.id, other.Hello(), h, 8, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.Finish(res.Payload[:], pin); !errors.Is(err, handshake.ErrHandshakeAuthFailed) {
			t.Fatalf("other session's answer to the vector hello: %v", err)
		}
		// Splicing the other session's ServerHello onto our prefix fails too.
		spliced := append(bytes.Clone(f.v.AcceptPrefix), res.Payload[10:]...)
		if _, err := f.client.Finish(spliced, pin); !errors.Is(err, handshake.ErrHandshakeAuthFailed) {
			t.Fatalf("spliced ServerHello: %v", err)
		}
	})
	t.Run("signed small-order server key abandons", func(t *testing.T) {
		for i, pt := range handshake.SmallOrderPoints {
			c, _ := handshake.NewClientHandshakeWith(arr32(f.v.Inputs.ClientSecret), arr16(f.v.Inputs.ClientNonce))
			p := resign(f, func(p []byte) { copy(p[43:75], pt[:]) })
			if _, err := c.Finish(p, pin); !errors.Is(err, handshake.ErrAbandon) {
				t.Fatalf("point %d: %v, want ErrAbandon", i, err)
			}
			if _, err := c.Finish(f.v.AcceptedPayload, pin); !errors.Is(err, handshake.ErrHandshakeDone) {
				t.Fatalf("point %d: abandoned handshake still usable: %v", i, err)
			}
		}
	})
	// Everything above failed on f.client; the genuine answer must still work.
	t.Run("genuine answer after failures", func(t *testing.T) {
		if _, err := f.client.Finish(f.v.AcceptedPayload, pin); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRoundTripRandom(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		c, err := handshake.NewClientHandshake(nil)
		if err != nil {
			t.Fatal(err)
		}
		h, reason := handshake.CheckClientHello(c.Hello())
		if reason != handshake.RejectNone {
			t.Fatalf("reason %d", reason)
		}
		id := uint32(i + 1)
		sr, err := handshake.Accept(f.id, c.Hello(), h, id, float32(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := c.Finish(sr.Payload[:], pinVerifier(f.id.Public[:]))
		if err != nil {
			t.Fatal(err)
		}
		if cr.ClientID != id || cr.ServerTime != float32(i) || cr.TH != sr.TH || cr.C2S != sr.C2S || cr.S2C != sr.S2C || cr.C2S == cr.S2C {
			t.Fatalf("session %d: client and server disagree", i)
		}
	}
}

func TestAcceptInputs(t *testing.T) {
	f := newFixture(t)
	hello := f.v.ClientHello
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"client id 0", func() error { _, err := handshake.Accept(f.id, hello, f.hello, 0, 0, nil); return err }},
		{"nil identity", func() error { _, err := handshake.Accept(nil, hello, f.hello, 1, 0, nil); return err }},
		{"hello differs from payload", func() error {
			h := f.hello
			h.Nonce[0] ^= 1
			_, err := handshake.Accept(f.id, hello, h, 1, 0, nil)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	t.Run("short payload is a MalformedHandshake reject", func(t *testing.T) {
		_, err := handshake.Accept(f.id, hello[:54], f.hello, 1, 0, nil)
		var re *handshake.RejectError
		if !errors.As(err, &re) || re.Reason != handshake.RejectMalformedHandshake {
			t.Fatalf("%v", err)
		}
	})
	t.Run("identity whose public half is wrong", func(t *testing.T) {
		bad := bytes.Clone(f.id.Private)
		bad[40] ^= 1
		if _, err := handshake.NewServerIdentity(bad); err == nil {
			t.Fatal("accepted")
		}
		if _, err := handshake.NewServerIdentity(bad[:63]); err == nil {
			t.Fatal("accepted short key")
		}
	})
}
