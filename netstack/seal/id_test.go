package seal

import (
	"bytes"
	"errors"
	"testing"
)

// A frame with a connection id (class 0x03) opens under the same key and
// replay window as the class-0x02 frames it follows; the id is covered by
// the AEAD, so no byte of it can be changed, and stripping it (rewriting the
// frame as class 0x02) does not authenticate either.
func TestFrameWithID(t *testing.T) {
	s := NewSealer(key(1), RotationConfig{})
	o := NewOpener(key(1))
	plain, _ := s.Seal(nil, packet(0), t0)
	id := [IDSize]byte{1, 2, 3, 4, 5, 6, 7, 8}
	s.SetID(id)
	if s.HeaderSize() != HeaderSizeID {
		t.Fatalf("header size %d after SetID", s.HeaderSize())
	}
	d, _ := s.Seal(nil, packet(1), t0)
	if d[0] != FrameClassID || !bytes.Equal(d[HeaderSize:HeaderSizeID], id[:]) || len(d) != HeaderSizeID+len(packet(1))+TagSize {
		t.Fatalf("frame %x", d)
	}
	if got, ok := FrameID(d); !ok || got != id {
		t.Fatalf("FrameID = %x %v", got, ok)
	}
	if _, ok := FrameID(plain); ok {
		t.Fatal("FrameID of a class-0x02 frame")
	}
	if _, ok := FrameID(d[:HeaderSizeID+TagSize-1]); ok {
		t.Fatal("FrameID of a truncated frame")
	}
	for off := range HeaderSizeID {
		f := bytes.Clone(d)
		f[off] ^= 0x01
		if _, err := o.Open(nil, f, t0); err == nil {
			t.Fatalf("a frame with byte %d changed opened", off)
		}
	}
	stripped := append(bytes.Clone(d[:HeaderSize]), d[HeaderSizeID:]...)
	stripped[0] = FrameClass
	if _, err := o.Open(nil, stripped, t0); !errors.Is(err, ErrAuth) {
		t.Fatalf("the frame without its id: %v, want ErrAuth", err)
	}
	for i, f := range [][]byte{plain, d} {
		p, err := o.Open(nil, f, t0)
		if err != nil || !bytes.Equal(p, packet(i)) {
			t.Fatalf("frame %d: %q %v", i, p, err)
		}
	}
	if _, err := o.Open(nil, d, t0); !errors.Is(err, ErrReplay) {
		t.Fatalf("replayed frame with id: %v, want ErrReplay", err)
	}
	if _, err := o.Open(nil, d[:HeaderSizeID+TagSize-1], t0); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short frame with id: %v, want ErrMalformed", err)
	}
}
