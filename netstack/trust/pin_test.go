package trust

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// From ../shared/spec/vectors-v3.json: server_ed25519_seed, its public key, its pin.
const (
	vectorSeed = "4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60"
	vectorPub  = "adc14011f82d1c56d956aa4f9d73d8858361a606048525e0d08c638dc75dd8c7"
	vectorPin  = "ed25519:rcFAEfgtHFbZVqpPnXPYhYNhpgYEhSXg0Ixjjcdd2Mc"
)

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPinVector(t *testing.T) {
	pub := mustHex(t, vectorPub)
	if got := Pin(pub); got != vectorPin {
		t.Fatalf("Pin = %s, want %s", got, vectorPin)
	}
	if len(vectorPin) != len(PinPrefix)+43 {
		t.Fatalf("pin length %d", len(vectorPin))
	}
	key, err := ParsePin(vectorPin)
	if err != nil || !bytes.Equal(key[:], pub) {
		t.Fatalf("ParsePin = %x, %v", key, err)
	}
	derived := ed25519.NewKeyFromSeed(mustHex(t, vectorSeed)).Public().(ed25519.PublicKey)
	if Pin(derived) != vectorPin {
		t.Fatalf("seed's public key has pin %s", Pin(derived))
	}
}

func TestPinPanicsOnWrongLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Pin accepted a 31-byte key")
		}
	}()
	Pin(make([]byte, 31))
}

func TestParsePinErrors(t *testing.T) {
	const tail = `; a pin is "ed25519:" followed by 43 base64url characters`
	key := vectorPin[len(PinPrefix):]
	cases := []struct{ in, msg string }{
		{"", `trust: bad pin "": does not start with "ed25519:"`},
		{key, `trust: bad pin "` + key + `": does not start with "ed25519:"`},
		{"ED25519:" + key, `trust: bad pin "ED25519:` + key + `": does not start with "ed25519:"`},
		{"ssh-ed25519:" + key, `trust: bad pin "ssh-ed25519:` + key + `": does not start with "ed25519:"`},
		{" " + vectorPin, `trust: bad pin " ` + vectorPin + `": does not start with "ed25519:"`},
		{vectorPin + "=", `trust: bad pin "` + vectorPin + `=": has '=' padding (pins are base64url without padding)`},
		{vectorPin[:50], `trust: bad pin "` + vectorPin[:50] + `": key is 42 characters, want 43`},
		{vectorPin + "A", `trust: bad pin "` + vectorPin + `A": key is 44 characters, want 43`},
		{"ed25519:", `trust: bad pin "ed25519:": key is 0 characters, want 43`},
		{vectorPin[:50] + "+", `trust: bad pin "` + vectorPin[:50] + `+": character '+' is not base64url (A-Z a-z 0-9 - _)`},
		{vectorPin[:50] + "/", `trust: bad pin "` + vectorPin[:50] + `/": character '/' is not base64url (A-Z a-z 0-9 - _)`},
		{vectorPin[:50] + " ", `trust: bad pin "` + vectorPin[:50] + ` ": character ' ' is not base64url (A-Z a-z 0-9 - _)`},
		{vectorPin[:50] + "d", `trust: bad pin "` + vectorPin[:50] + `d": last character is not a canonical encoding`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			key, err := ParsePin(tc.in)
			if !errors.Is(err, ErrBadPin) {
				t.Fatalf("ParsePin(%q) = %x, %v; want ErrBadPin", tc.in, key, err)
			}
			if err.Error() != tc.msg+tail {
				t.Errorf("message\n got %s\nwant %s", err, tc.msg+tail)
			}
			if key != [32]byte{} {
				t.Errorf("ParsePin returned a key with its error")
			}
		})
	}
}

func TestPinRoundTrip(t *testing.T) {
	for i := range 64 {
		pub := bytes.Repeat([]byte{byte(i * 37)}, 32)
		pub[0] = byte(i)
		pin := Pin(pub)
		if !strings.HasPrefix(pin, PinPrefix) || len(pin) != 51 {
			t.Fatalf("Pin(%x) = %q", pub, pin)
		}
		key, err := ParsePin(pin)
		if err != nil || !bytes.Equal(key[:], pub) {
			t.Fatalf("ParsePin(Pin(%x)) = %x, %v", pub, key, err)
		}
	}
}
