// Package seal owns the sealed frames of protocol v3 §6: ChaCha20-Poly1305
// over one packet per datagram, keyed by per-direction epoch keys that ratchet
// forward, with a replay window over the frame sequence s.
//
// A Sealer is the sending half of one direction and an Opener the receiving
// half. Neither is safe for concurrent use: the peer that owns them serialises
// access. In steady state neither allocates: the AEAD of an epoch key is built
// once per epoch, and the next epoch's key is derived once, not per packet.
//
// This package never sends anything and never falls back to plaintext.
package seal

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Frame layout of §6.
const (
	// FrameClass is the first byte of a sealed datagram.
	FrameClass byte = 0x02
	// FrameClassID is the first byte of a sealed datagram that carries a
	// connection id (docs/protocol.md §4.1): the header is the class-0x02
	// header followed by the id, all of it the additional data.
	FrameClassID byte = 0x03
	// IDSize is the size of a connection id.
	IDSize = 8
	// HeaderSizeID is the header of a class-0x03 frame: class, version,
	// epoch, s, connection id.
	HeaderSizeID = HeaderSize + IDSize
	// SecureVersion is the only secure header version.
	SecureVersion byte = 1
	// HeaderSize is the secure header: class, version, epoch, s (u64 LE). It is
	// also the AEAD additional data.
	HeaderSize = 11
	// TagSize is the Poly1305 tag size.
	TagSize = chacha20poly1305.Overhead
	// Overhead is what sealing adds to a packet.
	Overhead = HeaderSize + TagSize

	// LastEpoch is the last key epoch; a sender that would rotate past it must
	// send Disconnect(KeyExhausted) (see Sealer.SealFinal).
	LastEpoch = 255
	// PreviousEpochGrace is how long a receiver keeps the previous epoch's key
	// after switching to a new one, for frames reordered across the switch.
	PreviousEpochGrace = 5 * time.Second

	// DefaultMaxAge is the longest a sender stays in one epoch.
	DefaultMaxAge = 600 * time.Second
	// DefaultMaxFrames is the most frames a sender seals in one epoch.
	DefaultMaxFrames = 1 << 31
)

// Errors of Seal and Open. Every Open error means "drop"; all but ErrMalformed
// are counted as securityDrops (§6).
var (
	// ErrMalformed: shorter than its header and tag, or not a sealed-class
	// datagram (0x02, or 0x03 with a connection id).
	ErrMalformed = errors.New("seal: not a sealed frame (class byte or length)")
	// ErrVersion: unknown secure version.
	ErrVersion = errors.New("seal: unknown secure version")
	// ErrEpoch: an epoch other than current, current+1, or current-1 within
	// PreviousEpochGrace of the switch.
	ErrEpoch = errors.New("seal: key epoch not acceptable")
	// ErrReplay: a repeated frame, or one older than the replay window.
	ErrReplay = errors.New("seal: replayed or too old frame")
	// ErrAuth: the frame did not authenticate.
	ErrAuth = errors.New("seal: frame failed authentication")
	// ErrKeyExhausted: the sender would rotate past epoch 255; the channel must
	// end with Disconnect(KeyExhausted), sealed with SealFinal.
	ErrKeyExhausted = errors.New("seal: key epochs exhausted; disconnect with KeyExhausted")
)

// RotationConfig sets when a Sealer moves to the next epoch. Zero values mean
// the defaults of §6; tests force small values.
type RotationConfig struct {
	// MaxAge is the time spent in one epoch before rotating; 0 means 600 s.
	MaxAge time.Duration
	// MaxFrames is the number of frames sealed in one epoch before rotating;
	// 0 means 2^31.
	MaxFrames uint64
}

func (c RotationConfig) populate() RotationConfig {
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.MaxFrames == 0 {
		c.MaxFrames = DefaultMaxFrames
	}
	return c
}

// epochKey is one epoch's key with the AEAD built from it.
type epochKey struct {
	key  [32]byte
	aead cipher.AEAD
}

func newEpochKey(k [32]byte) epochKey {
	// New only fails for a wrong key length, impossible with an array.
	aead, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic("seal: chacha20poly1305.New: " + err.Error())
	}
	return epochKey{key: k, aead: aead}
}

// wipe zeroes the key. The AEAD keeps an internal copy that its API cannot
// clear; dropping the reference is the best effort available.
func (k *epochKey) wipe() {
	clear(k.key[:])
	k.aead = nil
}

// putNonce writes the §6 nonce e ‖ 00 00 00 ‖ s (u64 LE).
func putNonce(n *[chacha20poly1305.NonceSize]byte, epoch uint8, s uint64) {
	n[0], n[1], n[2], n[3] = epoch, 0, 0, 0
	binary.LittleEndian.PutUint64(n[4:], s)
}
