package gateway

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// The world key file holds 64 bytes, the Ed25519 seed followed by its
// public key (the layout of the server identity file), mode 0600. Every area
// server of a world has a copy; none is ever committed or logged. The
// public half is checked against the seed on load, so damage is caught
// instead of becoming another key.

// Errors of the world key file.
var (
	ErrKeyCorrupt     = errors.New("gateway: the world key file is damaged")
	ErrKeyPermissions = errors.New("gateway: the world key file is open to group or others")
)

// CreateWorldKey writes a new world key to path (mode 0600, never
// replacing an existing file: fs.ErrExist) and returns it.
func CreateWorldKey(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.CreateExclusive(path, priv, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("gateway: writing the world key %s: %w", path, err)
	}
	return priv, nil
}

// LoadWorldKey reads the world key at path: fs.ErrNotExist if there is
// none, ErrKeyPermissions if group or others may access it, ErrKeyCorrupt
// if it is not a 64-byte key whose halves match.
func LoadWorldKey(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrKeyCorrupt, path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o but holds the world's secret key; run \"chmod 600 %s\"",
			ErrKeyPermissions, path, perm, path)
	}
	buf, err := io.ReadAll(io.LimitReader(f, ed25519.PrivateKeySize+1))
	defer clear(buf)
	if err != nil {
		return nil, err
	}
	if len(buf) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: %s is %d bytes, want 64 (an Ed25519 seed and its public key); copy it again from another area server",
			ErrKeyCorrupt, path, len(buf))
	}
	priv := ed25519.NewKeyFromSeed(buf[:ed25519.SeedSize])
	if !bytes.Equal(priv[ed25519.SeedSize:], buf[ed25519.SeedSize:]) {
		clear(priv)
		return nil, fmt.Errorf("%w: %s has a public key that does not match its seed", ErrKeyCorrupt, path)
	}
	return priv, nil
}

// LoadOrCreateWorldKey loads the key at path, creating it when there is
// none (created = true). A second process creating it at the same moment
// loads the winner's.
func LoadOrCreateWorldKey(path string) (priv ed25519.PrivateKey, created bool, err error) {
	priv, err = LoadWorldKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return priv, false, err
	}
	priv, err = CreateWorldKey(path)
	if errors.Is(err, fs.ErrExist) {
		priv, err = LoadWorldKey(path)
		return priv, false, err
	}
	return priv, err == nil, err
}
