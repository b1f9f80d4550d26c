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

	_ "modernc.org/sqlite" // registers the "sqlite" driver: SQLite translated to Go, no cgo
)

// FileName is the SQLite database file in the directory given to Open.
const FileName = "mmo.db"

// Open opens (creating if needed) the SQLite database in dir, which is
// created with mode 0700 if missing, and migrates it to SchemaVersion.
func Open(ctx context.Context, dir string, opt Options) (*Store, error) {
	opt.populate()
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
	db, err := sql.Open(sqliteDialect.driver, sqliteDSN(path, opt.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(max(opt.MaxConns, 4))
	s := &Store{db: db, d: sqliteDialect, desc: path, path: path, opt: opt}
	if err := s.initSQLite(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	return s, nil
}

// sqliteDSN is the connection string: every pooled connection gets the same
// pragmas, and BeginTx issues BEGIN IMMEDIATE.
func sqliteDSN(path string, busy time.Duration) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) initSQLite(ctx context.Context) error {
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
	return migrate(ctx, s.db, s.d)
}

var sqliteDialect = &dialect{
	name:   "sqlite",
	driver: "sqlite",
	// The DSN makes every transaction BEGIN IMMEDIATE: writers are serialised
	// by SQLite's lock, so no transaction is ever retried.
	txOptions: nil,
	nowMS:     `CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
	migrations: [][]string{
		// 1: accounts and their characters.
		{
			`CREATE TABLE accounts (
				id         INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 3 AND 24 AND name = lower(name)),
				salt       BLOB    NOT NULL CHECK (length(salt) BETWEEN 1 AND 64),
				iterations INTEGER NOT NULL CHECK (iterations > 0),
				stored_key BLOB    NOT NULL CHECK (length(stored_key) = 32),
				server_key BLOB    NOT NULL CHECK (length(server_key) = 32),
				created    INTEGER NOT NULL -- Unix milliseconds
			) STRICT`,
			`CREATE TABLE characters (
				id         INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL CHECK (length(name) BETWEEN 3 AND 16),
				name_key   TEXT    NOT NULL UNIQUE CHECK (name_key = lower(name)),
				account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
				x          REAL    NOT NULL,
				y          REAL    NOT NULL,
				created    INTEGER NOT NULL -- Unix milliseconds
			) STRICT`,
			`CREATE INDEX characters_by_account ON characters(account_id, id)`,
		},
		// 2: servers' leases, who holds each login, who plays each character.
		{
			`CREATE TABLE servers (
				id          TEXT    PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
				lease_until INTEGER NOT NULL -- Unix milliseconds, the database's clock
			) STRICT`,
			`CREATE TABLE logins (
				account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
				server     TEXT    NOT NULL,
				token      INTEGER NOT NULL,
				since      INTEGER NOT NULL
			) STRICT`,
			`CREATE INDEX logins_by_server ON logins(server)`,
			`CREATE TABLE in_world (
				character_id INTEGER PRIMARY KEY REFERENCES characters(id) ON DELETE CASCADE,
				server       TEXT    NOT NULL,
				token        INTEGER NOT NULL,
				since        INTEGER NOT NULL
			) STRICT`,
			`CREATE INDEX in_world_by_server ON in_world(server)`,
			`CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT`,
			`INSERT INTO counters (name, value) VALUES ('login_token', 0)`,
		},
		// 3: areas and gateway tickets: the area a server holds, characters
		// in transit to a neighbour, used tickets, the world's public key.
		{
			`ALTER TABLE servers ADD COLUMN area TEXT NOT NULL DEFAULT ''`,
			`CREATE INDEX servers_by_area ON servers(area, lease_until)`,
			`ALTER TABLE in_world ADD COLUMN ticket BLOB`,
			`ALTER TABLE in_world ADD COLUMN transit_until INTEGER`,
			`CREATE TABLE used_tickets (
				id      BLOB    PRIMARY KEY CHECK (length(id) = 16),
				server  TEXT    NOT NULL,
				used    INTEGER NOT NULL, -- Unix milliseconds, the database's clock
				expires INTEGER NOT NULL  -- Unix milliseconds
			) STRICT`,
			`CREATE INDEX used_tickets_by_expiry ON used_tickets(expires)`,
			`CREATE TABLE world (
				id         INTEGER PRIMARY KEY CHECK (id = 1),
				public_key BLOB    NOT NULL CHECK (length(public_key) = 32)
			) STRICT`,
		},
		// 4: bans by account.
		{
			`CREATE TABLE bans (
				id         INTEGER PRIMARY KEY,
				account_id INTEGER NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
				reason     TEXT    NOT NULL CHECK (length(reason) <= 200),
				since      INTEGER NOT NULL -- Unix milliseconds
			) STRICT`,
		},
		// 5: drains: the live server that covers the area of a server that
		// drained, until that area's server starts again.
		{
			`CREATE TABLE area_covers (
				area   TEXT    PRIMARY KEY,
				server TEXT    NOT NULL,
				since  INTEGER NOT NULL -- Unix milliseconds
			) STRICT`,
		},
	},
	lockSchema: func(context.Context, *sql.Tx) error { return nil }, // BEGIN IMMEDIATE holds the write lock
	readVersion: func(ctx context.Context, tx *sql.Tx) (int, error) {
		var v int
		err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	},
	writeVersion: func(ctx context.Context, tx *sql.Tx, v int) error {
		// PRAGMA takes no parameters; v is a small integer of ours.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	},
	isUnique: func(err error) bool {
		var e interface{ Code() int }
		if !errors.As(err, &e) {
			return false
		}
		const sqliteConstraintUnique, sqliteConstraintPrimaryKey = 2067, 1555
		return e.Code() == sqliteConstraintUnique || e.Code() == sqliteConstraintPrimaryKey
	},
	retryable: func(error) bool { return false },
	nextToken: func(ctx context.Context, tx *sql.Tx) (int64, error) {
		var v int64
		err := tx.QueryRowContext(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'login_token' RETURNING value`).Scan(&v)
		return v, err
	},
	check: func(ctx context.Context, db *sql.DB) ([]string, error) {
		rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
		if err != nil {
			return nil, err
		}
		var problems []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return nil, err
			}
			if line != "ok" {
				problems = append(problems, line)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		fk, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			return nil, err
		}
		if fk.Next() {
			problems = append(problems, "a row refers to a missing row (foreign key)")
		}
		if err := fk.Close(); err != nil {
			return nil, err
		}
		return problems, nil
	},
}
