package seal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

var t0 = time.Unix(1_700_000_000, 0)

func key(b byte) (k [32]byte) {
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

func packet(i int) []byte {
	return fmt.Appendf(nil, "packet %d %s", i, bytes.Repeat([]byte{byte(i)}, i%40))
}

// TestVectorClientFinished seals and opens the ClientFinished of the v3 vectors.
func TestVectorClientFinished(t *testing.T) {
	b, err := os.ReadFile("../testdata/vectors-v3.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		CF struct {
			Packet, Key, Datagram, Nonce, AD string
		} `json:"client_finished"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	dec := func(s string) []byte { d, _ := hex.DecodeString(s); return d }
	var k [32]byte
	copy(k[:], dec(v.CF.Key))
	pkt, want := dec(v.CF.Packet), dec(v.CF.Datagram)
	got, err := NewSealer(k, RotationConfig{}).Seal(nil, pkt, t0)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("sealed %x (%v)\nwant   %x", got, err, want)
	}
	if !bytes.Equal(want[:HeaderSize], dec(v.CF.AD)) {
		t.Fatal("AD is not datagram bytes 0..10")
	}
	var n [12]byte
	putNonce(&n, 0, 0)
	if !bytes.Equal(n[:], dec(v.CF.Nonce)) {
		t.Fatal("nonce layout")
	}
	opened, err := NewOpener(k).Open(nil, want, t0)
	if err != nil || !bytes.Equal(opened, pkt) {
		t.Fatalf("opened %x (%v)", opened, err)
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	s, o := NewSealer(key(1), RotationConfig{}), NewOpener(key(1))
	for i := range 100 {
		d, err := s.Seal(nil, packet(i), t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) != len(packet(i))+Overhead || d[0] != FrameClass || d[1] != SecureVersion || d[2] != 0 {
			t.Fatalf("frame %d header %x", i, d[:HeaderSize])
		}
		p, err := o.Open(nil, d, t0)
		if err != nil || !bytes.Equal(p, packet(i)) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	t.Run("in place", func(t *testing.T) {
		buf := make([]byte, 64+Overhead)
		copy(buf[HeaderSize:], packet(9))
		n := len(packet(9))
		d, err := s.Seal(buf[:0], buf[HeaderSize:HeaderSize+n], t0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := o.Open(d[HeaderSize:HeaderSize], d, t0)
		if err != nil || !bytes.Equal(p, packet(9)) {
			t.Fatalf("in place: %v", err)
		}
	})
}

func TestOpenRefuses(t *testing.T) {
	s := NewSealer(key(1), RotationConfig{})
	frames := make([][]byte, 4)
	for i := range frames {
		frames[i], _ = s.Seal(nil, packet(i+20), t0)
	}
	good := frames[1]

	t.Run("every byte flip", func(t *testing.T) {
		o := NewOpener(key(1))
		for off := range good {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				d := bytes.Clone(good)
				d[off] ^= x
				_, err := o.Open(nil, d, t0)
				var want error
				switch {
				case off == 0 && d[0] == FrameClassID:
					want = ErrAuth // the 0x02 frame read as 0x03: its header and AD differ
				case off == 0:
					want = ErrMalformed
				case off == 1:
					want = ErrVersion
				case off == 2 && d[2] != 1: // epoch 1 is current+1: it must fail auth instead
					want = ErrEpoch
				default:
					want = ErrAuth
				}
				if !errors.Is(err, want) {
					t.Fatalf("offset %d ^%#x: %v, want %v", off, x, err, want)
				}
			}
		}
		// No forgery moved the window or the epoch: the genuine frames open.
		if o.Epoch() != 0 || o.window.Highest() != 0 {
			t.Fatalf("forged frames changed state: epoch %d highest %d", o.Epoch(), o.window.Highest())
		}
		for i, d := range frames {
			if _, err := o.Open(nil, d, t0); err != nil {
				t.Fatalf("genuine frame %d after forgeries: %v", i, err)
			}
		}
	})
	t.Run("replay", func(t *testing.T) {
		o := NewOpener(key(1))
		if _, err := o.Open(nil, good, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Open(nil, good, t0); !errors.Is(err, ErrReplay) {
			t.Fatalf("%v", err)
		}
		if _, err := o.Open(nil, frames[0], t0); err != nil {
			t.Fatalf("older unseen frame refused: %v", err)
		}
	})
	t.Run("truncations and extensions", func(t *testing.T) {
		o := NewOpener(key(1))
		for n := 0; n < len(good); n++ {
			want := ErrAuth
			if n < Overhead {
				want = ErrMalformed
			}
			if _, err := o.Open(nil, good[:n], t0); !errors.Is(err, want) {
				t.Fatalf("length %d: %v, want %v", n, err, want)
			}
		}
		for extra := 1; extra < 40; extra++ {
			d := append(bytes.Clone(good), make([]byte, extra)...)
			if _, err := o.Open(nil, d, t0); !errors.Is(err, ErrAuth) {
				t.Fatalf("extended by %d: %v", extra, err)
			}
		}
	})
	t.Run("cross peer", func(t *testing.T) {
		other, _ := NewSealer(key(2), RotationConfig{}).Seal(nil, packet(1), t0)
		if _, err := NewOpener(key(1)).Open(nil, other, t0); !errors.Is(err, ErrAuth) {
			t.Fatalf("%v", err)
		}
		// The other direction of the same session has its own key too.
		if _, err := NewOpener(handshake.Ratchet(key(1))).Open(nil, good, t0); !errors.Is(err, ErrAuth) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("epochs out of range", func(t *testing.T) {
		o := NewOpener(key(1))
		for _, e := range []byte{2, 3, 128, 255} {
			d := bytes.Clone(good)
			d[2] = e
			if _, err := o.Open(nil, d, t0); !errors.Is(err, ErrEpoch) {
				t.Fatalf("epoch %d at 0: %v", e, err)
			}
		}
	})
}

// sealAll seals n packets with a sealer rotating every 3 frames.
func sealAll(t *testing.T, k [32]byte, n int, now time.Time) [][]byte {
	t.Helper()
	s := NewSealer(k, RotationConfig{MaxFrames: 3})
	out := make([][]byte, n)
	for i := range out {
		var err error
		if out[i], err = s.Seal(nil, packet(i), now); err != nil {
			t.Fatal(err)
		}
		if int(out[i][2]) != i/3 {
			t.Fatalf("frame %d in epoch %d", i, out[i][2])
		}
	}
	return out
}

func TestRotation(t *testing.T) {
	t.Run("in order across ten epochs", func(t *testing.T) {
		frames := sealAll(t, key(1), 30, t0)
		o := NewOpener(key(1))
		for i, d := range frames {
			p, err := o.Open(nil, d, t0.Add(time.Duration(i)*time.Millisecond))
			if err != nil || !bytes.Equal(p, packet(i)) {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
		if o.Epoch() != 9 {
			t.Fatalf("opener at epoch %d", o.Epoch())
		}
	})
	t.Run("reordered across a switch", func(t *testing.T) {
		frames := sealAll(t, key(1), 9, t0)
		o := NewOpener(key(1))
		for _, i := range []int{0, 3, 4, 1, 6, 5, 7, 8} {
			if _, err := o.Open(nil, frames[i], t0.Add(time.Second)); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
		// Only one previous epoch is kept: epoch 0 is gone once epoch 2 is current.
		if _, err := o.Open(nil, frames[2], t0.Add(time.Second)); !errors.Is(err, ErrEpoch) {
			t.Fatalf("epoch 0 after two switches: %v", err)
		}
	})
	t.Run("previous epoch only for 5 s", func(t *testing.T) {
		frames := sealAll(t, key(1), 6, t0)
		o := NewOpener(key(1))
		if _, err := o.Open(nil, frames[3], t0); err != nil { // switch to epoch 1
			t.Fatal(err)
		}
		if _, err := o.Open(nil, frames[0], t0.Add(PreviousEpochGrace-time.Millisecond)); err != nil {
			t.Fatalf("epoch 0 within 5 s: %v", err)
		}
		if _, err := o.Open(nil, frames[1], t0.Add(PreviousEpochGrace)); !errors.Is(err, ErrEpoch) {
			t.Fatalf("epoch 0 at 5 s: %v", err)
		}
		if o.hasPrev || o.prev.key != ([32]byte{}) {
			t.Fatal("retired key not zeroed")
		}
		if _, err := o.Open(nil, frames[4], t0.Add(time.Hour)); err != nil {
			t.Fatalf("current epoch later: %v", err)
		}
	})
	t.Run("forged next-epoch frame does not switch", func(t *testing.T) {
		frames := sealAll(t, key(1), 4, t0)
		o := NewOpener(key(1))
		d := bytes.Clone(frames[3])
		d[len(d)-1] ^= 1
		if _, err := o.Open(nil, d, t0); !errors.Is(err, ErrAuth) || o.Epoch() != 0 {
			t.Fatalf("%v, epoch %d", err, o.Epoch())
		}
		if _, err := o.Open(nil, frames[3], t0); err != nil || o.Epoch() != 1 {
			t.Fatalf("genuine next-epoch frame: %v", err)
		}
	})
	t.Run("by age", func(t *testing.T) {
		s := NewSealer(key(1), RotationConfig{MaxAge: time.Minute})
		for _, c := range []struct {
			at    time.Duration
			epoch byte
		}{{0, 0}, {59 * time.Second, 0}, {60 * time.Second, 1}, {119 * time.Second, 1}, {120 * time.Second, 2}} {
			d, err := s.Seal(nil, packet(1), t0.Add(c.at))
			if err != nil || d[2] != c.epoch {
				t.Fatalf("at %v: epoch %d (%v), want %d", c.at, d[2], err, c.epoch)
			}
		}
	})
	t.Run("default age is 600 s", func(t *testing.T) {
		s := NewSealer(key(1), RotationConfig{})
		d1, _ := s.Seal(nil, nil, t0)
		d2, _ := s.Seal(nil, nil, t0.Add(599*time.Second))
		d3, _ := s.Seal(nil, nil, t0.Add(600*time.Second))
		if d1[2] != 0 || d2[2] != 0 || d3[2] != 1 {
			t.Fatalf("epochs %d %d %d", d1[2], d2[2], d3[2])
		}
	})
	t.Run("sequence increases across epochs", func(t *testing.T) {
		for i, d := range sealAll(t, key(1), 12, t0) {
			if got := d[3]; int(got) != i {
				t.Fatalf("frame %d has s %d", i, got)
			}
		}
	})
}

func TestExhaustion(t *testing.T) {
	s := NewSealer(key(7), RotationConfig{MaxFrames: 1})
	o := NewOpener(key(7))
	for i := 0; i <= LastEpoch; i++ {
		d, err := s.Seal(nil, packet(i), t0)
		if err != nil || int(d[2]) != i {
			t.Fatalf("frame %d: epoch %d, %v", i, d[2], err)
		}
		if _, err := o.Open(nil, d, t0); err != nil {
			t.Fatalf("open frame %d: %v", i, err)
		}
	}
	for range 2 {
		if d, err := s.Seal(nil, packet(0), t0); !errors.Is(err, ErrKeyExhausted) || len(d) != 0 {
			t.Fatalf("past epoch 255: %v", err)
		}
	}
	for i := range 3 { // Disconnect(KeyExhausted), sealed three times
		d, err := s.SealFinal(nil, []byte("bye"))
		if err != nil || d[2] != LastEpoch {
			t.Fatalf("final %d: %v", i, err)
		}
		if p, err := o.Open(nil, d, t0); err != nil || string(p) != "bye" {
			t.Fatalf("open final %d: %v", i, err)
		}
	}
	// At epoch 255 nothing wraps: epoch 0 is neither next nor previous.
	d := []byte{FrameClass, SecureVersion, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0}
	d = append(d, make([]byte, TagSize)...)
	if _, err := o.Open(nil, d, t0); !errors.Is(err, ErrEpoch) {
		t.Fatalf("epoch 0 at 255: %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	s, o := NewSealer(key(3), RotationConfig{}), NewOpener(key(3))
	pkt := make([]byte, 300)
	sealed := make([]byte, 0, 2048)
	opened := make([]byte, 0, 2048)
	n := testing.AllocsPerRun(1000, func() {
		d, err := s.Seal(sealed[:0], pkt, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Open(opened[:0], d, t0); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocs per Seal+Open", n)
	}
	// Refusals allocate nothing either.
	bad := make([]byte, 40)
	bad[0], bad[1] = FrameClass, SecureVersion
	if n := testing.AllocsPerRun(1000, func() { o.Open(opened[:0], bad, t0) }); n != 0 {
		t.Fatalf("%v allocs per refused Open", n)
	}
}

func BenchmarkSealOpen300(b *testing.B) {
	s, o := NewSealer(key(3), RotationConfig{}), NewOpener(key(3))
	pkt := make([]byte, 300)
	sealed := make([]byte, 0, 2048)
	opened := make([]byte, 0, 2048)
	b.SetBytes(300)
	for b.Loop() {
		d, _ := s.Seal(sealed[:0], pkt, t0)
		if _, err := o.Open(opened[:0], d, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen300(b *testing.B) {
	s := NewSealer(key(3), RotationConfig{})
	pkt := make([]byte, 300)
	frames := make([][]byte, 1<<16)
	for i := range frames {
		frames[i], _ = s.Seal(nil, pkt, t0)
	}
	opened := make([]byte, 0, 2048)
	o := NewOpener(key(3))
	i := 0
	b.SetBytes(300)
	for b.Loop() {
		if i == len(frames) {
			b.StopTimer()
			o, i = NewOpener(key(3)), 0
			b.StartTimer()
		}
		if _, err := o.Open(opened[:0], frames[i], t0); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
