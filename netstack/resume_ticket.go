package netstack

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Our server's resume tickets (docs/protocol.md §3.15): opaque to the
// client, sealed with a key only this server process holds.
//
//	ticket    = key_id u8 ‖ nonce (12) ‖ ChaCha20-Poly1305(K_ticket[key_id], nonce, plaintext, aad = "SPNR-v1 ticket")
//	plaintext = version u8 = 1 ‖ client_id u32 ‖ generation u32 ‖ expires u64 (Unix s)
//	            ‖ server identity (32) ‖ name_len u8 ‖ name

// DefaultTicketLifetime is how long a resume ticket may be presented, and
// how often the key that seals tickets is replaced.
const DefaultTicketLifetime = time.Hour

const (
	ticketAAD      = "SPNR-v1 ticket"
	ticketVersion  = 1
	ticketFixed    = 1 + 4 + 4 + 8 + 32 + 1 // plaintext without the name
	ticketOverhead = 1 + chacha20poly1305.NonceSize + chacha20poly1305.Overhead
)

var errTicket = errors.New("netstack: resume ticket does not open")

// ticketClaims is what a ticket says.
type ticketClaims struct {
	clientID   uint32
	generation uint32
	expires    int64 // Unix seconds
	identity   [32]byte
	name       string
}

// ticketKey is one sealing key and its id byte.
type ticketKey struct {
	id   uint8
	aead cipher.AEAD
}

// ticketJar seals and opens tickets: the current key and the previous one,
// replaced every lifetime, so a ticket opens until it expires.
type ticketJar struct {
	lifetime time.Duration
	rng      io.Reader

	mu       sync.Mutex
	cur      ticketKey
	prev     *ticketKey
	rotateAt time.Time
}

func newTicketJar(lifetime time.Duration, now time.Time) *ticketJar {
	j := &ticketJar{lifetime: lifetime, rng: rand.Reader}
	j.cur = j.freshKey(0)
	j.rotateAt = now.Add(lifetime)
	return j
}

func (j *ticketJar) freshKey(id uint8) ticketKey {
	var k [32]byte
	_, _ = io.ReadFull(j.rng, k[:]) // crypto/rand never fails
	return newTicketKey(id, k)
}

func newTicketKey(id uint8, k [32]byte) ticketKey {
	aead, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic("netstack: chacha20poly1305.New: " + err.Error()) // only for a wrong key size
	}
	clear(k[:])
	return ticketKey{id: id, aead: aead}
}

// rotateLocked replaces the current key once its lifetime is over.
func (j *ticketJar) rotateLocked(now time.Time) {
	for !now.Before(j.rotateAt) {
		old := j.cur
		j.prev = &old
		j.cur = j.freshKey(old.id + 1)
		j.rotateAt = j.rotateAt.Add(j.lifetime)
		if now.Sub(j.rotateAt) > j.lifetime { // a long pause: no key of then is worth keeping
			j.prev, j.rotateAt = nil, now.Add(j.lifetime)
		}
	}
}

// seal returns a new ticket for c.
func (j *ticketJar) seal(c *ticketClaims, now time.Time) []byte {
	j.mu.Lock()
	j.rotateLocked(now)
	k := j.cur
	j.mu.Unlock()
	var nonce [chacha20poly1305.NonceSize]byte
	_, _ = io.ReadFull(j.rng, nonce[:])
	return sealTicket(k, nonce, c)
}

// sealTicket is the ticket layout; split out for the vectors.
func sealTicket(k ticketKey, nonce [chacha20poly1305.NonceSize]byte, c *ticketClaims) []byte {
	pt := make([]byte, 0, ticketFixed+len(c.name))
	pt = append(pt, ticketVersion)
	pt = binary.LittleEndian.AppendUint32(pt, c.clientID)
	pt = binary.LittleEndian.AppendUint32(pt, c.generation)
	pt = binary.LittleEndian.AppendUint64(pt, uint64(c.expires))
	pt = append(pt, c.identity[:]...)
	pt = append(pt, uint8(len(c.name)))
	pt = append(pt, c.name...)
	out := make([]byte, 0, ticketOverhead+len(pt))
	out = append(out, k.id)
	out = append(out, nonce[:]...)
	return k.aead.Seal(out, nonce[:], pt, []byte(ticketAAD))
}

// open authenticates a ticket under the current or the previous key and
// returns its claims. Every length is checked before it is used.
func (j *ticketJar) open(t []byte, now time.Time) (ticketClaims, error) {
	if len(t) < ticketOverhead+ticketFixed+1 || len(t) > wire.MaxResumeTicketLen {
		return ticketClaims{}, errTicket
	}
	j.mu.Lock()
	j.rotateLocked(now)
	var k *ticketKey
	switch {
	case t[0] == j.cur.id:
		k = &j.cur
	case j.prev != nil && t[0] == j.prev.id:
		k = j.prev
	}
	j.mu.Unlock()
	if k == nil {
		return ticketClaims{}, errTicket
	}
	return openTicket(*k, t)
}

// openTicket opens t with k (its key id already matched).
func openTicket(k ticketKey, t []byte) (ticketClaims, error) {
	if len(t) < ticketOverhead+ticketFixed+1 || len(t) > wire.MaxResumeTicketLen {
		return ticketClaims{}, errTicket
	}
	nonce := t[1 : 1+chacha20poly1305.NonceSize]
	pt, err := k.aead.Open(nil, nonce, t[1+chacha20poly1305.NonceSize:], []byte(ticketAAD))
	if err != nil || len(pt) < ticketFixed || pt[0] != ticketVersion {
		return ticketClaims{}, errTicket
	}
	n := int(pt[ticketFixed-1])
	if len(pt) != ticketFixed+n || n == 0 {
		return ticketClaims{}, errTicket
	}
	c := ticketClaims{
		clientID:   binary.LittleEndian.Uint32(pt[1:]),
		generation: binary.LittleEndian.Uint32(pt[5:]),
		expires:    int64(binary.LittleEndian.Uint64(pt[9:])),
		name:       string(pt[ticketFixed:]),
	}
	copy(c.identity[:], pt[17:49])
	return c, nil
}
