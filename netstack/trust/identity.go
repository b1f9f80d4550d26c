package trust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// IdentityFile is the name of the server identity file inside the data directory.
// It holds 64 bytes: the Ed25519 seed followed by its public key (the layout of
// crypto/ed25519.PrivateKey and of libsodium). The public half is redundant on
// purpose: a load re-derives it from the seed, so any damage to the seed is caught
// instead of silently becoming a different identity.
const IdentityFile = "server_identity.key"

// Errors LoadOrCreateIdentity wraps; the messages say what to do.
var (
	// ErrIdentityCorrupt: the file exists but is not a valid identity.
	ErrIdentityCorrupt = errors.New("trust: server identity file is damaged")
	// ErrIdentityPermissions: the file's mode lets group or others access it.
	ErrIdentityPermissions = errors.New("trust: server identity file is open to group or others")
)

// LoadOrCreateIdentity returns the server's Ed25519 identity from
// dataDir/server_identity.key, creating it on first start (created = true).
//
//   - dataDir is created with mode 0700 if missing (an existing one is left as is).
//   - A new key file is created with O_CREATE|O_EXCL and mode 0600, written fully,
//     then fsynced, so an existing file is never replaced, not even by a second
//     process starting at the same moment: that one loads the winner's key, or,
//     if it reads the file before the winner's 64 bytes are in, refuses it as
//     damaged (starting it again then succeeds).
//   - An existing file of the wrong size, or whose public half does not match its
//     seed, is refused with ErrIdentityCorrupt and left untouched. That includes a
//     short file left by a crash during the very first write: regenerating it
//     silently would change the server's identity under every pinned client, so
//     the operator decides (restore a backup, or move the file away).
//   - A file whose mode grants group or others any access is refused with
//     ErrIdentityPermissions: the fix is "chmod 600". This check is skipped on
//     Windows, whose permissions are not mode bits.
func LoadOrCreateIdentity(dataDir string) (priv ed25519.PrivateKey, created bool, err error) {
	if dataDir == "" {
		return nil, false, errors.New("trust: no data directory given for the server identity")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("trust: creating data directory: %w", err)
	}
	path := filepath.Join(dataDir, IdentityFile)
	priv, err = loadIdentity(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return priv, false, err
	}
	priv, err = createIdentity(path)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it between our open and our create.
		priv, err = loadIdentity(path)
		return priv, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return priv, true, nil
}

func loadIdentity(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("trust: reading server identity: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the path, so the checks apply to what is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trust: reading server identity: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file; move it away to create a new identity, "+
			"or put the identity file back", ErrIdentityCorrupt, path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o but holds the server's secret key; run \"chmod 600 %s\" "+
			"and start again (if others could read it, consider the key exposed and create a new one)",
			ErrIdentityPermissions, path, perm, path)
	}
	buf, err := io.ReadAll(io.LimitReader(f, ed25519.PrivateKeySize+1))
	defer clear(buf) // the seed should not outlive this call outside priv
	if err != nil {
		return nil, fmt.Errorf("trust: reading server identity: %w", err)
	}
	corrupt := func(what string) error {
		return fmt.Errorf("%w: %s %s; restore it from a backup, or move it away to create a new identity "+
			"(clients that pinned the old key will then refuse this server until they trust the new pin)",
			ErrIdentityCorrupt, path, what)
	}
	if len(buf) != ed25519.PrivateKeySize {
		size := fmt.Sprintf("%d bytes", len(buf))
		if len(buf) > ed25519.PrivateKeySize {
			size = "more than 64 bytes"
		}
		return nil, corrupt(fmt.Sprintf("is %s, want 64 (an Ed25519 seed and its public key)", size))
	}
	priv := ed25519.NewKeyFromSeed(buf[:ed25519.SeedSize])
	if !bytes.Equal(priv[ed25519.SeedSize:], buf[ed25519.SeedSize:]) {
		clear(priv)
		return nil, corrupt("has a public key that does not match its seed")
	}
	return priv, nil
}

func createIdentity(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("trust: generating server identity: %w", err)
	}
	if err := atomicfile.CreateExclusive(path, priv, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("trust: writing server identity %s: %w", path, err)
	}
	return priv, nil
}
