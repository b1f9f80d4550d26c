package store

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrBadURL: a database URL that is not a postgres:// URL.
var ErrBadURL = errors.New("store: the database URL must be postgres://USER@HOST[:PORT]/DATABASE[?PARAMS]")

// LoginChannel is the PostgreSQL notification channel of login claims.
const LoginChannel = "sparkhost_mmo_logins"

// Redact returns a database URL without its password, for messages. A
// string that does not parse as a URL is replaced whole.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(an unparsable database URL)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// pgConfig parses a postgres:// URL and sets password (if not empty) as the
// password, overriding any in the URL.
func pgConfig(raw, password string) (*pgx.ConnConfig, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "" {
		return nil, ErrBadURL
	}
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		return nil, scrubErr("store: "+Redact(raw)+": ", err, raw, password)
	}
	if password != "" {
		cfg.Password = password
	}
	return cfg, nil
}

// scrubbed is an error whose message had the secrets removed; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrubErr wraps err with prefix, the secrets removed from the message.
func scrubErr(prefix string, err error, raw, password string) error {
	return &scrubbed{msg: prefix + scrub(err.Error(), raw, password), err: err}
}

// scrub removes any trace of the secrets from a message (pgx redacts, and
// this is the second belt).
func scrub(msg, raw, password string) string {
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// OpenPostgres connects to the PostgreSQL database at rawURL (a postgres://
// URL; password, if not empty, overrides the URL's) and migrates it to
// SchemaVersion. Several servers may open one database at once: migrations
// are serialised by an advisory lock, and a database migrated by a newer
// build is refused.
func OpenPostgres(ctx context.Context, rawURL, password string, opt Options) (*Store, error) {
	opt.populate()
	cfg, err := pgConfig(rawURL, password)
	if err != nil {
		return nil, err
	}
	where := Redact(rawURL)
	db := stdlib.OpenDB(*cfg)
	conns := opt.MaxConns
	if conns <= 0 {
		conns = 8
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	s := &Store{db: db, d: postgresDialect, desc: where, opt: opt}
	s.pg = cfg
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, scrubErr("store: connecting to "+where+": ", err, rawURL, password)
	}
	if err := migrate(ctx, db, s.d); err != nil {
		db.Close()
		return nil, scrubErr("store: opening "+where+": ", err, rawURL, password)
	}
	return s, nil
}

// pgCode returns err's SQLSTATE, or "".
func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// schemaLockKey is the advisory lock held while a server migrates.
const schemaLockKey = 0x5350_4b4d_4d4f // "SPKMMO"

var postgresDialect = &dialect{
	name:      "postgres",
	driver:    "pgx",
	txOptions: &sql.TxOptions{Isolation: sql.LevelSerializable},
	nowMS:     `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
	migrations: [][]string{
		// 1: accounts and their characters.
		{
			`CREATE TABLE accounts (
				id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				name       text    NOT NULL UNIQUE CHECK (length(name) BETWEEN 3 AND 24 AND name = lower(name)),
				salt       bytea   NOT NULL CHECK (length(salt) BETWEEN 1 AND 64),
				iterations integer NOT NULL CHECK (iterations > 0),
				stored_key bytea   NOT NULL CHECK (length(stored_key) = 32),
				server_key bytea   NOT NULL CHECK (length(server_key) = 32),
				created    bigint  NOT NULL -- Unix milliseconds
			)`,
			`CREATE TABLE characters (
				id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				name       text    NOT NULL CHECK (length(name) BETWEEN 3 AND 16),
				name_key   text    NOT NULL UNIQUE CHECK (name_key = lower(name)),
				account_id bigint  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
				x          double precision NOT NULL,
				y          double precision NOT NULL,
				created    bigint  NOT NULL -- Unix milliseconds
			)`,
			`CREATE INDEX characters_by_account ON characters(account_id, id)`,
		},
		// 2: servers' leases, who holds each login, who plays each character.
		{
			`CREATE TABLE servers (
				id          text   PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
				lease_until bigint NOT NULL -- Unix milliseconds, the database's clock
			)`,
			`CREATE TABLE logins (
				account_id bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
				server     text   NOT NULL,
				token      bigint NOT NULL,
				since      bigint NOT NULL
			)`,
			`CREATE INDEX logins_by_server ON logins(server)`,
			`CREATE TABLE in_world (
				character_id bigint PRIMARY KEY REFERENCES characters(id) ON DELETE CASCADE,
				server       text   NOT NULL,
				token        bigint NOT NULL,
				since        bigint NOT NULL
			)`,
			`CREATE INDEX in_world_by_server ON in_world(server)`,
			`CREATE SEQUENCE login_tokens`,
		},
		// 3: areas and gateway tickets: the area a server holds, characters
		// in transit to a neighbour, used tickets, the world's public key.
		{
			`ALTER TABLE servers ADD COLUMN area text NOT NULL DEFAULT ''`,
			`CREATE INDEX servers_by_area ON servers(area, lease_until)`,
			`ALTER TABLE in_world ADD COLUMN ticket bytea`,
			`ALTER TABLE in_world ADD COLUMN transit_until bigint`,
			`CREATE TABLE used_tickets (
				id      bytea  PRIMARY KEY CHECK (length(id) = 16),
				server  text   NOT NULL,
				used    bigint NOT NULL, -- Unix milliseconds, the database's clock
				expires bigint NOT NULL  -- Unix milliseconds
			)`,
			`CREATE INDEX used_tickets_by_expiry ON used_tickets(expires)`,
			`CREATE TABLE world (
				id         integer PRIMARY KEY CHECK (id = 1),
				public_key bytea   NOT NULL CHECK (length(public_key) = 32)
			)`,
		},
		// 4: bans by account.
		{
			`CREATE TABLE bans (
				id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				account_id bigint NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
				reason     text   NOT NULL CHECK (length(reason) <= 200),
				since      bigint NOT NULL -- Unix milliseconds
			)`,
		},
		// 5: drains: the live server that covers the area of a server that
		// drained, until that area's server starts again.
		{
			`CREATE TABLE area_covers (
				area   text   PRIMARY KEY,
				server text   NOT NULL,
				since  bigint NOT NULL -- Unix milliseconds
			)`,
		},
	},
	lockSchema: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLockKey))
		return err
	},
	readVersion: func(ctx context.Context, tx *sql.Tx) (int, error) {
		// Create the table only when missing, so that a role without CREATE
		// can run an already migrated database.
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&exists); err != nil {
			return 0, err
		}
		if !exists {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_version (version integer NOT NULL)`); err != nil {
				return 0, err
			}
		}
		var v int
		err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v)
		return v, err
	},
	writeVersion: func(ctx context.Context, tx *sql.Tx, v int) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, v)
		return err
	},
	isUnique: func(err error) bool { return pgCode(err) == "23505" },
	retryable: func(err error) bool {
		c := pgCode(err)
		return c == "40001" || c == "40P01" // serialization_failure, deadlock_detected
	},
	nextToken: func(ctx context.Context, tx *sql.Tx) (int64, error) {
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT nextval('login_tokens')`).Scan(&v)
		return v, err
	},
	notify: func(ctx context.Context, tx *sql.Tx, payload string) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, LoginChannel, payload)
		return err
	},
	check: checkDangling,
}
