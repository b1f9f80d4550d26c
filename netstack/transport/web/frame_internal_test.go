package web

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestFrameRoundTrip: frames carry datagrams of 1..65507 bytes; a length
// of 0 or over 65507 is refused before anything is allocated, and a cut
// frame is an error.
func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	for _, n := range []int{1, 1200, maxFrame} {
		stream = appendFrame(stream, bytes.Repeat([]byte{byte(n)}, n))
	}
	r := bytes.NewReader(stream)
	for _, n := range []int{1, 1200, maxFrame} {
		b, err := readFrame(r)
		if err != nil || len(b) != n || b[0] != byte(n) {
			t.Fatalf("frame of %d: %d bytes, %v", n, len(b), err)
		}
	}
	if _, err := readFrame(r); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	for _, bad := range [][]byte{{0, 0}, {0xFF, 0xFF}, {0xFF, 0xE4}} {
		if _, err := readFrame(bytes.NewReader(bad)); !errors.Is(err, errBadFrame) {
			t.Fatalf("length % x: %v, want errBadFrame", bad, err)
		}
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 5, 1, 2})); err == nil || err == io.EOF {
		t.Fatalf("cut frame: %v", err)
	}
}

// FuzzReadFrame: any bytes give frames of 1..65507 bytes, each what the
// stream held, or an error; never a panic.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, []byte("hello")))
	f.Add([]byte{0, 0})
	f.Add([]byte{0xFF, 0xFF, 1})
	f.Add(append(appendFrame(nil, bytes.Repeat([]byte{1}, 1200)), 0, 3, 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		off := 0
		for {
			b, err := readFrame(r)
			if err != nil {
				return
			}
			if len(b) == 0 || len(b) > maxFrame || !bytes.Equal(b, in[off+2:off+2+len(b)]) {
				t.Fatalf("frame of %d bytes at %d does not match the input", len(b), off)
			}
			off += 2 + len(b)
		}
	})
}
