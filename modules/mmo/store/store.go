// Package store is the mmo module's persistence: accounts (with their SCRAM
// verifiers), characters (with their saved positions), and which server of
// the world holds each login and each character in play. Two backends sit
// behind one type, Store:
//
//   - SQLite (modernc.org/sqlite, pure Go), the default: one file in the
//     module's data directory, in WAL mode with synchronous=FULL; every write
//     transaction is begun IMMEDIATE, so the checks it makes (a name is free,
//     an account has fewer than five characters) still hold when it commits.
//   - PostgreSQL (github.com/jackc/pgx/v5 through database/sql, pure Go),
//     shared by several servers: every write transaction is SERIALIZABLE and
//     is retried, a bounded number of times with backoff, when PostgreSQL
//     reports a serialization failure or a deadlock (SQLSTATE 40001, 40P01).
//     Commits wait for the server's WAL flush (synchronous_commit is left as
//     the operator set it; the default, on, is what the promise needs).
//
// Both backends run the same SQL (written with $n placeholders, which both
// accept) with the same semantics; a dialect holds what differs: the schema
// DDL, how the schema version is stored, how errors are classified and how
// the current time is read. A transaction whose commit returned survives a
// crash of the process or of the machine. The schema is versioned and
// migrated forward on Open in one transaction; a database from a newer
// build is refused rather than misread.
//
// The store never holds a secret: an account's row is its verifier (salt,
// iteration count, StoredKey, ServerKey), from which a login proof cannot be
// made without the password. A PostgreSQL URL's password is never part of
// an error or a log line (see Redact).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultMaxCharacters is the most characters an account may own.
const DefaultMaxCharacters = 5

// Options configures a Store. The zero value means the documented defaults.
type Options struct {
	// BusyTimeout is how long an SQLite statement waits for a lock another
	// connection holds; 0 means 5 s. PostgreSQL ignores it.
	BusyTimeout time.Duration
	// MaxCharacters per account; 0 means DefaultMaxCharacters.
	MaxCharacters int
	// MaxConns bounds the connection pool; 0 means 4 (SQLite) or 8
	// (PostgreSQL).
	MaxConns int
	// Retries bounds how often a PostgreSQL transaction is retried after a
	// serialization failure or deadlock; 0 means 20.
	Retries int
	// Now is the clock for creation times; nil means time.Now. Leases are
	// timed by the database's clock, never by this one.
	Now func() time.Time
	// Area is the area of the world this server simulates ("" for none),
	// recorded with its lease: a neighbour hands characters over to the
	// live server of an area (HandOff).
	Area string
}

func (o *Options) populate() {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxCharacters <= 0 {
		o.MaxCharacters = DefaultMaxCharacters
	}
	if o.Retries <= 0 {
		o.Retries = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Store is an open database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	d    *dialect
	desc string // where the data is, for humans: a path or a redacted URL
	path string // the SQLite file, or ""
	opt  Options
	pg   *pgx.ConnConfig // PostgreSQL: for the notification listener's connection

	retried atomic.Int64
	// draining: this server drains (drain.go); its lease names no area.
	draining atomic.Bool
}

// Backend returns "sqlite" or "postgres".
func (s *Store) Backend() string { return s.d.name }

// Path returns the SQLite database file's path ("" for PostgreSQL).
func (s *Store) Path() string { return s.path }

// Where says where the data is, for logs: the SQLite file's path, or the
// PostgreSQL URL without its password.
func (s *Store) Where() string { return s.desc }

// Close closes the database; committed data is on disk already.
func (s *Store) Close() error { return s.db.Close() }

// Check verifies the database: SQLite's integrity and foreign-key checks, or
// on PostgreSQL that no character or claim refers to a missing row. It
// returns an error describing the first problems found, or nil.
func (s *Store) Check(ctx context.Context) error {
	problems, err := s.d.check(ctx, s.db)
	if err != nil {
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

// write runs f in one write transaction and commits it; f's error rolls it
// back and is returned as is (sentinels stay matchable). A serialization
// failure or deadlock, from f or from the commit, rolls back and runs f
// again, up to Options.Retries times, after a jittered backoff that doubles
// from 1 ms up to 100 ms; f must therefore touch nothing but the
// transaction and values it sets afresh on each run.
func (s *Store) write(ctx context.Context, f func(*sql.Tx) error) error {
	backoff := time.Millisecond
	for attempt := 0; ; attempt++ {
		err := s.writeOnce(ctx, f)
		if err == nil || !s.d.retryable(err) {
			return err
		}
		s.retried.Add(1)
		if attempt >= s.opt.Retries {
			return fmt.Errorf("store: gave up after %d serialization failures: %w", attempt+1, err)
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func (s *Store) writeOnce(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, s.d.txOptions)
	if err != nil {
		return fmt.Errorf("store: beginning a transaction: %w", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: committing: %w", err)
	}
	return nil
}

// Retried returns how many transaction attempts this Store has retried
// after a serialization failure or deadlock.
func (s *Store) Retried() int64 { return s.retried.Load() }
