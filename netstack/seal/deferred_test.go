package seal

import (
	"bytes"
	"sync"
	"testing"
)

// TestDeferredSameAsSeal: a frame begun with Reserve and sealed later is
// the frame Seal would have made in its place, across rotations, with and
// without a connection id, and it opens; the Sealer's next frame does not
// wait for it.
func TestDeferredSameAsSeal(t *testing.T) {
	for _, withID := range []bool{false, true} {
		now, direct := NewSealer(key(5), RotationConfig{MaxFrames: 3}), NewSealer(key(5), RotationConfig{MaxFrames: 3})
		if withID {
			now.SetID([IDSize]byte{1, 2, 3})
			direct.SetID([IDSize]byte{1, 2, 3})
		}
		o := NewOpener(key(5))
		var pending []Deferred
		var frames [][]byte
		for i := range 10 {
			buf := make([]byte, 0, 256)
			buf = append(buf, 0xEE) // what precedes the frame in a batch stays
			pkt := packet(i)
			// The packet is written first, after room for the header.
			buf = append(buf[:1+now.HeaderSize()], pkt...)
			hdr, d, err := now.Reserve(buf[:1], t0)
			if err != nil || len(hdr) != 1+now.HeaderSize() || !d.Pending() {
				t.Fatalf("frame %d: Reserve %d bytes, pending %v, %v", i, len(hdr), d.Pending(), err)
			}
			pending, frames = append(pending, d), append(frames, buf[1:])
		}
		// Sealed in another order than reserved, the latest first.
		for i := len(pending) - 1; i >= 0; i-- {
			frames[i] = pending[i].Seal(frames[i])
			if pending[i].Pending() {
				t.Fatal("a sealed Deferred is still pending")
			}
		}
		for i, f := range frames {
			want, err := direct.Seal(nil, packet(i), t0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f, want) {
				t.Fatalf("id %v frame %d:\n got %x\nwant %x", withID, i, f, want)
			}
			if got, err := o.Open(nil, f, t0); err != nil || !bytes.Equal(got, packet(i)) {
				t.Fatalf("frame %d opens as %q, %v", i, got, err)
			}
		}
	}
}

// TestDeferredConcurrent: frames reserved under the owner's lock are sealed
// on another goroutine while the owner goes on sealing (run with -race).
func TestDeferredConcurrent(t *testing.T) {
	s, o := NewSealer(key(6), RotationConfig{MaxFrames: 5}), NewOpener(key(6))
	type job struct {
		d     Deferred
		frame []byte
	}
	jobs := make(chan *job, 64)
	var wg sync.WaitGroup
	var sealed [][]byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := range jobs {
			sealed = append(sealed, j.d.Seal(j.frame))
		}
	}()
	var direct [][]byte
	for i := range 40 {
		buf := append(make([]byte, s.HeaderSize(), 256), packet(i)...)
		_, d, err := s.Reserve(buf[:0], t0)
		if err != nil {
			t.Fatal(err)
		}
		jobs <- &job{d, buf}
		f, err := s.Seal(nil, packet(1000+i), t0)
		if err != nil {
			t.Fatal(err)
		}
		direct = append(direct, f)
	}
	close(jobs)
	wg.Wait()
	for i := range direct { // opened in the order the sequence was taken
		if got, err := o.Open(nil, sealed[i], t0); err != nil || !bytes.Equal(got, packet(i)) {
			t.Fatalf("deferred frame %d: %q, %v", i, got, err)
		}
		if _, err := o.Open(nil, direct[i], t0); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

func TestDeferredNoAllocs(t *testing.T) {
	s := NewSealer(key(3), RotationConfig{})
	buf := make([]byte, HeaderSize+300, HeaderSize+300+TagSize)
	ds := make([]Deferred, 1)
	n := testing.AllocsPerRun(1000, func() {
		var err error
		if _, ds[0], err = s.Reserve(buf[:0], t0); err != nil {
			t.Fatal(err)
		}
		ds[0].Seal(buf)
	})
	if n != 0 {
		t.Fatalf("%v allocs per Reserve+Seal", n)
	}
}
