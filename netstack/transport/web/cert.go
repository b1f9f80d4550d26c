package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Self-signed certificates for WebTransport by IP: a browser accepts a
// certificate it has no chain for when the page names its SHA-256
// (serverCertificateHashes) and it is an ECDSA P-256 certificate valid for
// at most 14 days. The server keeps two: the one it serves and the next,
// both published, so that a page that fetched the hashes before a rotation
// still connects after it.
const (
	// CertValidity is how long a self-signed certificate is valid.
	CertValidity = 13 * 24 * time.Hour
	// CertRotateAfter is the time between rotations: the served
	// certificate is replaced by the next (published since the previous
	// rotation, so CertRotateAfter old), and a new next is made. A
	// certificate is served from CertRotateAfter to twice that after it was
	// made, and is valid for a day after that.
	CertRotateAfter = 6 * 24 * time.Hour
	// certBackdate covers clocks of clients a little behind the server's.
	certBackdate = time.Hour
)

// CertHash is one published certificate hash.
type CertHash struct {
	SHA256   [32]byte
	NotAfter time.Time
}

// selfSigned is the rotating pair of self-signed certificates.
type selfSigned struct {
	now func() time.Time

	mu            sync.Mutex
	current, next *tls.Certificate
	lastRotation  time.Time
	rotated       func(hashes []CertHash) // called after a rotation (outside mu)
}

func newSelfSigned(now func() time.Time, rotated func([]CertHash)) (*selfSigned, error) {
	s := &selfSigned{now: now, rotated: rotated}
	t := now()
	var err error
	if s.current, err = makeCert(t); err != nil {
		return nil, err
	}
	if s.next, err = makeCert(t); err != nil {
		return nil, err
	}
	s.lastRotation = t
	return s, nil
}

// makeCert creates an ECDSA P-256 certificate valid from an hour before t
// for CertValidity (at most 14 days in all, as browsers require).
func makeCert(t time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sparkhost"},
		NotBefore:    t.Add(-certBackdate),
		NotAfter:     t.Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("web: self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// get returns the certificate to serve now, rotating first when due.
func (s *selfSigned) get() *tls.Certificate {
	s.mu.Lock()
	hashes, rotated := s.rotateLocked()
	c := s.current
	s.mu.Unlock()
	if rotated && s.rotated != nil {
		s.rotated(hashes)
	}
	return c
}

// rotateLocked replaces the served certificate by the next once
// CertRotateAfter passed since the last rotation, and makes a new next.
func (s *selfSigned) rotateLocked() ([]CertHash, bool) {
	t := s.now()
	if t.Sub(s.lastRotation) < CertRotateAfter {
		return nil, false
	}
	nc, err := makeCert(t)
	if err != nil {
		return nil, false // try again at the next call; the current one still serves
	}
	s.current, s.next, s.lastRotation = s.next, nc, t
	return s.hashesLocked(), true
}

// hashes are the served and the next certificate's hashes, rotating first
// when due.
func (s *selfSigned) hashes() []CertHash {
	s.get()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hashesLocked()
}

func (s *selfSigned) hashesLocked() []CertHash {
	return []CertHash{hashOf(s.current), hashOf(s.next)}
}

func hashOf(c *tls.Certificate) CertHash {
	return CertHash{SHA256: sha256.Sum256(c.Certificate[0]), NotAfter: c.Leaf.NotAfter}
}
