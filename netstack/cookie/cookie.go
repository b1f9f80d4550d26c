// Package cookie owns the address validation of protocol v4 (docs/protocol.md
// §3.4): the stateless cookie a server gives a source that has not proven it
// can receive at its address, and checks when the source echoes it.
//
// A cookie is 20 bytes, slot u32 (little-endian) ‖ MAC, where
//
//	MAC = HMAC-SHA256(secret[slot], "SPNC-v4" ‖ slot u32 ‖ address (16 bytes,
//	      IPv4 as ::ffff:a.b.c.d) ‖ port u16 ‖ binding)[0:16]
//
// and binding is the hello core (magic, version, suite, client key, nonce).
// Only the server ever computes it; a client echoes it byte for byte.
//
// Invariants, which the server's DoS rules rest on:
//
//   - Checking or minting a cookie keeps no per-source state and never
//     allocates: one HMAC over at most 93 bytes, on the stack.
//   - A cookie proves the source received a datagram sent to its (address,
//     port) during the current or the previous slot, for exactly this hello: a
//     cookie for another address, port or hello, or from an older slot, fails.
//   - Every slot has its own random secret, drawn when the slot begins; only the
//     current and the previous one are kept. A cookie minted at any moment of
//     slot n is accepted until slot n+1 ends: its lifetime is between one and
//     two rotation periods (30 to 60 s by default).
package cookie

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"
)

// Sizes and labels of the cookie.
const (
	// Size is the cookie's size: slot u32 ‖ 16-byte MAC.
	Size = 4 + MACSize
	// MACSize is the truncated HMAC-SHA256 length.
	MACSize = 16
	// SecretSize is the size of one slot's secret (an HMAC-SHA256 key).
	SecretSize = 32
	// Label opens the MAC input: 7 ASCII bytes, no terminator.
	Label = "SPNC-v4"
	// MaxBinding bounds the binding bytes (the hello core is 55).
	MaxBinding = 64
	// DefaultRotation is the slot length: how often the secret changes.
	DefaultRotation = 30 * time.Second
)

// Result is the outcome of Jar.Verify.
type Result uint8

// Verify outcomes.
const (
	// Valid: the cookie was minted by this jar for this source and hello in
	// the current or the previous slot.
	Valid Result = iota
	// Expired: well formed, but its slot is neither the current nor the
	// previous one (or the jar has no secret for it any more).
	Expired
	// Invalid: wrong length, or the MAC does not match.
	Invalid
)

func (r Result) String() string {
	switch r {
	case Valid:
		return "valid"
	case Expired:
		return "expired"
	}
	return "invalid"
}

// MAC computes the 16-byte cookie MAC of binding for source from in slot,
// under secret. It is HMAC-SHA256 (RFC 2104) written out over stack buffers
// so that it never allocates. binding longer than MaxBinding is a programming
// error and panics.
func MAC(secret *[SecretSize]byte, slot uint32, from netip.AddrPort, binding []byte) [MACSize]byte {
	if len(binding) > MaxBinding {
		panic("cookie: binding longer than MaxBinding")
	}
	const block = 64
	var msg [len(Label) + 4 + 16 + 2 + MaxBinding]byte
	m := append(msg[:0], Label...)
	m = binary.LittleEndian.AppendUint32(m, slot)
	a := from.Addr().Unmap().As16()
	m = append(m, a[:]...)
	m = binary.LittleEndian.AppendUint16(m, from.Port())
	m = append(m, binding...)

	var inner [block + len(msg)]byte
	for i := range block {
		var k byte
		if i < SecretSize {
			k = secret[i]
		}
		inner[i] = k ^ 0x36
	}
	n := copy(inner[block:], m)
	ih := sha256.Sum256(inner[:block+n])
	var outer [block + sha256.Size]byte
	for i := range block {
		var k byte
		if i < SecretSize {
			k = secret[i]
		}
		outer[i] = k ^ 0x5c
	}
	copy(outer[block:], ih[:])
	oh := sha256.Sum256(outer[:])
	clear(inner[:block])
	clear(outer[:block])
	var out [MACSize]byte
	copy(out[:], oh[:MACSize])
	return out
}

