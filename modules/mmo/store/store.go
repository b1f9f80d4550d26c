// Package store is the mmo module's persistence: accounts (with their SCRAM
// verifiers) and characters (with their saved positions) in an embedded SQLite
// database (modernc.org/sqlite, pure Go) in the module's data directory.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a
// transaction whose commit returned survives a crash of the process or of the
// machine; every write is one transaction, begun IMMEDIATE so that the
// checks it makes (a name is free, an account has fewer than five characters)
// still hold when it commits. Foreign keys are enforced. The schema is
// versioned with PRAGMA user_version and migrated forward on Open; a database
// from a newer build is refused rather than misread.
//
// The store never holds a secret: an account's row is its verifier (salt,
// iteration count, StoredKey, ServerKey), from which a login proof cannot be
// made without the password.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// driverName is the database/sql driver modernc.org/sqlite registers.
const driverName = "sqlite"

// FileName is the database file in the directory given to Open.
const FileName = "mmo.db"

// DefaultMaxCharacters is the most characters an account may own.
const DefaultMaxCharacters = 5

// Options configures a Store. The zero value means the documented defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock another connection
	// holds; 0 means 5 s.
	BusyTimeout time.Duration
	// MaxCharacters per account; 0 means DefaultMaxCharacters.
	MaxCharacters int
	// Now is the clock for creation times; nil means time.Now.
	Now func() time.Time
}

// Store is an open database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	opt  Options
}

// Open opens (creating if needed) the database in dir, which is created with
// mode 0700 if missing, and migrates it to SchemaVersion.
func Open(ctx context.Context, dir string, opt Options) (*Store, error) {
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = 5 * time.Second
	}
	if opt.MaxCharacters <= 0 {
		opt.MaxCharacters = DefaultMaxCharacters
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("store: creating the data directory: %w", err)
	}
	path := filepath.Join(abs, FileName)
	// Create the file ourselves so that it (and the -wal and -shm files SQLite
	// derives from it) is private to the server's user. This happens before
	// SQLite opens it: closing a descriptor of an open database would drop
	// SQLite's POSIX locks.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", path, err)
	} else if err := f.Close(); err != nil {
		return nil, err
	}
	db, err := sql.Open(driverName, dsn(path, opt.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, path: path, opt: opt}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	return s, nil
}

// dsn is the connection string: every pooled connection gets the same
// pragmas, and BeginTx issues BEGIN IMMEDIATE.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not WAL (is the file system shared or read-only?)", mode)
	}
	var fk, sync int
	if err := s.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return err
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if fk != 1 || sync != 2 {
		return fmt.Errorf("foreign_keys = %d and synchronous = %d; want 1 and 2 (FULL)", fk, sync)
	}
	return migrate(ctx, s.db)
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database; committed data is on disk already.
func (s *Store) Close() error { return s.db.Close() }

// Check runs SQLite's integrity and foreign-key checks and returns an error
// describing the first problems found, or nil.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return err
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	fk, err := s.db.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	if fk.Next() {
		problems = append(problems, "a character refers to a missing account")
	}
	if err := fk.Close(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %q", ErrCorrupt, problems)
	}
	return nil
}

// ErrCorrupt: Check found the database damaged.
var ErrCorrupt = errors.New("store: database integrity check failed")

// now returns the clock's time in Unix milliseconds.
func (s *Store) now() int64 { return s.opt.Now().UnixMilli() }

// isUnique reports whether err is SQLite's UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var e interface{ Code() int }
	if !errors.As(err, &e) {
		return false
	}
	const sqliteConstraintUnique, sqliteConstraintPrimaryKey = 2067, 1555
	return e.Code() == sqliteConstraintUnique || e.Code() == sqliteConstraintPrimaryKey
}
