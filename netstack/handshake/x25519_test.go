package handshake

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// TestX25519MatchesECDH checks the server's X25519 against crypto/ecdh on
// random scalars and points, including points with bit 255 set.
func TestX25519MatchesECDH(t *testing.T) {
	for i := range 200 {
		var a, b [KeySize]byte
		rand.Read(a[:])
		rand.Read(b[:])
		ka, _ := ecdh.X25519().NewPrivateKey(a[:])
		kb, _ := ecdh.X25519().NewPrivateKey(b[:])

		var pub [KeySize]byte
		x25519Base(&pub, &a)
		if !bytes.Equal(pub[:], ka.PublicKey().Bytes()) {
			t.Fatalf("case %d: public key %x, ecdh %x", i, pub, ka.PublicKey().Bytes())
		}
		var peer [KeySize]byte
		copy(peer[:], kb.PublicKey().Bytes())
		if i%2 == 1 {
			peer[31] |= 0x80 // X25519 ignores bit 255
		}
		var ss [KeySize]byte
		x25519(&ss, &a, &peer)
		want, err := ka.ECDH(kb.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ss[:], want) {
			t.Fatalf("case %d: shared secret %x, ecdh %x", i, ss, want)
		}
	}
}

// TestX25519RFC7748 is the first test vector of RFC 7748 §5.2.
func TestX25519RFC7748(t *testing.T) {
	scalar := unhex32(t, "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
	point := unhex32(t, "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
	want := unhex32(t, "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
	var got [KeySize]byte
	x25519(&got, &scalar, &point)
	if got != want {
		t.Fatalf("got %x want %x", got, want)
	}
}

func BenchmarkX25519Base(b *testing.B) {
	var s, out [KeySize]byte
	rand.Read(s[:])
	for b.Loop() {
		x25519Base(&out, &s)
	}
}

func BenchmarkX25519(b *testing.B) {
	var s, p, out [KeySize]byte
	rand.Read(s[:])
	x25519Base(&p, &s)
	for b.Loop() {
		x25519(&out, &s, &p)
	}
}

func unhex32(t *testing.T, s string) [KeySize]byte {
	t.Helper()
	var out [KeySize]byte
	d, err := hex.DecodeString(s)
	if err != nil || len(d) != KeySize {
		t.Fatalf("bad hex %q", s)
	}
	copy(out[:], d)
	return out
}
