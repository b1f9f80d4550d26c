package handshake

import (
	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// The server's handshake does two X25519 operations: the ephemeral public key
// (scalar × base point) and the shared secret (scalar × client key). Through
// crypto/ecdh each costs a full Montgomery ladder, and NewPrivateKey computes
// the public key eagerly, so the shared secret cannot avoid a second ladder.
// Here the public key comes from the Edwards fixed-base table (about a third
// of a ladder), mapped to Montgomery u = (1+y)/(1−y), and the shared secret
// from one ladder with no public key computed. Both are constant time; tests
// compare them with crypto/ecdh on random inputs and the vectors.

// x25519Base sets dst to X25519(scalar, 9): the public key of scalar.
func x25519Base(dst, scalar *[KeySize]byte) {
	s, err := new(edwards25519.Scalar).SetBytesWithClamping(scalar[:])
	if err != nil {
		panic("handshake: 32-byte scalar refused") // cannot happen: the length is fixed
	}
	copy(dst[:], new(edwards25519.Point).ScalarBaseMult(s).BytesMontgomery())
}

// x25519 sets dst to X25519(scalar, point) (RFC 7748 §5: the scalar is
// clamped, bit 255 of point ignored).
func x25519(dst, scalar, point *[KeySize]byte) {
	var e [KeySize]byte
	copy(e[:], scalar[:])
	defer clear(e[:])
	e[0] &= 248
	e[31] &= 127
	e[31] |= 64

	var x1, x2, z2, x3, z3, tmp0, tmp1 field.Element
	if _, err := x1.SetBytes(point[:]); err != nil {
		panic("handshake: 32-byte point refused") // cannot happen: the length is fixed
	}
	x2.One()
	x3.Set(&x1)
	z3.One()

	swap := 0
	for pos := 254; pos >= 0; pos-- {
		b := int(e[pos/8]>>uint(pos&7)) & 1
		swap ^= b
		x2.Swap(&x3, swap)
		z2.Swap(&z3, swap)
		swap = b

		tmp0.Subtract(&x3, &z3)
		tmp1.Subtract(&x2, &z2)
		x2.Add(&x2, &z2)
		z2.Add(&x3, &z3)
		z3.Multiply(&tmp0, &x2)
		z2.Multiply(&z2, &tmp1)
		tmp0.Square(&tmp1)
		tmp1.Square(&x2)
		x3.Add(&z3, &z2)
		z2.Subtract(&z3, &z2)
		x2.Multiply(&tmp1, &tmp0)
		tmp1.Subtract(&tmp1, &tmp0)
		z2.Square(&z2)

		z3.Mult32(&tmp1, 121666)
		x3.Square(&x3)
		tmp0.Add(&tmp0, &z3)
		z3.Multiply(&x1, &z2)
		z2.Multiply(&tmp1, &tmp0)
	}
	x2.Swap(&x3, swap)
	z2.Swap(&z3, swap)

	z2.Invert(&z2)
	x2.Multiply(&x2, &z2)
	copy(dst[:], x2.Bytes())
}
