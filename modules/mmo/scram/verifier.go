package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// Sizes and limits. Iteration counts are PBKDF2 rounds.
const (
	// KeyLen is the size of every SCRAM-SHA-256 key, proof and signature.
	KeyLen = sha256.Size
	// SaltLen is the size of a registration salt.
	SaltLen = 16
	// MaxSaltLen bounds a salt a client accepts in a server-first-message.
	MaxSaltLen = 64
	// ChannelBindingLen is the size of the channel-binding data: the session's
	// handshake transcript hash th.
	ChannelBindingLen = 32
	// ChannelBindingName is the cb-name of the gs2 header.
	ChannelBindingName = "sparkhost-th"
	// DefaultIterations is the count GenerateVerifier's callers should use
	// (OWASP's 2023 figure for PBKDF2-HMAC-SHA-256, about 0.1 s on a desktop).
	DefaultIterations = 600_000
	// DefaultMinIterations is the least count a Server or Client accepts when
	// its config says 0: RFC 7677's minimum.
	DefaultMinIterations = 4096
	// MaxIterations bounds the work a peer can demand: a Client refuses a
	// server-first-message above it and a Server refuses such a verifier.
	MaxIterations = 10_000_000
	// MaxPasswordLen bounds a password in bytes.
	MaxPasswordLen = 1024
)

// Errors. Match them with errors.Is; returned errors may wrap them with detail.
var (
	// ErrPasswordInvalid: the password is empty, longer than MaxPasswordLen,
	// or has a byte outside printable ASCII (see the package comment).
	ErrPasswordInvalid = errors.New("scram: password must be 1..1024 printable ASCII characters")
	// ErrIterationsTooLow: an iteration count below the configured minimum.
	ErrIterationsTooLow = errors.New("scram: iteration count below the minimum")
	// ErrIterationsTooHigh: an iteration count above MaxIterations (or a
	// client's configured maximum).
	ErrIterationsTooHigh = errors.New("scram: iteration count above the maximum")
	// ErrBadVerifier: a verifier whose salt is not SaltLen bytes.
	ErrBadVerifier = errors.New("scram: verifier salt must be 16 bytes")
)

// Verifier is what the server stores for an account, computed by the client at
// registration: SaltedPassword = PBKDF2-HMAC-SHA-256(password, Salt,
// Iterations), ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey =
// H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key"). Neither the
// password nor anything from which a login proof can be forged without
// guessing it is in a Verifier.
type Verifier struct {
	Salt       []byte
	Iterations int
	StoredKey  [KeyLen]byte
	ServerKey  [KeyLen]byte
}

// CheckPassword reports ErrPasswordInvalid unless password follows the
// package's SASLprep choice: 1..MaxPasswordLen bytes, each 0x20..0x7E.
func CheckPassword(password string) error {
	if len(password) == 0 || len(password) > MaxPasswordLen {
		return ErrPasswordInvalid
	}
	for i := 0; i < len(password); i++ {
		if c := password[i]; c < 0x20 || c > 0x7E {
			return ErrPasswordInvalid
		}
	}
	return nil
}

// NewVerifier computes the verifier of password with salt and iterations. The
// salt may be 1..MaxSaltLen bytes here (RFC vectors); Check requires SaltLen.
func NewVerifier(password string, salt []byte, iterations int) (Verifier, error) {
	if err := CheckPassword(password); err != nil {
		return Verifier{}, err
	}
	if len(salt) == 0 || len(salt) > MaxSaltLen {
		return Verifier{}, fmt.Errorf("%w (got %d bytes)", ErrBadVerifier, len(salt))
	}
	if err := checkIterations(iterations, 1, MaxIterations); err != nil {
		return Verifier{}, err
	}
	salted, err := saltedPassword(password, salt, iterations)
	if err != nil {
		return Verifier{}, err
	}
	v := Verifier{Salt: append([]byte(nil), salt...), Iterations: iterations}
	clientKey := hmacSum(salted[:], "Client Key")
	v.StoredKey = sha256.Sum256(clientKey[:])
	v.ServerKey = hmacSum(salted[:], "Server Key")
	return v, nil
}

// GenerateVerifier computes the verifier of password with a fresh SaltLen-byte
// salt read from rnd (nil: crypto/rand) and the given iteration count.
func GenerateVerifier(password string, iterations int, rnd io.Reader) (Verifier, error) {
	if err := CheckPassword(password); err != nil {
		return Verifier{}, err
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	salt := make([]byte, SaltLen)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return Verifier{}, fmt.Errorf("scram: reading a random salt: %w", err)
	}
	return NewVerifier(password, salt, iterations)
}

// Check reports whether v is acceptable for registration on a server whose
// minimum iteration count is minIterations (0: DefaultMinIterations): the salt
// is SaltLen bytes and minIterations ≤ Iterations ≤ MaxIterations.
func (v *Verifier) Check(minIterations int) error {
	if len(v.Salt) != SaltLen {
		return fmt.Errorf("%w (got %d bytes)", ErrBadVerifier, len(v.Salt))
	}
	return checkIterations(v.Iterations, orDefault(minIterations, DefaultMinIterations), MaxIterations)
}

func checkIterations(n, minimum, maximum int) error {
	switch {
	case n < minimum:
		return fmt.Errorf("%w: %d < %d", ErrIterationsTooLow, n, minimum)
	case n > maximum:
		return fmt.Errorf("%w: %d > %d", ErrIterationsTooHigh, n, maximum)
	}
	return nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// MockVerifier returns a stable verifier for an account that does not exist,
// so that a server answers a login for an unknown name exactly as for a known
// one (same message shape, a salt that does not change between attempts) and
// reveals nothing about which names exist. secret is a server-private key of
// at least 16 bytes; iterations should be the count real accounts use
// (DefaultIterations for the sparkhost client). No proof verifies against it:
// its StoredKey is a MAC under secret, not the hash of any key a client knows.
func MockVerifier(secret []byte, username string, iterations int) Verifier {
	mac := func(label string) [KeyLen]byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte("sparkhost scram mock "))
		h.Write([]byte(label))
		h.Write([]byte{0})
		h.Write([]byte(username))
		var out [KeyLen]byte
		h.Sum(out[:0])
		return out
	}
	salt := mac("salt")
	return Verifier{
		Salt:       salt[:SaltLen],
		Iterations: iterations,
		StoredKey:  mac("stored"),
		ServerKey:  mac("server"),
	}
}

func saltedPassword(password string, salt []byte, iterations int) ([KeyLen]byte, error) {
	var out [KeyLen]byte
	k, err := pbkdf2.Key(sha256.New, password, salt, iterations, KeyLen)
	if err != nil {
		return out, fmt.Errorf("scram: PBKDF2: %w", err)
	}
	copy(out[:], k)
	return out, nil
}

func hmacSum(key []byte, msgs ...string) [KeyLen]byte {
	h := hmac.New(sha256.New, key)
	for _, m := range msgs {
		h.Write([]byte(m))
	}
	var out [KeyLen]byte
	h.Sum(out[:0])
	return out
}
