// Package gateway is the gateway ticket of the mmo's area servers
// (docs/scaling.md, docs/protocol.md §3.13): what a server gives a client
// whose character crosses into a neighbour's area, and what that neighbour
// checks before it admits the character without a password.
//
// A ticket is signed by the world's key (Ed25519, one key shared by every
// area server of a world) and names the account, the character, the
// destination server's identity key (its pin), a client key and an expiry;
// the client presents it in the sealed ClientFinished of its new session
// with a proof: a signature by the client key over the new session's
// channel binding. A ticket copied from anywhere is therefore useless to
// anyone but the client holding the client key, and useless on any session
// but one that client opened itself.
//
// This package parses and verifies; it never decides. Parse bounds every
// field before anything is read into memory; Verify checks the world
// signature and the proof; whether the ticket is for this server, still
// live, unused and for a character nobody else plays is the caller's check
// (the destination and the shared database, modules/mmo/store). Nothing in
// a ticket is trusted before both have passed.
package gateway

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Version is the ticket layout's version byte.
const Version = 1

// Sizes of the layout (docs/protocol.md §3.13).
const (
	IDLen        = 16
	KeyLen       = ed25519.PublicKeySize
	SigLen       = ed25519.SignatureSize
	fixedLen     = 1 + IDLen + 4 + KeyLen + KeyLen // version, id, expires, server, client key
	MinAccount   = 3
	MaxAccount   = 24
	MinCharacter = 3
	MaxCharacter = 16
	// MinLen and MaxLen bound a presented ticket (signed ticket and proof).
	MinLen = fixedLen + 1 + MinAccount + 1 + MinCharacter + 2*SigLen
	MaxLen = fixedLen + 1 + MaxAccount + 1 + MaxCharacter + 2*SigLen
)

// Domain-separation prefixes of the two signatures.
const (
	ticketContext = "sparkhost gateway ticket v1\x00"
	proofContext  = "sparkhost gateway proof v1\x00"
)

// Errors. A presented ticket fails with exactly one of them.
var (
	// ErrMalformed: the bytes are not a v1 ticket (length, version, a name
	// that breaks its rule, bytes after the proof).
	ErrMalformed = errors.New("gateway: malformed ticket")
	// ErrSignature: the world signature does not verify with the world's
	// public key (signed by another key, or altered).
	ErrSignature = errors.New("gateway: the ticket is not signed by this world's key")
	// ErrProof: the client proof does not verify: the presenter does not
	// hold the ticket's client key, or made the proof for another session.
	ErrProof = errors.New("gateway: the ticket's proof is not the client key's over this session")
)

// Ticket is what a gateway ticket says.
type Ticket struct {
	// ID is random, unique per ticket: the single-use key.
	ID [IDLen]byte
	// Expires is the end of the ticket's life, whole seconds (the shared
	// database's clock decides; docs/scaling.md).
	Expires time.Time
	// Server is the destination server's identity key: its pin.
	Server [KeyLen]byte
	// ClientKey is the key whose holder may present the ticket.
	ClientKey [KeyLen]byte
	// Account is the canonical account name (3..24 of a-z 0-9 _).
	Account string
	// Character is the character's name as created (3..16 letters).
	Character string
}

// Sign returns the signed ticket (everything but the proof).
func Sign(world ed25519.PrivateKey, t Ticket) ([]byte, error) {
	if !validAccount(t.Account) || !validCharacter(t.Character) {
		return nil, fmt.Errorf("%w: account %q or character %q breaks its rule", ErrMalformed, t.Account, t.Character)
	}
	exp := t.Expires.Unix()
	if exp <= 0 || exp > 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: expiry %v out of range", ErrMalformed, t.Expires)
	}
	b := make([]byte, 0, MaxLen)
	b = append(b, Version)
	b = append(b, t.ID[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(exp))
	b = append(b, t.Server[:]...)
	b = append(b, t.ClientKey[:]...)
	b = append(b, byte(len(t.Account)))
	b = append(b, t.Account...)
	b = append(b, byte(len(t.Character)))
	b = append(b, t.Character...)
	return append(b, ed25519.Sign(world, signed(ticketContext, b))...), nil
}

// Present returns what the client sends in ClientFinished: the signed
// ticket and its proof for the session whose channel binding is th.
func Present(signedTicket []byte, clientKey ed25519.PrivateKey, th [32]byte) []byte {
	out := make([]byte, 0, len(signedTicket)+SigLen)
	out = append(out, signedTicket...)
	return append(out, ed25519.Sign(clientKey, proofMessage(signedTicket, th))...)
}

// proofMessage is what the client key signs: the context, the session's
// channel binding and the hash of the signed ticket.
func proofMessage(signedTicket []byte, th [32]byte) []byte {
	h := sha256.Sum256(signedTicket)
	m := make([]byte, 0, len(proofContext)+64)
	m = append(m, proofContext...)
	m = append(m, th[:]...)
	return append(m, h[:]...)
}

func signed(context string, body []byte) []byte {
	m := make([]byte, 0, len(context)+len(body))
	return append(append(m, context...), body...)
}

// Presented is a parsed, not yet verified, presented ticket.
type Presented struct {
	Ticket
	body, signedTicket, sig, proof []byte // views into the parsed bytes
}

// Parse reads a presented ticket. It checks lengths and the layout only:
// nothing it returns is to be believed before Verify.
func Parse(p []byte) (Presented, error) {
	var out Presented
	if len(p) < MinLen || len(p) > MaxLen || p[0] != Version {
		return out, ErrMalformed
	}
	i := 1
	copy(out.ID[:], p[i:i+IDLen])
	i += IDLen
	out.Expires = time.Unix(int64(binary.LittleEndian.Uint32(p[i:])), 0)
	i += 4
	copy(out.Server[:], p[i:i+KeyLen])
	i += KeyLen
	copy(out.ClientKey[:], p[i:i+KeyLen])
	i += KeyLen
	account, i, ok := field(p, i, MinAccount, MaxAccount)
	if !ok || !validAccount(account) {
		return Presented{}, ErrMalformed
	}
	character, i, ok := field(p, i, MinCharacter, MaxCharacter)
	if !ok || !validCharacter(character) {
		return Presented{}, ErrMalformed
	}
	if len(p)-i != 2*SigLen {
		return Presented{}, ErrMalformed
	}
	out.Account, out.Character = account, character
	out.body, out.signedTicket = p[:i], p[:i+SigLen]
	out.sig, out.proof = p[i:i+SigLen], p[i+SigLen:]
	return out, nil
}

// field reads a u8-length name at p[i:], of min..max bytes.
func field(p []byte, i, minLen, maxLen int) (string, int, bool) {
	if i >= len(p) {
		return "", i, false
	}
	n := int(p[i])
	i++
	if n < minLen || n > maxLen || len(p)-i < n {
		return "", i, false
	}
	return string(p[i : i+n]), i + n, true
}

// Verify checks the world signature with the world's public key, then the
// proof with the ticket's client key over th, the channel binding of the
// session that presented it.
func (t *Presented) Verify(world ed25519.PublicKey, th [32]byte) error {
	if len(world) != ed25519.PublicKeySize || !ed25519.Verify(world, signed(ticketContext, t.body), t.sig) {
		return ErrSignature
	}
	if !ed25519.Verify(t.ClientKey[:], proofMessage(t.signedTicket, th), t.proof) {
		return ErrProof
	}
	return nil
}

func validAccount(s string) bool {
	if len(s) < MinAccount || len(s) > MaxAccount {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func validCharacter(s string) bool {
	if len(s) < MinCharacter || len(s) > MaxCharacter {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
