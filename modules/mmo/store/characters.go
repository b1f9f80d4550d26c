package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Character errors.
var (
	ErrCharacterExists   = errors.New("store: a character of that name exists")
	ErrTooManyCharacters = errors.New("store: the account has the maximum number of characters")
	ErrNoCharacter       = errors.New("store: no character of that name")
	ErrNotOwner          = errors.New("store: the character belongs to another account")
	ErrBadPosition       = errors.New("store: position is not finite")
)

// Character is a stored character.
type Character struct {
	ID      int64
	Name    string // as created
	Account string // the owner's canonical name
	X, Y    float64
	Created time.Time
}

// Position is one entry of SavePositions.
type Position struct {
	Name string
	X, Y float64
}

func finite(x, y float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0)
}

// CreateCharacter creates a character named name for account at (x, y). In
// one transaction it checks, in this order: the account exists
// (ErrNoAccount), it has fewer than Options.MaxCharacters characters
// (ErrTooManyCharacters), and the name is free in any case
// (ErrCharacterExists).
func (s *Store) CreateCharacter(ctx context.Context, account, name string, x, y float64) (Character, error) {
	akey, err := AccountKey(account)
	if err != nil {
		return Character{}, err
	}
	ckey, err := CharacterKey(name)
	if err != nil {
		return Character{}, err
	}
	if !finite(x, y) {
		return Character{}, ErrBadPosition
	}
	c := Character{Name: name, Account: akey, X: x, Y: y, Created: time.UnixMilli(s.now())}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var accountID int64
		var count int
		err := tx.QueryRowContext(ctx, `
			SELECT a.id, (SELECT count(*) FROM characters c WHERE c.account_id = a.id)
			FROM accounts a WHERE a.name = $1`, akey).Scan(&accountID, &count)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoAccount
		}
		if err != nil {
			return err
		}
		if count >= s.opt.MaxCharacters {
			return ErrTooManyCharacters
		}
		err = tx.QueryRowContext(ctx,
			`INSERT INTO characters (name, name_key, account_id, x, y, created) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			name, ckey, accountID, x, y, c.Created.UnixMilli()).Scan(&c.ID)
		if s.d.isUnique(err) {
			return ErrCharacterExists
		}
		return err
	})
	if err != nil {
		return Character{}, err
	}
	return c, nil
}

// Characters returns account's characters, oldest first (ErrNoAccount if
// there is no such account).
func (s *Store) Characters(ctx context.Context, account string) ([]Character, error) {
	akey, err := AccountKey(account)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT c.id, c.name, c.x, c.y, c.created
		FROM characters c JOIN accounts a ON a.id = c.account_id
		WHERE a.name = $1 ORDER BY c.id`, akey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Character{}
	for rows.Next() {
		c := Character{Account: akey}
		var created int64
		if err := rows.Scan(&c.ID, &c.Name, &c.X, &c.Y, &created); err != nil {
			return nil, err
		}
		c.Created = time.UnixMilli(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// Accounts are never deleted, so checking afterwards is race-free.
		if _, err := s.Account(ctx, akey); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Character returns the character named name (any case): ErrNoCharacter when
// there is none.
func (s *Store) Character(ctx context.Context, name string) (Character, error) {
	ckey, err := CharacterKey(name)
	if err != nil {
		return Character{}, err
	}
	var c Character
	var created int64
	err = s.db.QueryRowContext(ctx, `
		SELECT c.id, c.name, a.name, c.x, c.y, c.created
		FROM characters c JOIN accounts a ON a.id = c.account_id WHERE c.name_key = $1`, ckey).
		Scan(&c.ID, &c.Name, &c.Account, &c.X, &c.Y, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Character{}, ErrNoCharacter
	}
	if err != nil {
		return Character{}, fmt.Errorf("store: reading character %q: %w", ckey, err)
	}
	c.Created = time.UnixMilli(created)
	return c, nil
}

// DeleteCharacter deletes account's character named name: ErrNoCharacter if
// there is none, ErrNotOwner if another account owns it, a *BusyError
// (ErrCharacterBusy) if a server whose lease runs plays it (nothing is
// deleted).
func (s *Store) DeleteCharacter(ctx context.Context, account, name string) error {
	akey, err := AccountKey(account)
	if err != nil {
		return err
	}
	ckey, err := CharacterKey(name)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		var owner string
		err := tx.QueryRowContext(ctx, `
			SELECT c.id, a.name FROM characters c JOIN accounts a ON a.id = c.account_id
			WHERE c.name_key = $1`, ckey).Scan(&id, &owner)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoCharacter
		}
		if err != nil {
			return err
		}
		if owner != akey {
			return ErrNotOwner
		}
		h, err := s.holder(ctx, tx, id)
		if err != nil {
			return err
		}
		if h.live() {
			return h.busy()
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM characters WHERE id = $1`, id)
		return err
	})
}

// SavePosition stores a character's position: ErrNoCharacter if there is no
// such character, ErrBadPosition if x or y is not finite.
func (s *Store) SavePosition(ctx context.Context, name string, x, y float64) error {
	n, err := s.SavePositions(ctx, []Position{{name, x, y}})
	if err == nil && n == 0 {
		return ErrNoCharacter
	}
	return err
}

// SavePositions stores many positions in one transaction (all or none) and
// returns how many characters it updated: names that no longer exist are
// skipped. Any invalid name or non-finite position fails the whole batch
// before anything is written. It writes whoever plays the characters: the
// module saves through SaveClaimed.
func (s *Store) SavePositions(ctx context.Context, batch []Position) (int, error) {
	return s.savePositions(ctx, batch, "", false)
}

// savePositions writes batch; with server set, only the characters server
// holds, and with release, it ends those claims too.
func (s *Store) savePositions(ctx context.Context, batch []Position, server string, release bool) (int, error) {
	keys := make([]string, len(batch))
	for i, p := range batch {
		k, err := CharacterKey(p.Name)
		if err != nil {
			return 0, fmt.Errorf("%w: %q", err, p.Name)
		}
		if !finite(p.X, p.Y) {
			return 0, fmt.Errorf("%w: %q at (%v, %v)", ErrBadPosition, p.Name, p.X, p.Y)
		}
		keys[i] = k
	}
	if len(batch) == 0 {
		return 0, nil
	}
	update := `UPDATE characters SET x = $1, y = $2 WHERE name_key = $3`
	if server != "" {
		update += ` AND EXISTS (SELECT 1 FROM in_world w WHERE w.character_id = characters.id AND w.server = $4)`
	}
	saved := 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		saved = 0 // a retried transaction counts afresh
		stmt, err := tx.PrepareContext(ctx, update)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i, p := range batch {
			args := []any{p.X, p.Y, keys[i]}
			if server != "" {
				args = append(args, server)
			}
			res, err := stmt.ExecContext(ctx, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			saved += int(n)
			if release {
				if _, err := tx.ExecContext(ctx, `DELETE FROM in_world WHERE server = $1
					AND character_id = (SELECT id FROM characters WHERE name_key = $2)`, server, keys[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return saved, nil
}
