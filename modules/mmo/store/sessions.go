package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Several servers share one database as one world. Each holds a lease (a
// row in servers, renewed well before it runs out, timed by the database's
// clock); the logins table says which server holds each account's login,
// and in_world which server plays each character. The rules:
//
//   - A login always succeeds and takes the account over (ClaimLogin): it
//     gets a token larger than every earlier one and, on PostgreSQL,
//     notifies the other servers in the same transaction, so the server that
//     held the login ends it ("logged in elsewhere"). A lost notification is
//     caught by ServerLogins, which each server compares with its sessions
//     every few seconds.
//   - A character is played by at most one server (ClaimCharacter). The
//     claim of another server is respected while that server's lease runs;
//     a server that died holding it blocks the character until its lease
//     expires, never longer.
//   - Positions are written only by the server that holds the character
//     (SaveClaimed, ReleaseCharacter): a server that lost its claim, say
//     after a partition, cannot overwrite newer state.

// Lease bounds.
const (
	MinLease = time.Second
	MaxLease = 10 * time.Minute
)

// Session errors.
var (
	// ErrCharacterBusy: another live server plays the character. The
	// error is a *BusyError.
	ErrCharacterBusy = errors.New("store: the character is in the world on another server")
	// ErrLoginLost: the account's login is held by another server (or by a
	// newer login on this one) now.
	ErrLoginLost = errors.New("store: the account logged in elsewhere since")
	// ErrBadServerID: a server id that is not 1..128 of A-Z a-z 0-9 . _ -.
	ErrBadServerID = errors.New("store: server ids are 1-128 characters of A-Z, a-z, 0-9, '.', '_' and '-'")
	// ErrBadLease: a lease outside MinLease..MaxLease.
	ErrBadLease = fmt.Errorf("store: leases are %v..%v", MinLease, MaxLease)
)

// BusyError says which server plays a character and until when its lease
// runs (by the database's clock) unless it is renewed.
type BusyError struct {
	Server string
	Until  time.Time
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%v (server %s, lease until %s)", ErrCharacterBusy, e.Server, e.Until.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrCharacterBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrCharacterBusy }

// ValidServerID reports whether id may name a server.
func ValidServerID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkServer(server string, lease time.Duration) error {
	if !ValidServerID(server) {
		return ErrBadServerID
	}
	if lease != 0 && (lease < MinLease || lease > MaxLease) {
		return ErrBadLease
	}
	return nil
}

// upsertLease is the same statement on both backends.
func (s *Store) upsertLease(ctx context.Context, tx *sql.Tx, server string, lease time.Duration) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO servers (id, lease_until, area) VALUES ($1, `+s.d.nowMS+` + $2, $3)
		ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until, area = excluded.area`, server, lease.Milliseconds(), s.leaseArea())
	return err
}

// StartServer takes a lease for server and drops every login and claim the
// server held before (a previous run of it that crashed: its sessions are
// gone). Call it when the server starts, and again after its lease lapsed.
func (s *Store) StartServer(ctx context.Context, server string, lease time.Duration) error {
	if err := checkServer(server, lease); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM in_world WHERE server = $1`, server); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM logins WHERE server = $1`, server); err != nil {
			return err
		}
		if err := s.uncover(ctx, tx); err != nil {
			return err
		}
		return s.upsertLease(ctx, tx, server, lease)
	})
}

// RenewLease extends server's lease to lease from now (the database's
// clock).
func (s *Store) RenewLease(ctx context.Context, server string, lease time.Duration) error {
	if err := checkServer(server, lease); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.upsertLease(ctx, tx, server, lease) })
}

// StopServer drops server's logins, claims and lease: a clean shutdown,
// after the positions were saved.
func (s *Store) StopServer(ctx context.Context, server string) error {
	if err := checkServer(server, 0); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM in_world WHERE server = $1`, `DELETE FROM logins WHERE server = $1`, `DELETE FROM servers WHERE id = $1`} {
			if _, err := tx.ExecContext(ctx, q, server); err != nil {
				return err
			}
		}
		return nil
	})
}

