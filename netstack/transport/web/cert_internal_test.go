package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"testing"
	"time"
)

// TestSelfSignedRotation: the certificates are ECDSA P-256, valid for at
// most 14 days from a little before they are made; two are published (the
// served one first); after CertRotateAfter the next is served, published
// since the previous rotation, and every served certificate is still valid
// when it is replaced.
func TestSelfSignedRotation(t *testing.T) {
	now := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	rotations := 0
	s, err := newSelfSigned(func() time.Time { return now }, func([]CertHash) { rotations++ })
	if err != nil {
		t.Fatal(err)
	}
	published := s.hashes()
	for step := range 60 { // 60 half-days: rotations at days 6, 12, 18 and 24
		served := s.get()
		leaf := served.Leaf
		if k, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Fatalf("step %d: key %T, want ECDSA P-256", step, leaf.PublicKey)
		}
		if v := leaf.NotAfter.Sub(leaf.NotBefore); v > 14*24*time.Hour {
			t.Fatalf("step %d: valid for %v, more than 14 days", step, v)
		}
		if now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter) {
			t.Fatalf("step %d: served a certificate valid %v..%v at %v", step, leaf.NotBefore, leaf.NotAfter, now)
		}
		h := hashOf(served)
		if hs := s.hashes(); hs[0] != h {
			t.Fatalf("step %d: the served certificate is not the first hash published", step)
		}
		// A page that fetched the hashes half a day ago still connects.
		if published[0] != h && published[1] != h {
			t.Fatalf("step %d: the served certificate was not published half a day ago", step)
		}
		published = s.hashes()
		now = now.Add(12 * time.Hour)
	}
	if rotations != 4 {
		t.Fatalf("%d rotations in 29.5 days, want 4", rotations)
	}
}
