package store

import (
	"context"
	"database/sql"
)

// dialect is what differs between the backends; everything else (every
// query, every rule) is shared.
type dialect struct {
	name       string
	driver     string         // the database/sql driver
	txOptions  *sql.TxOptions // for write transactions
	migrations [][]string     // migrations[i] takes the schema from version i to i+1
	// nowMS is an SQL expression for the database's clock in Unix ms.
	nowMS string
	// lockSchema serialises migrations of one database (PostgreSQL: several
	// servers may start at once on an empty database).
	lockSchema   func(ctx context.Context, tx *sql.Tx) error
	readVersion  func(ctx context.Context, tx *sql.Tx) (int, error)
	writeVersion func(ctx context.Context, tx *sql.Tx, v int) error
	isUnique     func(error) bool
	retryable    func(error) bool
	// nextToken draws the next login token: increasing across the whole
	// database, so that a newer login always has the larger token.
	nextToken func(ctx context.Context, tx *sql.Tx) (int64, error)
	// notify publishes a login claim to the other servers when tx commits
	// (nil: the backend has no notifications).
	notify func(ctx context.Context, tx *sql.Tx, payload string) error
	check  func(ctx context.Context, db *sql.DB) ([]string, error)
}

// SchemaVersion is the schema version this build writes: the number of
// migrations (the same for both backends).
const SchemaVersion = 5

// danglingQueries find rows that refer to missing rows; the schema's foreign
// keys forbid them, so any row found is damage.
var danglingQueries = []struct{ problem, query string }{
	{"a character refers to a missing account", `SELECT count(*) FROM characters c WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = c.account_id)`},
	{"a login refers to a missing account", `SELECT count(*) FROM logins l WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = l.account_id)`},
	{"a ban refers to a missing account", `SELECT count(*) FROM bans b WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = b.account_id)`},
	{"a claim refers to a missing character", `SELECT count(*) FROM in_world w WHERE NOT EXISTS (SELECT 1 FROM characters c WHERE c.id = w.character_id)`},
}

func checkDangling(ctx context.Context, db *sql.DB) ([]string, error) {
	var problems []string
	for _, q := range danglingQueries {
		var n int
		if err := db.QueryRowContext(ctx, q.query).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			problems = append(problems, q.problem)
		}
	}
	return problems, nil
}
