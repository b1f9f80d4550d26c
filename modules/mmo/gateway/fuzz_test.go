package gateway

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// FuzzParse: any bytes parse or fail with ErrMalformed, never panic; what
// parses re-encodes to the same signed part; Verify of hostile bytes never
// panics and never accepts a ticket the fixed world key did not sign.
// Seeds: testdata/fuzz/FuzzParse (a valid ticket, the longest one, and
// broken ones).
func FuzzParse(f *testing.F) {
	seed := bytes.Repeat([]byte{0x42}, ed25519.SeedSize)
	world := ed25519.NewKeyFromSeed(seed)
	client := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x43}, ed25519.SeedSize))
	st, err := Sign(world, sample(client))
	if err != nil {
		f.Fatal(err)
	}
	long := sample(client)
	long.Account, long.Character = "a23456789012345678901234", "Abcdefghijklmnop"
	lst, err := Sign(world, long)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(Present(st, client, [32]byte{}))
	f.Add([]byte{Version})
	wpub := world.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, p []byte) {
		pt, err := Parse(p)
		if err != nil {
			if err != ErrMalformed {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(p) < MinLen || len(p) > MaxLen {
			t.Fatalf("parsed %d bytes", len(p))
		}
		if !bytes.Equal(pt.signedTicket, p[:len(p)-SigLen]) {
			t.Fatal("the signed part is not the input less the proof")
		}
		if pt.Verify(wpub, [32]byte{}) == nil && !bytes.Equal(pt.signedTicket, st) && !bytes.Equal(pt.signedTicket, lst) {
			t.Fatal("a ticket the world key never signed verified")
		}
	})
}
