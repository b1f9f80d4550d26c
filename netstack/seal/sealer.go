package seal

import (
	"crypto/cipher"
	"encoding/binary"
	"math"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"golang.org/x/crypto/chacha20poly1305"
)

// Sealer seals the frames of one direction with K_d[e]. It owns the send-side
// frame sequence s, which starts at 0 and only increases, across epochs too.
// It is not safe for concurrent use; the owner locks.
type Sealer struct {
	cfg        RotationConfig
	cur        epochKey
	epoch      uint8
	next       uint64    // s of the next frame
	inEpoch    uint64    // frames sealed in the current epoch
	epochStart time.Time // zero until the first frame: the clock starts at first use
	nonce      [12]byte  // scratch; a field, so passing it to the AEAD does not allocate
	// id, when hasID, is the connection id every frame carries (class 0x03).
	id    [IDSize]byte
	hasID bool
}

// SetID makes every later frame a class-0x03 frame carrying the connection
// id (docs/protocol.md §4.1). The frame sequence s goes on: the two classes
// share one sequence space, so no nonce repeats.
func (s *Sealer) SetID(id [IDSize]byte) { s.id, s.hasID = id, true }

// HeaderSize returns the header size of the frames it seals now: HeaderSize,
// or HeaderSizeID once SetID was called.
func (s *Sealer) HeaderSize() int {
	if s.hasID {
		return HeaderSizeID
	}
	return HeaderSize
}

// NewSealer returns a Sealer starting in epoch 0 with key k0 (K_c2s[0] for a
// client, K_s2c[0] for the server). The epoch's age counts from the first Seal.
// The zero Sealer is not usable.
func NewSealer(k0 [32]byte, cfg RotationConfig) *Sealer {
	s := &Sealer{cfg: cfg.populate(), cur: newEpochKey(k0)}
	clear(k0[:])
	return s
}

// Seal appends the sealed frame of packet to dst: 0x02, 1, e, s (u64 LE) (0x03 and the connection id after s once SetID was called), the
// ciphertext and the tag. It first rotates to epoch e+1 when the epoch has
// lasted MaxAge or sealed MaxFrames frames; past epoch 255 it returns
// ErrKeyExhausted and seals nothing (seal the Disconnect with SealFinal).
//
// packet must not overlap dst's spare capacity, except exactly in place: a
// packet stored at dst[len(dst)+s.HeaderSize():] is encrypted where it lies. With
// enough capacity in dst, Seal does not allocate.
func (s *Sealer) Seal(dst, packet []byte, now time.Time) ([]byte, error) {
	if s.epochStart.IsZero() {
		s.epochStart = now
	}
	if s.inEpoch >= s.cfg.MaxFrames || now.Sub(s.epochStart) >= s.cfg.MaxAge {
		if s.epoch == LastEpoch {
			return dst, ErrKeyExhausted
		}
		s.rotate(now)
	}
	return s.seal(dst, packet)
}

// SealFinal seals packet in the current epoch without rotating. It exists for
// the Disconnect(KeyExhausted) that ends a channel whose epochs are used up:
// the rotation limits bound how much one key protects, they are not nonce
// limits (s never repeats), so a few more frames under the last key are safe.
func (s *Sealer) SealFinal(dst, packet []byte) ([]byte, error) {
	return s.seal(dst, packet)
}

func (s *Sealer) seal(dst, packet []byte) ([]byte, error) {
	dst, seq, err := s.header(dst)
	if err != nil {
		return dst, err
	}
	ad := dst[len(dst)-s.HeaderSize():]
	putNonce(&s.nonce, s.epoch, seq)
	return s.cur.aead.Seal(dst, s.nonce[:], packet, ad), nil
}

// header takes the next frame sequence s and appends the frame's header.
func (s *Sealer) header(dst []byte) ([]byte, uint64, error) {
	if s.next == math.MaxUint64 {
		// Unreachable in practice (2^39 frames at most with the default limits),
		// but a wrapped s would reuse a nonce.
		return dst, 0, ErrKeyExhausted
	}
	seq := s.next
	s.next++
	s.inEpoch++
	class := FrameClass
	if s.hasID {
		class = FrameClassID
	}
	dst = append(dst, class, SecureVersion, s.epoch)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	if s.hasID {
		dst = append(dst, s.id[:]...)
	}
	return dst, seq, nil
}

// Reserve is the first half of Seal, for a frame sealed later and possibly
// on another goroutine: it rotates when due, takes the frame's sequence s
// and appends its header to dst exactly as Seal would, and returns what
// Deferred.Seal needs to encrypt the packet. The Sealer's state moves on at
// once (the next frame gets the next s), so the frame is the same bytes
// whenever it is sealed; a rotation in between does not matter, the
// Deferred keeps its epoch's AEAD (whose internal key copy wipe could never
// clear anyway).
func (s *Sealer) Reserve(dst []byte, now time.Time) ([]byte, Deferred, error) {
	if s.epochStart.IsZero() {
		s.epochStart = now
	}
	if s.inEpoch >= s.cfg.MaxFrames || now.Sub(s.epochStart) >= s.cfg.MaxAge {
		if s.epoch == LastEpoch {
			return dst, Deferred{}, ErrKeyExhausted
		}
		s.rotate(now)
	}
	dst, seq, err := s.header(dst)
	if err != nil {
		return dst, Deferred{}, err
	}
	d := Deferred{aead: s.cur.aead, hdr: uint8(s.HeaderSize())}
	putNonce(&d.nonce, s.epoch, seq)
	return dst, d, nil
}

// Deferred is a frame Reserve began: its header is written and its nonce
// fixed; Seal encrypts its packet. The zero Deferred is no frame. Seal may
// run on any goroutine, concurrently with the Sealer's own use (the AEAD
// is only read).
type Deferred struct {
	aead  cipher.AEAD
	nonce [chacha20poly1305.NonceSize]byte
	hdr   uint8
}

// Pending reports whether d is a frame still to seal.
func (d *Deferred) Pending() bool { return d.aead != nil }

// Seal seals, in place, frame: the header Reserve appended followed by the
// packet. frame's capacity must hold TagSize more bytes; the result is the
// sealed frame (frame's header, ciphertext, tag) in the same array. After
// Seal d is the zero Deferred: a frame is sealed once.
func (d *Deferred) Seal(frame []byte) []byte {
	h := int(d.hdr)
	out := d.aead.Seal(frame[:h], d.nonce[:], frame[h:], frame[:h])
	*d = Deferred{}
	return out
}

// rotate moves to the next epoch and zeroes the retired key.
func (s *Sealer) rotate(now time.Time) {
	next := newEpochKey(handshake.Ratchet(s.cur.key))
	s.cur.wipe()
	s.cur = next
	s.epoch++
	s.inEpoch = 0
	s.epochStart = now
}

// Epoch returns the current key epoch.
func (s *Sealer) Epoch() uint8 { return s.epoch }

// NextSequence returns the s the next frame will carry.
func (s *Sealer) NextSequence() uint64 { return s.next }
