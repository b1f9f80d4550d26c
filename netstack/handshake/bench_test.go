package handshake_test

import (
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

// BenchmarkServerAccept is the server's whole per-handshake cost: X25519 key
// generation, X25519, SHA-256, one Ed25519 signature and the HKDF schedule.
// The target is at least 10,000 handshakes/s on one core (≤ 100 µs/op).
func BenchmarkServerAccept(b *testing.B) {
	f := newFixture(b)
	payload := []byte(f.v.ClientHello)
	for b.Loop() {
		if _, err := handshake.Accept(f.id, payload, f.hello, 7, 1.5, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handshakes/s")
}

// BenchmarkCheckClientHello is the cost of refusing a hello before any curve work.
func BenchmarkCheckClientHello(b *testing.B) {
	v := loadVectors(b)
	for b.Loop() {
		handshake.CheckClientHello(v.ClientHello)
	}
}

// BenchmarkClientFinish is the client's cost: Ed25519 verify, X25519, HKDF.
func BenchmarkClientFinish(b *testing.B) {
	f := newFixture(b)
	secret, nonce := arr32(f.v.Inputs.ClientSecret), arr16(f.v.Inputs.ClientNonce)
	pin := pinVerifier(f.v.IdentityPub)
	for b.Loop() {
		c, _ := handshake.NewClientHandshakeWith(secret, nonce)
		if _, err := c.Finish(f.v.AcceptedPayload, pin); err != nil {
			b.Fatal(err)
		}
	}
}
