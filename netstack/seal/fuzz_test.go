package seal

import (
	"bytes"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"golang.org/x/crypto/chacha20poly1305"
)

// FuzzOpen: Open never panics on any datagram (class 0x02 or 0x03), and whatever it accepts is a
// genuine frame — re-sealing the plaintext under that epoch's key and s gives
// the datagram back byte for byte.
func FuzzOpen(f *testing.F) {
	s := NewSealer(key(1), RotationConfig{MaxFrames: 2})
	for i := range 4 {
		d, _ := s.Seal(nil, packet(i), t0)
		f.Add(d)
	}
	s.SetID([IDSize]byte{9, 8, 7, 6, 5, 4, 3, 2})
	for i := range 2 {
		d, _ := s.Seal(nil, packet(i), t0)
		f.Add(d)
	}
	f.Add([]byte{FrameClass, SecureVersion})
	f.Add(make([]byte, Overhead))
	keys := [2][32]byte{key(1), handshake.Ratchet(key(1))}
	f.Fuzz(func(t *testing.T, d []byte) {
		if id, ok := FrameID(d); ok != (len(d) >= HeaderSizeID+TagSize && d[0] == FrameClassID) ||
			ok && !bytes.Equal(id[:], d[HeaderSize:HeaderSizeID]) {
			t.Fatalf("FrameID(%x) = %x, %v", d, id, ok)
		}
		p, err := NewOpener(key(1)).Open(nil, d, t0)
		if err != nil {
			if p != nil {
				t.Fatal("plaintext returned with an error")
			}
			return
		}
		e := d[2]
		if e > 1 {
			t.Fatalf("accepted epoch %d", e)
		}
		aead, _ := chacha20poly1305.New(keys[e][:])
		var n [12]byte
		n[0] = e
		copy(n[4:], d[3:HeaderSize])
		hs := headerSize(d)
		if again := aead.Seal(bytes.Clone(d[:hs]), n[:], p, d[:hs]); !bytes.Equal(again, d) {
			t.Fatalf("accepted a datagram that is not a genuine frame: %x", d)
		}
	})
}
