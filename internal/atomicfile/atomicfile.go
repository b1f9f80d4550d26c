// Package atomicfile replaces small files so that a crash at any moment
// leaves either the old content or the new, never half of either. The ban
// list, known_hosts and module key-value stores use it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: a temporary file (mode 0600) in the same
// directory (created 0700 if missing), written and fsynced, renamed over
// path, then the directory fsynced. No temporary file remains, on success or
// failure.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*") // CreateTemp uses mode 0600
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	SyncDir(dir)
	return nil
}

// SyncDir makes a new or renamed directory entry durable. It is best effort:
// the file itself is in place and synced, and some platforms and file systems
// cannot sync a directory; reporting a failure would claim a change did not
// happen when it did.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// CreateExclusive writes data to a new file at path with mode perm: created
// with O_EXCL, so an existing file is never replaced (the error then
// matches fs.ErrExist), written fully and fsynced. On a failure after the
// create the partial file is removed. Secret key files use it: a second
// process starting at the same moment loses the race and loads the
// winner's key instead of writing its own.
func CreateExclusive(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}
