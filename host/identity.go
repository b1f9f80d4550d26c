package host

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sparkhost/sparkhost/netstack/trust"
)

// announceIdentity says, before the key is made, that a first start creates
// the server identity: the one step of a first start that writes a secret.
func announceIdentity(log *slog.Logger, dataDir string) {
	path := filepath.Join(dataDir, trust.IdentityFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		log.Info("first start: creating the server identity (Ed25519 key, mode 0600); keep it: clients pin it", "path", path)
	}
}
