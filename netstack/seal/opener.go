package seal

import (
	"encoding/binary"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/replay"
)

// Opener opens the frames of one direction. It tracks the current epoch, the
// next epoch's key (derived lazily, once), the previous epoch's key for
// PreviousEpochGrace after a switch, and one replay window that spans epochs.
// It is not safe for concurrent use.
type Opener struct {
	window    replay.Window
	cur       epochKey
	epoch     uint8
	next      epochKey // valid when hasNext
	hasNext   bool
	prev      epochKey // valid when hasPrev and before prevUntil
	hasPrev   bool
	prevUntil time.Time
	nonce     [12]byte // scratch; a field, so passing it to the AEAD does not allocate
}

// NewOpener returns an Opener in epoch 0 with key k0 (K_c2s[0] on the server,
// K_s2c[0] on the client). The zero Opener is not usable.
func NewOpener(k0 [32]byte) *Opener {
	o := &Opener{cur: newEpochKey(k0)}
	clear(k0[:])
	return o
}

// Open authenticates a sealed datagram and appends its packet to dst. Checks
// run in the order of §6, cheapest and forgery-proof first:
//
//  1. class 0x02, or 0x03 (a connection id after s), and length ≥ its
//     header + tag (ErrMalformed); secure version 1 (ErrVersion);
//  2. epoch ∈ {current, current+1, current−1 for 5 s after the switch} (ErrEpoch);
//  3. replay window (ErrReplay);
//  4. AEAD open with nonce e ‖ 000000 ‖ s and AD = the header, bytes
//     0..10 (0..18 with a connection id) (ErrAuth);
//
// and only then is s marked in the window. A frame of epoch current+1 that
// authenticated makes that epoch current; the old key is kept for 5 s, then
// zeroed. A forged frame never changes the window or the epoch. dst must not
// overlap datagram, except exactly in place: pass datagram[h:h] (h the
// frame's header size, HeaderSize or HeaderSizeID) to decrypt where the
// ciphertext lies. Which connection id a class-0x03 frame carries is the
// caller's to check (it routed the frame by it); the id is authenticated. With enough capacity in dst, Open does
// not allocate. On error it returns nil.
func (o *Opener) Open(dst, datagram []byte, now time.Time) ([]byte, error) {
	hs := headerSize(datagram)
	if hs == 0 || len(datagram) < hs+TagSize {
		return nil, ErrMalformed
	}
	if datagram[1] != SecureVersion {
		return nil, ErrVersion
	}
	if o.hasPrev && !now.Before(o.prevUntil) {
		o.prev.wipe()
		o.hasPrev = false
	}
	e := datagram[2]
	k := o.keyFor(e)
	if k == nil {
		return nil, ErrEpoch
	}
	s := binary.LittleEndian.Uint64(datagram[3:HeaderSize])
	if !o.window.Check(s) {
		return nil, ErrReplay
	}
	putNonce(&o.nonce, e, s)
	out, err := k.aead.Open(dst, o.nonce[:], datagram[hs:], datagram[:hs])
	if err != nil {
		return nil, ErrAuth
	}
	o.window.Mark(s)
	if k == &o.next {
		o.promote(now)
	}
	return out, nil
}

// keyFor returns the key of epoch e, or nil when e is not acceptable. The next
// epoch's key is derived on first need and cached, so a flood of forged
// next-epoch frames costs one HKDF in total.
func (o *Opener) keyFor(e uint8) *epochKey {
	switch {
	case e == o.epoch:
		return &o.cur
	case e == o.epoch+1 && o.epoch != LastEpoch:
		if !o.hasNext {
			o.next = newEpochKey(handshake.Ratchet(o.cur.key))
			o.hasNext = true
		}
		return &o.next
	case e == o.epoch-1 && o.epoch != 0 && o.hasPrev:
		return &o.prev
	}
	return nil
}

// promote makes the next epoch current after one of its frames authenticated.
// Only one previous epoch is kept: if the sender rotated twice within 5 s, the
// epoch before last is gone, as §6 keeps just "epoch e".
func (o *Opener) promote(now time.Time) {
	o.prev.wipe()
	o.prev = o.cur
	o.hasPrev = true
	o.prevUntil = now.Add(PreviousEpochGrace)
	o.cur = o.next
	o.next = epochKey{}
	o.hasNext = false
	o.epoch++
}

// Epoch returns the current receive epoch.
func (o *Opener) Epoch() uint8 { return o.epoch }

// headerSize is the header size of a sealed frame by its class byte: 0 for
// a datagram that is not a sealed frame.
func headerSize(d []byte) int {
	if len(d) == 0 {
		return 0
	}
	switch d[0] {
	case FrameClass:
		return HeaderSize
	case FrameClassID:
		return HeaderSizeID
	}
	return 0
}

// FrameID returns the connection id of a class-0x03 frame, and false for
// any other datagram or one too short to hold its header and tag. It only
// reads: nothing is authenticated.
func FrameID(d []byte) (id [IDSize]byte, ok bool) {
	if len(d) < HeaderSizeID+TagSize || d[0] != FrameClassID {
		return id, false
	}
	copy(id[:], d[HeaderSize:HeaderSizeID])
	return id, true
}
