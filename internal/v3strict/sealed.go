package v3strict

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sealed frames (§6).
const (
	classPlain   = 0x01
	classSealed  = 0x02
	sealedHeader = 11
	tagSize      = 16
	// secureVersion is the sealed frame's version byte.
	secureVersion = 1
	// replayWindow is the number of frame sequences the window spans.
	replayWindow = 256
	// previousEpochGrace is how long the previous epoch is accepted.
	previousEpochGrace = 5 * time.Second
)

func newAEAD(key [32]byte) cipher.AEAD {
	a, err := chacha20poly1305.New(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always accepted
	}
	return a
}

func nonceOf(epoch uint8, s uint64) [12]byte {
	var n [12]byte
	n[0] = epoch
	binary.LittleEndian.PutUint64(n[4:], s)
	return n
}

// sealer seals one direction's frames. This client never rotates: a test
// session is far shorter than 600 s and 2^31 frames.
type sealer struct {
	aead  cipher.AEAD
	epoch uint8
	s     uint64
}

func newSealer(key [32]byte) *sealer { return &sealer{aead: newAEAD(key)} }

// seal returns the sealed frame of packet under the next frame sequence.
func (x *sealer) seal(packet []byte) []byte {
	f := make([]byte, sealedHeader, sealedHeader+len(packet)+tagSize)
	f[0], f[1], f[2] = classSealed, secureVersion, x.epoch
	binary.LittleEndian.PutUint64(f[3:], x.s)
	n := nonceOf(x.epoch, x.s)
	x.s++
	return x.aead.Seal(f, n[:], packet, f[:sealedHeader])
}

// errReplay marks a frame the replay window refuses: a repeat or one older
// than the window (UDP may duplicate; not the sender's fault).
var errReplay = errors.New("replayed or too old frame sequence")

// opener opens the server's frames: epochs current, current+1 and, for
// previousEpochGrace after a switch, current−1; one replay window over s.
type opener struct {
	key       [32]byte // of the current epoch
	cur, prev cipher.AEAD
	epoch     uint8
	prevUntil time.Time
	highest   uint64
	seen      bool
	bits      [replayWindow / 64]uint64
}

func newOpener(key [32]byte) *opener { return &opener{key: key, cur: newAEAD(key)} }

// open authenticates a sealed frame and returns its packet.
func (o *opener) open(d []byte, now time.Time) ([]byte, error) {
	if len(d) < sealedHeader+tagSize {
		return nil, fmt.Errorf("sealed frame of %d bytes, shorter than header and tag", len(d))
	}
	if d[1] != secureVersion {
		return nil, fmt.Errorf("secure version %d", d[1])
	}
	e, s := d[2], binary.LittleEndian.Uint64(d[3:])
	if !o.fresh(s) {
		return nil, errReplay
	}
	var aead cipher.AEAD
	var nextKey [32]byte
	switch {
	case e == o.epoch:
		aead = o.cur
	case e == o.epoch+1 && o.epoch < 255:
		nextKey = ratchet(o.key)
		aead = newAEAD(nextKey)
	case e == o.epoch-1 && o.prev != nil && now.Before(o.prevUntil):
		aead = o.prev
	default:
		return nil, fmt.Errorf("frame of epoch %d while the current one is %d", e, o.epoch)
	}
	n := nonceOf(e, s)
	pkt, err := aead.Open(nil, n[:], d[sealedHeader:], d[:sealedHeader])
	if err != nil {
		return nil, fmt.Errorf("frame does not authenticate: %w", err)
	}
	o.mark(s)
	if e == o.epoch+1 {
		o.prev, o.prevUntil = o.cur, now.Add(previousEpochGrace)
		o.cur, o.key, o.epoch = aead, nextKey, e
	}
	return pkt, nil
}

// fresh reports whether s is new to the window (written so that nothing
// overflows: highest − s, never s + W).
func (o *opener) fresh(s uint64) bool {
	if !o.seen || s > o.highest {
		return true
	}
	d := o.highest - s
	if d >= replayWindow {
		return false
	}
	i := s % replayWindow
	return o.bits[i/64]&(1<<(i%64)) == 0
}

// mark records an authenticated frame sequence.
func (o *opener) mark(s uint64) {
	if !o.seen || s > o.highest {
		from := o.highest + 1
		if !o.seen || s-o.highest >= replayWindow {
			o.bits = [replayWindow / 64]uint64{}
		} else {
			for x := from; x < s; x++ {
				i := x % replayWindow
				o.bits[i/64] &^= 1 << (i % 64)
			}
		}
		o.highest, o.seen = s, true
	}
	i := s % replayWindow
	o.bits[i/64] |= 1 << (i % 64)
}