// Login is a login claim: Token is larger than that of every earlier login
// of any account; Previous is the server that held the account's login
// before ("" if none).
type Login struct {
	Account  string
	Server   string
	Token    int64
	Previous string
}

// ClaimLogin records that server holds account's login now, taking it from
// whichever server held it, and (on PostgreSQL) notifies the other servers
// when the transaction commits. ErrNoAccount if there is no such account.
func (s *Store) ClaimLogin(ctx context.Context, server, account string) (Login, error) {
	key, err := AccountKey(account)
	if err != nil {
		return Login{}, err
	}
	if err := checkServer(server, 0); err != nil {
		return Login{}, err
	}
	l := Login{Account: key, Server: server}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM accounts WHERE name = $1`, key).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoAccount
		}
		if err != nil {
			return err
		}
		return s.takeLogin(ctx, tx, id, &l)
	})
	if err != nil {
		return Login{}, err
	}
	return l, nil
}

// takeLogin gives l.Server the login of account accountID with a new token
// (filling l.Token and l.Previous), notifying the other servers on commit.
func (s *Store) takeLogin(ctx context.Context, tx *sql.Tx, accountID int64, l *Login) error {
	l.Previous = ""
	err := tx.QueryRowContext(ctx, `SELECT server FROM logins WHERE account_id = $1`, accountID).Scan(&l.Previous)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if l.Token, err = s.d.nextToken(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO logins (account_id, server, token, since) VALUES ($1, $2, $3, `+s.d.nowMS+`)
		ON CONFLICT (account_id) DO UPDATE SET server = excluded.server, token = excluded.token, since = excluded.since`,
		accountID, l.Server, l.Token); err != nil {
		return err
	}
	if s.d.notify != nil {
		return s.d.notify(ctx, tx, l.notice())
	}
	return nil
}

// notice is the notification payload: "TOKEN SERVER ACCOUNT".
func (l Login) notice() string {
	return strconv.FormatInt(l.Token, 10) + " " + l.Server + " " + l.Account
}

// ParseNotice reads a login notification's payload. It comes from the
// database, which other servers write: it is checked like any input.
func ParseNotice(payload string) (Login, error) {
	f := strings.Fields(payload)
	if len(f) != 3 {
		return Login{}, fmt.Errorf("store: login notice %q: want TOKEN SERVER ACCOUNT", payload)
	}
	tok, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || tok <= 0 {
		return Login{}, fmt.Errorf("store: login notice %q: bad token", payload)
	}
	key, err := AccountKey(f[2])
	if err != nil || key != f[2] || !ValidServerID(f[1]) {
		return Login{}, fmt.Errorf("store: login notice %q: bad server or account", payload)
	}
	return Login{Account: key, Server: f[1], Token: tok}, nil
}

// ReleaseLogin drops server's login of account if token is still current
// (a newer login, here or elsewhere, is left alone).
func (s *Store) ReleaseLogin(ctx context.Context, server, account string, token int64) error {
	key, err := AccountKey(account)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM logins WHERE server = $1 AND token = $2
			AND account_id = (SELECT id FROM accounts WHERE name = $3)`, server, token, key)
		return err
	})
}

// ServerLogins returns the logins the database says server holds: account
// → token.
func (s *Store) ServerLogins(ctx context.Context, server string) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.name, l.token FROM logins l JOIN accounts a ON a.id = l.account_id WHERE l.server = $1`, server)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var tok int64
		if err := rows.Scan(&name, &tok); err != nil {
			return nil, err
		}
		out[name] = tok
	}
	return out, rows.Err()
}

