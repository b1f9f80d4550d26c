package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrSchemaTooNew: the database was written by a newer version of the module.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this build")

// migrations[i] takes the schema from version i to i+1 (PRAGMA user_version).
// Append only: a released migration never changes.
var migrations = [][]string{
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
}

// SchemaVersion is the schema version this build writes: len(migrations).
const SchemaVersion = 1

// migrate brings the database to SchemaVersion in one transaction, or refuses
// a database whose version is newer.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: the database has schema version %d and this build knows versions up to %d; run a newer sparkhost, or restore a backup made for this version", ErrSchemaTooNew, v, SchemaVersion)
	case v < 0:
		return fmt.Errorf("store: the database has a negative schema version %d; it is not an mmo database", v)
	case v == SchemaVersion:
		return nil
	}
	for i := v; i < SchemaVersion; i++ {
		for _, stmt := range migrations[i] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", i+1, err)
			}
		}
	}
	// PRAGMA takes no parameters; SchemaVersion is a small integer of ours.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}
