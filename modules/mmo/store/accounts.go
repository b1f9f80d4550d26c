package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Account errors.
var (
	ErrAccountExists = errors.New("store: an account of that name exists")
	ErrNoAccount     = errors.New("store: no account of that name")
	ErrBadVerifier   = errors.New("store: verifier needs a 1-64 byte salt, a positive iteration count and 32-byte keys")
)

// Verifier is an account's SCRAM-SHA-256 verifier, as the client computed it
// at registration.
type Verifier struct {
	Salt       []byte // 1..64 bytes (16 from the sparkhost client)
	Iterations int
	StoredKey  []byte // 32 bytes
	ServerKey  []byte // 32 bytes
}

func (v *Verifier) valid() bool {
	return len(v.Salt) >= 1 && len(v.Salt) <= 64 && v.Iterations > 0 && int64(v.Iterations) <= 1<<31-1 &&
		len(v.StoredKey) == 32 && len(v.ServerKey) == 32
}

// Account is a stored account.
type Account struct {
	ID       int64
	Name     string // the canonical (lower-case) name
	Verifier Verifier
	Created  time.Time
}

// AccountSummary is a line of ListAccounts.
type AccountSummary struct {
	Name       string
	Created    time.Time
	Characters int
}

// CreateAccount stores a new account. The name is folded to lower case
// (ErrAccountNameInvalid if it breaks the rule); ErrAccountExists if the name
// is taken in any case.
func (s *Store) CreateAccount(ctx context.Context, name string, v Verifier) (Account, error) {
	key, err := AccountKey(name)
	if err != nil {
		return Account{}, err
	}
	if !v.valid() {
		return Account{}, ErrBadVerifier
	}
	a := Account{Name: key, Verifier: cloneVerifier(v), Created: time.UnixMilli(s.now())}
	err = s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`INSERT INTO accounts (name, salt, iterations, stored_key, server_key, created) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			key, v.Salt, v.Iterations, v.StoredKey, v.ServerKey, a.Created.UnixMilli()).Scan(&a.ID)
		if s.d.isUnique(err) {
			return ErrAccountExists
		}
		return err
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

// Account returns the account named name (any case): ErrAccountNameInvalid
// or ErrNoAccount when there is none.
func (s *Store) Account(ctx context.Context, name string) (Account, error) {
	key, err := AccountKey(name)
	if err != nil {
		return Account{}, err
	}
	var a Account
	var created int64
	err = s.db.QueryRowContext(ctx,
		`SELECT id, name, salt, iterations, stored_key, server_key, created FROM accounts WHERE name = $1`, key).
		Scan(&a.ID, &a.Name, &a.Verifier.Salt, &a.Verifier.Iterations, &a.Verifier.StoredKey, &a.Verifier.ServerKey, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, ErrNoAccount
	}
	if err != nil {
		return Account{}, fmt.Errorf("store: reading account %q: %w", key, err)
	}
	a.Created = time.UnixMilli(created)
	return a, nil
}

// CountAccounts returns the number of accounts.
func (s *Store) CountAccounts(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM accounts`).Scan(&n)
	return n, err
}

// MaxListAccounts bounds one page of ListAccounts.
const MaxListAccounts = 1000

// ListAccounts returns up to limit accounts (1..MaxListAccounts; others are
// clamped) whose names sort after after (empty: from the start), in name
// order, with their character counts. Page with the last name returned.
func (s *Store) ListAccounts(ctx context.Context, after string, limit int) ([]AccountSummary, error) {
	limit = min(max(limit, 1), MaxListAccounts)
	rows, err := s.db.QueryContext(ctx, `
		SELECT a.name, a.created, (SELECT count(*) FROM characters c WHERE c.account_id = a.id)
		FROM accounts a WHERE a.name > $1 ORDER BY a.name LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AccountSummary
	for rows.Next() {
		var a AccountSummary
		var created int64
		if err := rows.Scan(&a.Name, &created, &a.Characters); err != nil {
			return nil, err
		}
		a.Created = time.UnixMilli(created)
		out = append(out, a)
	}
	return out, rows.Err()
}

func cloneVerifier(v Verifier) Verifier {
	v.Salt = append([]byte(nil), v.Salt...)
	v.StoredKey = append([]byte(nil), v.StoredKey...)
	v.ServerKey = append([]byte(nil), v.ServerKey...)
	return v
}

// SetVerifier replaces the verifier of the account named name
// (ErrAccountNameInvalid, ErrNoAccount, ErrBadVerifier): the module's
// upgrade of an account's iteration count after a successful login, with
// a verifier the client computed from the password it just proved.
func (s *Store) SetVerifier(ctx context.Context, name string, v Verifier) error {
	key, err := AccountKey(name)
	if err != nil {
		return err
	}
	if !v.valid() {
		return ErrBadVerifier
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE accounts SET salt = $1, iterations = $2, stored_key = $3, server_key = $4 WHERE name = $5`,
			v.Salt, v.Iterations, v.StoredKey, v.ServerKey, key)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNoAccount
		}
		return nil
	})
}
