// Package roomauth is the room password scheme of docs/protocol.md §13.6:
// a room's password never leaves the client that knows it. The creator
// sends a salted verifier; a joiner sends a proof bound to its own session
// (the channel binding, the handshake transcript hash) and to the room, so
// a proof is worth nothing in another session or for another room, and the
// server, which keeps only the verifier, cannot join in anyone's place.
//
// The construction is SCRAM's (RFC 5802) with the server's nonce replaced
// by the channel binding, which is already unique to the session:
//
//	SaltedPassword  = PBKDF2-HMAC-SHA-256(password, salt, iterations, 32)
//	ClientKey       = HMAC-SHA-256(SaltedPassword, "Client Key")
//	StoredKey       = SHA-256(ClientKey)                      (the verifier)
//	AuthMessage     = "sparkhost room v1" ‖ room (u32 LE) ‖ channel binding (32 bytes)
//	ClientSignature = HMAC-SHA-256(StoredKey, AuthMessage)
//	ClientProof     = ClientKey XOR ClientSignature           (sent to join)
//
// The server recovers ClientKey = ClientProof XOR ClientSignature and
// accepts when SHA-256(ClientKey) equals StoredKey, in constant time.
//
// It is pure computation shared by server and clients: no state, no I/O
// but the random salt.
package roomauth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sizes and bounds.
const (
	SaltLen = 16
	KeyLen  = 32
	// MinIterations and MaxIterations bound the PBKDF2 iterations a
	// server accepts at creation and a client agrees to compute.
	MinIterations = 1024
	MaxIterations = 1_000_000
	// DefaultIterations is what clients choose.
	DefaultIterations = 4096
	// MaxPasswordLen bounds a password in bytes.
	MaxPasswordLen = 256
)

// authLabel starts every AuthMessage.
const authLabel = "sparkhost room v1"

// Verifier is what the server keeps of a room's password.
type Verifier struct {
	Salt       [SaltLen]byte
	Iterations uint32
	StoredKey  [KeyLen]byte
}

// Errors of the scheme.
var (
	ErrIterations = fmt.Errorf("roomauth: iterations outside %d..%d", MinIterations, MaxIterations)
	ErrPassword   = fmt.Errorf("roomauth: a password is 1..%d bytes", MaxPasswordLen)
)

// NewVerifier draws a salt from random and derives password's verifier.
func NewVerifier(password string, iterations uint32, random io.Reader) (Verifier, error) {
	v := Verifier{Iterations: iterations}
	if _, err := io.ReadFull(random, v.Salt[:]); err != nil {
		return Verifier{}, fmt.Errorf("roomauth: salt: %w", err)
	}
	ck, err := clientKey(password, v.Salt, iterations)
	if err != nil {
		return Verifier{}, err
	}
	v.StoredKey = sha256.Sum256(ck[:])
	return v, nil
}

// Proof is a joiner's ClientProof for room (whose salt and iterations the
// room list gives) in the session with channel binding cb.
func Proof(password string, salt [SaltLen]byte, iterations uint32, room uint32, cb [32]byte) ([KeyLen]byte, error) {
	ck, err := clientKey(password, salt, iterations)
	if err != nil {
		return [KeyLen]byte{}, err
	}
	stored := sha256.Sum256(ck[:])
	sig := signature(stored, room, cb)
	var proof [KeyLen]byte
	subtle.XORBytes(proof[:], ck[:], sig[:])
	return proof, nil
}

// Check reports whether proof opens v's room for the session with channel
// binding cb. It takes the same time whatever the proof.
func (v *Verifier) Check(room uint32, cb [32]byte, proof []byte) bool {
	if len(proof) != KeyLen {
		return false
	}
	sig := signature(v.StoredKey, room, cb)
	var ck [KeyLen]byte
	subtle.XORBytes(ck[:], proof, sig[:])
	got := sha256.Sum256(ck[:])
	return subtle.ConstantTimeCompare(got[:], v.StoredKey[:]) == 1
}

// CheckIterations reports whether n is an iteration count the scheme
// accepts.
func CheckIterations(n uint32) error {
	if n < MinIterations || n > MaxIterations {
		return ErrIterations
	}
	return nil
}

func clientKey(password string, salt [SaltLen]byte, iterations uint32) ([KeyLen]byte, error) {
	if len(password) == 0 || len(password) > MaxPasswordLen {
		return [KeyLen]byte{}, ErrPassword
	}
	if err := CheckIterations(iterations); err != nil {
		return [KeyLen]byte{}, err
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt[:], int(iterations), KeyLen)
	if err != nil {
		return [KeyLen]byte{}, errors.Join(errors.New("roomauth: pbkdf2"), err)
	}
	mac := hmac.New(sha256.New, salted)
	mac.Write([]byte("Client Key"))
	var ck [KeyLen]byte
	mac.Sum(ck[:0])
	return ck, nil
}

func signature(stored [KeyLen]byte, room uint32, cb [32]byte) [KeyLen]byte {
	mac := hmac.New(sha256.New, stored[:])
	mac.Write([]byte(authLabel))
	var id [4]byte
	binary.LittleEndian.PutUint32(id[:], room)
	mac.Write(id[:])
	mac.Write(cb[:])
	var sig [KeyLen]byte
	mac.Sum(sig[:0])
	return sig
}
