package trust

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestIdentityCreatedThenReloaded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "server") // missing: must be created
	priv, created, err := LoadOrCreateIdentity(dir)
	if err != nil || !created || len(priv) != ed25519.PrivateKeySize {
		t.Fatalf("first start: %d-byte key, created %v, %v", len(priv), created, err)
	}
	path := filepath.Join(dir, IdentityFile)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
		}
		di, err := os.Stat(dir)
		if err != nil || di.Mode().Perm() != 0o700 {
			t.Fatalf("data dir mode %v, %v; want 0700", di.Mode(), err)
		}
	}
	before, _ := os.ReadFile(path)
	if !bytes.Equal(before, priv) {
		t.Fatal("file does not hold seed ‖ public key")
	}
	for range 3 {
		again, created, err := LoadOrCreateIdentity(dir)
		if err != nil || created || !bytes.Equal(again, priv) {
			t.Fatalf("restart: created %v, same key %v, %v", created, bytes.Equal(again, priv), err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a restart rewrote the identity file")
	}
	msg := []byte("th")
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), msg, ed25519.Sign(priv, msg)) {
		t.Fatal("loaded key does not sign")
	}
}

func TestIdentityLoadsVectorKey(t *testing.T) {
	dir := t.TempDir()
	key := ed25519.NewKeyFromSeed(mustHex(t, vectorSeed))
	if err := os.WriteFile(filepath.Join(dir, IdentityFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	priv, created, err := LoadOrCreateIdentity(dir)
	if err != nil || created {
		t.Fatalf("created %v, %v", created, err)
	}
	if got := Pin(priv.Public().(ed25519.PublicKey)); got != vectorPin {
		t.Fatalf("pin %s, want %s", got, vectorPin)
	}
}

// writeIdentity puts content at the identity path and returns the path.
func writeIdentity(t *testing.T, dir string, content []byte, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, IdentityFile)
	if err := os.WriteFile(path, content, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is subject to umask
		t.Fatal(err)
	}
	return path
}

func TestIdentityCorruptRefusedAndKept(t *testing.T) {
	good := ed25519.NewKeyFromSeed(mustHex(t, vectorSeed))
	flipped := bytes.Clone(good)
	flipped[3] ^= 1
	cases := []struct {
		name    string
		content []byte
		what    string
	}{
		{"empty", nil, "is 0 bytes, want 64 (an Ed25519 seed and its public key)"},
		{"seed only", good[:32], "is 32 bytes, want 64 (an Ed25519 seed and its public key)"},
		{"too long", append(bytes.Clone(good), '\n'), "is more than 64 bytes, want 64 (an Ed25519 seed and its public key)"},
		{"flipped seed bit", flipped, "has a public key that does not match its seed"},
		{"text", []byte(strings.Repeat("x", 64)), "has a public key that does not match its seed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeIdentity(t, dir, tc.content, 0o600)
			priv, created, err := LoadOrCreateIdentity(dir)
			if !errors.Is(err, ErrIdentityCorrupt) || priv != nil || created {
				t.Fatalf("got key %v, created %v, err %v; want ErrIdentityCorrupt", priv != nil, created, err)
			}
			want := "trust: server identity file is damaged: " + path + " " + tc.what +
				"; restore it from a backup, or move it away to create a new identity " +
				"(clients that pinned the old key will then refuse this server until they trust the new pin)"
			if err.Error() != want {
				t.Errorf("message\n got %s\nwant %s", err, want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, tc.content) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

func TestIdentityOpenToOthersRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits are not Windows permissions")
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
		dir := t.TempDir()
		key := ed25519.NewKeyFromSeed(mustHex(t, vectorSeed))
		path := writeIdentity(t, dir, key, mode)
		_, _, err := LoadOrCreateIdentity(dir)
		if !errors.Is(err, ErrIdentityPermissions) {
			t.Fatalf("mode %04o: %v; want ErrIdentityPermissions", mode, err)
		}
		if !strings.Contains(err.Error(), `run "chmod 600 `+path+`"`) {
			t.Errorf("mode %04o: message does not say what to run: %s", mode, err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if priv, _, err := LoadOrCreateIdentity(dir); err != nil || !bytes.Equal(priv, key) {
			t.Fatalf("after chmod 600: %v", err)
		}
	}
	// Stricter than 0600 is fine.
	dir := t.TempDir()
	writeIdentity(t, dir, ed25519.NewKeyFromSeed(mustHex(t, vectorSeed)), 0o400)
	if _, _, err := LoadOrCreateIdentity(dir); err != nil {
		t.Fatalf("mode 0400: %v", err)
	}
}

func TestIdentityNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, IdentityFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateIdentity(dir); !errors.Is(err, ErrIdentityCorrupt) {
		t.Fatalf("directory in place of the key: %v", err)
	}
}

func TestIdentityNoDataDir(t *testing.T) {
	if _, _, err := LoadOrCreateIdentity(""); err == nil {
		t.Fatal("empty data dir accepted")
	}
}

// Two servers starting at once on one data dir end up with one identity.
func TestIdentityConcurrentFirstStart(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	keys := make([]ed25519.PrivateKey, n)
	createdCount := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			priv, created, err := LoadOrCreateIdentity(dir)
			if err != nil {
				// A loser may read the winner's file before it is fully
				// written; it must refuse, not replace.
				if !errors.Is(err, ErrIdentityCorrupt) {
					t.Errorf("concurrent start: %v", err)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			keys[i] = priv
			if created {
				createdCount++
			}
		}()
	}
	wg.Wait()
	if createdCount != 1 {
		t.Fatalf("%d starts created an identity, want 1", createdCount)
	}
	final, _, err := LoadOrCreateIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != nil && !bytes.Equal(k, final) {
			t.Fatal("two different identities were handed out")
		}
	}
}