// Jar mints and verifies cookies with a secret that rotates every rotation
// period. It is safe for concurrent use; Mint and Verify never allocate
// (except when a new slot begins: one read of fresh randomness).
type Jar struct {
	rotation time.Duration
	rng      io.Reader

	mu      sync.Mutex
	origin  time.Time
	started bool
	slot    uint32 // the current slot
	cur     [SecretSize]byte
	prev    [SecretSize]byte // the secret of slot-1, when hasPrev
	hasPrev bool
}

// NewJar returns a Jar whose secrets rotate every rotation (0 means
// DefaultRotation) and come from rng (nil means crypto/rand). Slots are
// counted from the first time the jar is used.
func NewJar(rotation time.Duration, rng io.Reader) *Jar {
	if rotation <= 0 {
		rotation = DefaultRotation
	}
	if rng == nil {
		rng = rand.Reader
	}
	return &Jar{rotation: rotation, rng: rng}
}

// Rotation returns the slot length.
func (j *Jar) Rotation() time.Duration { return j.rotation }

// advance moves the jar to the slot of now, drawing fresh secrets as slots
// begin. It runs with j.mu held. A time earlier than one already seen stays in
// the current slot.
func (j *Jar) advance(now time.Time) error {
	if !j.started {
		j.origin, j.started = now, true
		return j.draw(&j.cur)
	}
	el := now.Sub(j.origin)
	if el < 0 {
		return nil
	}
	slot := uint32(min(el/j.rotation, 1<<32-1))
	if slot <= j.slot {
		return nil
	}
	if slot == j.slot+1 {
		j.prev, j.hasPrev = j.cur, true
	} else {
		clear(j.prev[:])
		j.hasPrev = false
	}
	j.slot = slot
	return j.draw(&j.cur)
}

func (j *Jar) draw(dst *[SecretSize]byte) error {
	if _, err := io.ReadFull(j.rng, dst[:]); err != nil {
		return fmt.Errorf("cookie: reading a fresh secret: %w", err)
	}
	return nil
}

// Mint returns the cookie for source from and binding at time now. It fails
// only when fresh randomness cannot be read at a slot change.
func (j *Jar) Mint(now time.Time, from netip.AddrPort, binding []byte) ([Size]byte, error) {
	var c [Size]byte
	j.mu.Lock()
	if err := j.advance(now); err != nil {
		j.mu.Unlock()
		return c, err
	}
	slot, secret := j.slot, j.cur
	j.mu.Unlock()
	binary.LittleEndian.PutUint32(c[:], slot)
	mac := MAC(&secret, slot, from, binding)
	clear(secret[:])
	copy(c[4:], mac[:])
	return c, nil
}

// Verify checks cookie for source from and binding at time now. A cookie
// Verify cannot judge because fresh randomness failed counts as Expired.
func (j *Jar) Verify(now time.Time, from netip.AddrPort, binding, cookie []byte) Result {
	if len(cookie) != Size {
		return Invalid
	}
	slot := binary.LittleEndian.Uint32(cookie)
	var secret [SecretSize]byte
	j.mu.Lock()
	err := j.advance(now)
	ok := err == nil
	switch {
	case !ok:
	case slot == j.slot:
		secret = j.cur
	case slot == j.slot-1 && j.slot > 0 && j.hasPrev:
		secret = j.prev
	default:
		ok = false
	}
	j.mu.Unlock()
	if !ok {
		return Expired
	}
	mac := MAC(&secret, slot, from, binding)
	clear(secret[:])
	if subtle.ConstantTimeCompare(mac[:], cookie[4:]) != 1 {
		return Invalid
	}
	return Valid
}
