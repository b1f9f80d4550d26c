package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Ban errors.
var (
	// ErrBanReason: a ban reason longer than MaxBanReason bytes, not UTF-8,
	// or with a control character.
	ErrBanReason = errors.New("store: a ban reason is at most 200 bytes of UTF-8 without control characters")
	// ErrNotBanned: Unban of an account that is not banned.
	ErrNotBanned = errors.New("store: the account is not banned")
)

// MaxBanReason bounds a ban's reason in bytes (it is sent to the client in
// a Result's detail, which holds 256).
const MaxBanReason = 200

// Ban is an account's ban.
type Ban struct {
	Account string // canonical name
	Reason  string // may be empty
	Since   time.Time
}

// CheckBanReason reports ErrBanReason unless reason may be stored.
func CheckBanReason(reason string) error {
	if len(reason) > MaxBanReason || !utf8.ValidString(reason) || strings.ContainsFunc(reason, unicode.IsControl) {
		return ErrBanReason
	}
	return nil
}

// BanAccount bans the account named name (ErrAccountNameInvalid,
// ErrNoAccount). Banning a banned account replaces its reason and keeps
// its date. In the same transaction the account's login is taken from
// whichever server holds it, so that server ends the session at its next
// comparison with the database (ServerLogins) even if it never hears of
// the ban otherwise.
func (s *Store) BanAccount(ctx context.Context, name, reason string) (Ban, error) {
	key, err := AccountKey(name)
	if err != nil {
		return Ban{}, err
	}
	if err := CheckBanReason(reason); err != nil {
		return Ban{}, err
	}
	b := Ban{Account: key, Reason: reason}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM accounts WHERE name = $1`, key).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoAccount
		}
		if err != nil {
			return err
		}
		var since int64
		err = tx.QueryRowContext(ctx, `SELECT since FROM bans WHERE account_id = $1`, id).Scan(&since)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			since = s.now()
			if _, err := tx.ExecContext(ctx, `INSERT INTO bans (account_id, reason, since) VALUES ($1, $2, $3)`, id, reason, since); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE bans SET reason = $1 WHERE account_id = $2`, reason, id); err != nil {
				return err
			}
		}
		b.Since = time.UnixMilli(since)
		_, err = tx.ExecContext(ctx, `DELETE FROM logins WHERE account_id = $1`, id)
		return err
	})
	if err != nil {
		return Ban{}, err
	}
	return b, nil
}

// UnbanAccount lifts the ban of the account named name
// (ErrAccountNameInvalid, ErrNoAccount, ErrNotBanned).
func (s *Store) UnbanAccount(ctx context.Context, name string) error {
	key, err := AccountKey(name)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM accounts WHERE name = $1`, key).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoAccount
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM bans WHERE account_id = $1`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotBanned
		}
		return nil
	})
}

// BanOf returns the ban of the account named name, and whether it is
// banned (an unknown account is not).
func (s *Store) BanOf(ctx context.Context, name string) (Ban, bool, error) {
	key, err := AccountKey(name)
	if err != nil {
		return Ban{}, false, err
	}
	b := Ban{Account: key}
	var since int64
	err = s.db.QueryRowContext(ctx,
		`SELECT b.reason, b.since FROM bans b JOIN accounts a ON a.id = b.account_id WHERE a.name = $1`, key).Scan(&b.Reason, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return Ban{}, false, nil
	}
	if err != nil {
		return Ban{}, false, fmt.Errorf("store: reading the ban of %q: %w", key, err)
	}
	b.Since = time.UnixMilli(since)
	return b, true, nil
}

// CountBans returns the number of banned accounts.
func (s *Store) CountBans(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM bans`).Scan(&n)
	return n, err
}

// Bans returns up to limit bans (1..MaxListAccounts; others are clamped)
// of accounts whose names sort after after, in name order.
func (s *Store) Bans(ctx context.Context, after string, limit int) ([]Ban, error) {
	limit = min(max(limit, 1), MaxListAccounts)
	rows, err := s.db.QueryContext(ctx, `
		SELECT a.name, b.reason, b.since FROM bans b JOIN accounts a ON a.id = b.account_id
		WHERE a.name > $1 ORDER BY a.name LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Ban
	for rows.Next() {
		var b Ban
		var since int64
		if err := rows.Scan(&b.Account, &b.Reason, &since); err != nil {
			return nil, err
		}
		b.Since = time.UnixMilli(since)
		out = append(out, b)
	}
	return out, rows.Err()
}

// HeldBans returns the bans of the accounts whose login server holds: a
// ban made while such a login was being claimed (the ban takes the login
// away, but a claim that read the account as not banned just before may
// commit just after). The module ends those logins at its periodic
// comparison with the database.
func (s *Store) HeldBans(ctx context.Context, server string) (map[string]Ban, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT a.name, b.reason, b.since FROM bans b
		JOIN accounts a ON a.id = b.account_id JOIN logins l ON l.account_id = b.account_id
		WHERE l.server = $1`, server)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Ban{}
	for rows.Next() {
		var b Ban
		var since int64
		if err := rows.Scan(&b.Account, &b.Reason, &since); err != nil {
			return nil, err
		}
		b.Since = time.UnixMilli(since)
		out[b.Account] = b
	}
	return out, rows.Err()
}
