package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrSchemaTooNew: the database was written by a newer version of the module.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this build")

// migrate brings the database to SchemaVersion in one transaction, or refuses
// a database whose version is newer.
func migrate(ctx context.Context, db *sql.DB, d *dialect) error {
	if len(d.migrations) != SchemaVersion {
		return fmt.Errorf("store: %s has %d migrations for schema version %d", d.name, len(d.migrations), SchemaVersion)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := d.lockSchema(ctx, tx); err != nil {
		return fmt.Errorf("locking the schema for migration: %w", err)
	}
	v, err := d.readVersion(ctx, tx)
	if err != nil {
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
		for _, stmt := range d.migrations[i] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", i+1, err)
			}
		}
	}
	if err := d.writeVersion(ctx, tx, SchemaVersion); err != nil {
		return err
	}
	return tx.Commit()
}
