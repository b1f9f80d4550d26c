package scram

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

// RFC 7677 §3: user "user", password "pencil", no channel binding.
const (
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	rfcClientNonce = "rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
)

func rfcVerifier(t *testing.T) Verifier {
	t.Helper()
	salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRFC7677Client(t *testing.T) {
	c, err := NewClient("user", "pencil", ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c.first.Nonce = rfcClientNonce // the vector's nonce instead of a random one
	if got := c.First(); got != rfcClientFirst {
		t.Fatalf("client-first\n got %s\nwant %s", got, rfcClientFirst)
	}
	final, err := c.Final(rfcServerFirst)
	if err != nil {
		t.Fatal(err)
	}
	if final != rfcClientFinal {
		t.Fatalf("client-final\n got %s\nwant %s", final, rfcClientFinal)
	}
	if err := c.Verify(rfcServerFinal); err != nil {
		t.Fatalf("server-final: %v", err)
	}
}

func TestRFC7677Server(t *testing.T) {
	s, err := NewServer(ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.ReadClientFirst(rfcClientFirst)
	if err != nil {
		t.Fatal(err)
	}
	if first.Username != "user" {
		t.Fatalf("username %q", first.Username)
	}
	if _, err := s.ServerFirst(rfcVerifier(t)); err != nil {
		t.Fatal(err)
	}
	// Replace the random server nonce with the vector's.
	s.nonce = rfcClientNonce + rfcServerNonce
	sf := ServerFirst{Nonce: s.nonce, Salt: s.verifier.Salt, Iterations: s.verifier.Iterations}
	s.serverFirst = sf.String()
	if s.serverFirst != rfcServerFirst {
		t.Fatalf("server-first\n got %s\nwant %s", s.serverFirst, rfcServerFirst)
	}
	final, err := s.ReadClientFinal(rfcClientFinal)
	if err != nil {
		t.Fatal(err)
	}
	if final != rfcServerFinal {
		t.Fatalf("server-final\n got %s\nwant %s", final, rfcServerFinal)
	}
}

// The channel-bound example of docs/mmo.md: account "alice", password
// "pencil", salt 01..10, 4096 iterations, th = A0..BF, client nonce from the
// bytes 00..11, server nonce from 40..51. Cross-checked with Python's hashlib
// and hmac.
func TestChannelBoundVector(t *testing.T) {
	seq := func(start byte, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = start + byte(i)
		}
		return b
	}
	const (
		storedKey   = "07d31bf134a40ecbe975d4c3d010e6483a49028d3cfa0bcaf33712086463099c"
		serverKey   = "d33e248e09dd4722509c0f771ed604dfbe85d6f303239f503359c370fcaef11c"
		clientFirst = "p=sparkhost-th,,n=alice,r=AAECAwQFBgcICQoLDA0ODxAR"
		serverFirst = "r=AAECAwQFBgcICQoLDA0ODxARQEFCQ0RFRkdISUpLTE1OT1BR,s=AQIDBAUGBwgJCgsMDQ4PEA==,i=4096"
		clientFinal = "c=cD1zcGFya2hvc3QtdGgsLKChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/,r=AAECAwQFBgcICQoLDA0ODxARQEFCQ0RFRkdISUpLTE1OT1BR,p=3CNy/aISEuCbS2U/taj+zuCeisDigNvFTlwkxsrn9ts="
		serverFinal = "v=GlASnBNzsHLU7CXNkLn4gZkTEUik21PL7y30Ne5Rrpc="
	)
	th := seq(0xA0, 32)
	v, err := NewVerifier("pencil", seq(0x01, 16), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(v.StoredKey[:]) != storedKey || hex.EncodeToString(v.ServerKey[:]) != serverKey {
		t.Fatalf("verifier %x %x", v.StoredKey, v.ServerKey)
	}
	c, err := NewClient("alice", "pencil", ClientConfig{ChannelBinding: th, Rand: bytes.NewReader(seq(0x00, 18))})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(ServerConfig{ChannelBinding: th, Rand: bytes.NewReader(seq(0x40, 18))})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, got, want string) {
		if got != want {
			t.Errorf("%s\n got %s\nwant %s", name, got, want)
		}
	}
	first := c.First()
	check("client-first", first, clientFirst)
	if _, err := s.ReadClientFirst(first); err != nil {
		t.Fatal(err)
	}
	sf, err := s.ServerFirst(v)
	if err != nil {
		t.Fatal(err)
	}
	check("server-first", sf, serverFirst)
	cf, err := c.Final(sf)
	if err != nil {
		t.Fatal(err)
	}
	check("client-final", cf, clientFinal)
	final, err := s.ReadClientFinal(cf)
	if err != nil {
		t.Fatal(err)
	}
	check("server-final", final, serverFinal)
	if err := c.Verify(final); err != nil {
		t.Fatal(err)
	}
}
