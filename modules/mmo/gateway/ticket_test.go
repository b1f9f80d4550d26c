package gateway

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func testKeys(t testing.TB) (world, client ed25519.PrivateKey) {
	t.Helper()
	_, world, _ = ed25519.GenerateKey(rand.Reader)
	_, client, _ = ed25519.GenerateKey(rand.Reader)
	return world, client
}

func sample(client ed25519.PrivateKey) Ticket {
	t := Ticket{Expires: time.Unix(1_900_000_000, 0), Account: "alice", Character: "Hero"}
	copy(t.ID[:], "0123456789abcdef")
	copy(t.Server[:], bytes.Repeat([]byte{7}, KeyLen))
	copy(t.ClientKey[:], client.Public().(ed25519.PublicKey))
	return t
}

func TestTicketRoundTrip(t *testing.T) {
	world, client := testKeys(t)
	tk := sample(client)
	st, err := Sign(world, tk)
	if err != nil {
		t.Fatal(err)
	}
	th := [32]byte{1, 2, 3}
	p := Present(st, client, th)
	if len(p) != 215+len("alice")+len("Hero") {
		t.Fatalf("presented %d bytes", len(p))
	}
	got, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ticket != tk {
		t.Fatalf("parsed %+v, want %+v", got.Ticket, tk)
	}
	if err := got.Verify(world.Public().(ed25519.PublicKey), th); err != nil {
		t.Fatal(err)
	}
	// The longest ticket fits ClientFinished's 256 bytes.
	tk.Account, tk.Character = "a23456789012345678901234", "Abcdefghijklmnop"
	st, _ = Sign(world, tk)
	if n := len(Present(st, client, th)); n != MaxLen || n > 256 {
		t.Fatalf("the longest ticket is %d bytes (MaxLen %d)", n, MaxLen)
	}
}

func TestTicketRefusals(t *testing.T) {
	world, client := testKeys(t)
	other, thief := testKeys(t)
	wpub := world.Public().(ed25519.PublicKey)
	th := [32]byte{9}
	st, _ := Sign(world, sample(client))
	for _, c := range []struct {
		name string
		p    []byte
		th   [32]byte
		want error
	}{
		{"signed by another key", Present(mustSign(t, other, sample(client)), client, th), th, ErrSignature},
		{"presented by another client key", Present(st, thief, th), th, ErrProof},
		{"proof for another session", Present(st, client, [32]byte{8}), th, ErrProof},
		{"altered after signing", flip(Present(st, client, th), 30), th, ErrSignature},
		{"altered proof", flip(Present(st, client, th), len(Present(st, client, th))-1), th, ErrProof},
		{"truncated", Present(st, client, th)[:MinLen-1], th, ErrMalformed},
		{"trailing byte", append(Present(st, client, th), 0), th, ErrMalformed},
		{"version 2", setByte(Present(st, client, th), 0, 2), th, ErrMalformed},
		{"upper-case account", setByte(Present(st, client, th), fixedLen+1, 'A'), th, ErrMalformed},
		{"account length past the end", setByte(Present(st, client, th), fixedLen, 200), th, ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.p)
			if err == nil {
				err = p.Verify(wpub, c.th)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Sign(world, Ticket{Account: "Alice", Character: "Hero", Expires: time.Unix(1, 0)}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("signed a non-canonical account: %v", err)
	}
}

func mustSign(t *testing.T, k ed25519.PrivateKey, tk Ticket) []byte {
	t.Helper()
	b, err := Sign(k, tk)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 1
	return b
}

func setByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func TestWorldKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "world.key")
	if _, err := LoadWorldKey(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing key: %v", err)
	}
	k, created, err := LoadOrCreateWorldKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	again, created, err := LoadOrCreateWorldKey(path)
	if err != nil || created || !k.Equal(again) {
		t.Fatalf("reload: %v %v", created, err)
	}
	if _, err := CreateWorldKey(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("an existing key was replaced: %v", err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadWorldKey(path); !errors.Is(err, ErrKeyPermissions) {
		t.Fatalf("mode 0644: %v", err)
	}
	os.Chmod(path, 0o600)
	b, _ := os.ReadFile(path)
	b[40] ^= 1
	os.WriteFile(path, b, 0o600)
	if _, err := LoadWorldKey(path); !errors.Is(err, ErrKeyCorrupt) {
		t.Fatalf("damaged: %v", err)
	}
}

func BenchmarkVerify(b *testing.B) {
	world, client := testKeys(b)
	st, _ := Sign(world, sample(client))
	p := Present(st, client, [32]byte{})
	wpub := world.Public().(ed25519.PublicKey)
	b.ReportAllocs()
	for b.Loop() {
		pt, err := Parse(p)
		if err != nil || pt.Verify(wpub, [32]byte{}) != nil {
			b.Fatal("verify failed")
		}
	}
}