// ClaimCharacter claims the character named name for server, to play it
// for account's login token, and returns it as stored. In one transaction
// it checks: the character exists (ErrNoCharacter) and belongs to account
// (ErrNotOwner); the login token is still the account's current one, held
// by server (ErrLoginLost); no other server whose lease runs plays it (a
// *BusyError). A claim of a server whose lease has expired is taken over.
func (s *Store) ClaimCharacter(ctx context.Context, server, account string, token int64, name string) (Character, error) {
	akey, err := AccountKey(account)
	if err != nil {
		return Character{}, err
	}
	ckey, err := CharacterKey(name)
	if err != nil {
		return Character{}, err
	}
	if err := checkServer(server, 0); err != nil {
		return Character{}, err
	}
	var c Character
	err = s.write(ctx, func(tx *sql.Tx) error {
		var created, accountID int64
		err := tx.QueryRowContext(ctx, `
			SELECT c.id, c.name, a.name, a.id, c.x, c.y, c.created
			FROM characters c JOIN accounts a ON a.id = c.account_id WHERE c.name_key = $1`, ckey).
			Scan(&c.ID, &c.Name, &c.Account, &accountID, &c.X, &c.Y, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoCharacter
		}
		if err != nil {
			return err
		}
		c.Created = time.UnixMilli(created)
		if c.Account != akey {
			return ErrNotOwner
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM logins WHERE account_id = $1 AND server = $2 AND token = $3`, accountID, server, token).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrLoginLost
		}
		if err != nil {
			return err
		}
		h, err := s.holder(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		if h.server != server && h.live() {
			return h.busy()
		}
		return s.putClaim(ctx, tx, c.ID, server, token)
	})
	if err != nil {
		return Character{}, err
	}
	return c, nil
}

// SaveClaimed stores the positions of characters that server plays, in one
// transaction (all or none), and returns how many it updated: a character
// server no longer holds (another server took it over after this one's
// lease ran out) or that no longer exists is skipped. Invalid entries fail
// the batch before anything is written, as in SavePositions.
func (s *Store) SaveClaimed(ctx context.Context, server string, batch []Position) (int, error) {
	if err := checkServer(server, 0); err != nil {
		return 0, err
	}
	return s.savePositions(ctx, batch, server, false)
}

// ReleaseCharacter ends server's claim of the character p names, saving p's
// position first (in the same transaction) if save is set. Nothing is
// written if server does not hold the character.
func (s *Store) ReleaseCharacter(ctx context.Context, server string, p Position, save bool) error {
	if err := checkServer(server, 0); err != nil {
		return err
	}
	if !save {
		ckey, err := CharacterKey(p.Name)
		if err != nil {
			return err
		}
		return s.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM in_world WHERE server = $1
				AND character_id = (SELECT id FROM characters WHERE name_key = $2)`, server, ckey)
			return err
		})
	}
	_, err := s.savePositions(ctx, []Position{p}, server, true)
	return err
}

// Holder returns the server that plays the character named name ("" if
// none does) and when its lease runs out.
func (s *Store) Holder(ctx context.Context, name string) (string, time.Time, error) {
	c, err := s.claimOf(ctx, name)
	if err != nil || c.server == "" {
		return "", time.Time{}, err
	}
	return c.server, time.UnixMilli(c.lease.Int64), nil
}

// claim is a character's row of in_world, with its holder's lease.
type claim struct {
	server         string // "" when no server holds the character
	transit, lease sql.NullInt64
}

// claimOf reads the claim of the character named name.
func (s *Store) claimOf(ctx context.Context, name string) (claim, error) {
	var c claim
	ckey, err := CharacterKey(name)
	if err != nil {
		return c, err
	}
	err = s.db.QueryRowContext(ctx, `SELECT w.server, w.transit_until, s.lease_until FROM in_world w
		JOIN characters c ON c.id = w.character_id LEFT JOIN servers s ON s.id = w.server
		WHERE c.name_key = $1`, ckey).Scan(&c.server, &c.transit, &c.lease)
	if errors.Is(err, sql.ErrNoRows) {
		return claim{}, nil
	}
	return c, err
}
