package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Areas and handoffs (schema 3). A world may be split into areas, each
// simulated by one server that records its area with its lease. When a
// character crosses into a neighbour's area, the source server hands it
// over in one transaction (HandOff): it saves the character's position,
// moves the character's claim to the live server of the destination area
// marked "in transit" under a ticket id until an expiry, and gives up the
// account's login. The destination admits the character when the client
// presents that ticket (AdmitTicket), again in one transaction: the ticket
// is recorded as used (single use across the world), the claim becomes the
// destination's, and the account's login is claimed there.
//
// Every rule is the database's, by the database's clock:
//
//   - A claim in transit is respected until its transit expiry, and only
//     while its server's lease runs; after that the character is free and
//     any server may claim it (a client that never arrived, a destination
//     that died). The destination itself may claim it at any time (a
//     password login there).
//   - A ticket is admitted once: used_tickets holds its id until well after
//     its expiry (PurgeTickets), and an expired ticket is refused before it
//     is recorded.
//   - A ticket is refused when the character is in the world on a live
//     server without being in transit under that ticket.

// Handoff and ticket errors.
var (
	// ErrClaimLost: the source no longer holds the character for that
	// login (another server took it over, or the login ended).
	ErrClaimLost = errors.New("store: this server no longer plays the character")
	// ErrAreaUnavailable: no server whose lease runs holds the destination
	// area.
	ErrAreaUnavailable = errors.New("store: no live server holds that area")
	// ErrTicketExpired: the ticket's expiry has passed by the database's
	// clock, or lies further ahead than any ticket may live.
	ErrTicketExpired = errors.New("store: the ticket has expired")
	// ErrTicketReplayed: the ticket was admitted before.
	ErrTicketReplayed = errors.New("store: the ticket was used already")
	// ErrWorldKeyMismatch: the database belongs to a world with another key.
	ErrWorldKeyMismatch = errors.New("store: the database's world has another world key")
)

// TicketIDLen is the size of a ticket id.
const TicketIDLen = 16

// Handoff describes a character leaving this server for a neighbour.
type Handoff struct {
	Server   string   // the source server (this one)
	Account  string   // the character's owner
	Token    int64    // the source's login token for the account
	Position Position // the character and where it crossed
	Area     string   // the destination area
	Ticket   [TicketIDLen]byte
	Lifetime time.Duration // how long the ticket (and the transit) lasts
}

// HandedOff is a committed handoff: the destination server's id and the
// ticket's expiry (whole seconds of the database's clock).
type HandedOff struct {
	Dest    string
	Expires time.Time
}

// holderRow is a character's claim as read in a transaction.
type holderRow struct {
	found   bool
	server  string
	ticket  []byte
	transit sql.NullInt64
	until   sql.NullInt64 // the holder's lease
	now     int64
}

// live reports whether the claim still binds other servers: its server's
// lease runs and, for a claim in transit, its transit has not expired.
func (h holderRow) live() bool {
	if !h.found || !h.until.Valid || h.until.Int64 <= h.now {
		return false
	}
	return !h.transit.Valid || h.transit.Int64 > h.now
}

func (h holderRow) busy() *BusyError {
	until := h.until.Int64
	if h.transit.Valid {
		until = min(until, h.transit.Int64)
	}
	return &BusyError{Server: h.server, Until: time.UnixMilli(until)}
}

// holder reads the claim of character id (found false when there is none)
// and the database's clock.
func (s *Store) holder(ctx context.Context, tx *sql.Tx, id int64) (holderRow, error) {
	var h holderRow
	err := tx.QueryRowContext(ctx, `SELECT `+s.d.nowMS).Scan(&h.now)
	if err != nil {
		return h, err
	}
	err = tx.QueryRowContext(ctx, `SELECT w.server, w.ticket, w.transit_until, s.lease_until
		FROM in_world w LEFT JOIN servers s ON s.id = w.server WHERE w.character_id = $1`, id).
		Scan(&h.server, &h.ticket, &h.transit, &h.until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return h, nil
	case err != nil:
		return h, err
	}
	h.found = true
	return h, nil
}

// putClaim makes server the character's holder for token (not in transit).
func (s *Store) putClaim(ctx context.Context, tx *sql.Tx, id int64, server string, token int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO in_world (character_id, server, token, since, ticket, transit_until)
		VALUES ($1, $2, $3, `+s.d.nowMS+`, NULL, NULL)
		ON CONFLICT (character_id) DO UPDATE SET server = excluded.server, token = excluded.token, since = excluded.since,
			ticket = NULL, transit_until = NULL`, id, server, token)
	return err
}

// HandOff commits a character's move to the live server of area h.Area in
// one transaction: the position is saved, the claim moves to that server in
// transit under h.Ticket until the returned expiry, and the source's login
// of the account ends (so nothing of the account is left on the source).
// ErrNoCharacter or ErrNotOwner for a character that is not the account's,
// ErrClaimLost if the source does not hold the character for h.Token,
// ErrAreaUnavailable if no other server whose lease runs holds h.Area; then
// nothing is written.
func (s *Store) HandOff(ctx context.Context, h Handoff) (HandedOff, error) {
	akey, err := AccountKey(h.Account)
	if err != nil {
		return HandedOff{}, err
	}
	ckey, err := CharacterKey(h.Position.Name)
	if err != nil {
		return HandedOff{}, err
	}
	if err := checkServer(h.Server, 0); err != nil {
		return HandedOff{}, err
	}
	if !finite(h.Position.X, h.Position.Y) {
		return HandedOff{}, ErrBadPosition
	}
	if h.Area == "" || h.Lifetime < time.Second {
		return HandedOff{}, fmt.Errorf("store: a handoff needs an area and a lifetime of at least 1 s")
	}
	var out HandedOff
	err = s.write(ctx, func(tx *sql.Tx) error {
		var charID, accountID int64
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT c.id, a.id, a.name FROM characters c JOIN accounts a ON a.id = c.account_id
			WHERE c.name_key = $1`, ckey).Scan(&charID, &accountID, &owner)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoCharacter
		}
		if err != nil {
			return err
		}
		if owner != akey {
			return ErrNotOwner
		}
		var holder string
		var token int64
		var transit sql.NullInt64
		err = tx.QueryRowContext(ctx, `SELECT server, token, transit_until FROM in_world WHERE character_id = $1`, charID).
			Scan(&holder, &token, &transit)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (holder != h.Server || token != h.Token || transit.Valid) {
			return ErrClaimLost
		}
		if err != nil {
			return err
		}
		var now int64
		if err := tx.QueryRowContext(ctx, `SELECT `+s.d.nowMS).Scan(&now); err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT id FROM servers WHERE area = $1 AND id <> $2 AND lease_until > $3
			ORDER BY lease_until DESC, id LIMIT 1`, h.Area, h.Server, now).Scan(&out.Dest)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrAreaUnavailable
		}
		if err != nil {
			return err
		}
		expires := (now + h.Lifetime.Milliseconds()) / 1000 // whole seconds: the ticket's resolution
		out.Expires = time.Unix(expires, 0)
		if _, err := tx.ExecContext(ctx, `UPDATE characters SET x = $1, y = $2 WHERE id = $3`, h.Position.X, h.Position.Y, charID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE in_world SET server = $1, token = 0, since = $2, ticket = $3, transit_until = $4
			WHERE character_id = $5`, out.Dest, now, h.Ticket[:], expires*1000, charID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM logins WHERE account_id = $1 AND server = $2 AND token = $3`, accountID, h.Server, h.Token)
		return err
	})
	if err != nil {
		return HandedOff{}, err
	}
	return out, nil
}

// Admission is a verified gateway ticket presented to server.
type Admission struct {
	Server    string // the admitting server (this one)
	Ticket    [TicketIDLen]byte
	Account   string
	Character string
	Expires   time.Time
	// MaxLifetime bounds how far ahead of the database's clock a ticket may
	// expire (a source with a wrong lifetime, or a forged far expiry that a
	// stolen world key could make): beyond it, ErrTicketExpired.
	MaxLifetime time.Duration
}

// AdmitTicket admits a character by gateway ticket in one transaction: the
// ticket must not have expired (ErrTicketExpired) nor have been admitted
// before (ErrTicketReplayed; it is recorded as used now); the character
// must be the account's (ErrNoCharacter, ErrNotOwner) and not in the world
// on a live server other than in transit under this ticket (a *BusyError);
// then the account's login is claimed for server (taking it over, with a
// notice, as ClaimLogin) and the character's claim becomes server's. The
// ticket's signature and proof are the caller's to check before.
func (s *Store) AdmitTicket(ctx context.Context, a Admission) (Character, Login, error) {
	akey, err := AccountKey(a.Account)
	if err != nil {
		return Character{}, Login{}, err
	}
	ckey, err := CharacterKey(a.Character)
	if err != nil {
		return Character{}, Login{}, err
	}
	if err := checkServer(a.Server, 0); err != nil {
		return Character{}, Login{}, err
	}
	var c Character
	l := Login{Account: akey, Server: a.Server}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var now int64
		if err := tx.QueryRowContext(ctx, `SELECT `+s.d.nowMS).Scan(&now); err != nil {
			return err
		}
		exp := a.Expires.Unix() * 1000
		if exp <= now || exp > now+a.MaxLifetime.Milliseconds()+1000 {
			return ErrTicketExpired
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO used_tickets (id, server, used, expires) VALUES ($1, $2, $3, $4)`,
			a.Ticket[:], a.Server, now, exp)
		if s.d.isUnique(err) {
			return ErrTicketReplayed
		}
		if err != nil {
			return err
		}
		var accountID, created int64
		err = tx.QueryRowContext(ctx, `
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
		h, err := s.holder(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		if h.live() && !(h.transit.Valid && bytes.Equal(h.ticket, a.Ticket[:])) {
			return h.busy()
		}
		if err := s.takeLogin(ctx, tx, accountID, &l); err != nil {
			return err
		}
		return s.putClaim(ctx, tx, c.ID, a.Server, l.Token)
	})
	if err != nil {
		return Character{}, Login{}, err
	}
	return c, l, nil
}

// PurgeTickets forgets used tickets that expired more than keep ago (they
// are refused as expired anyway) and returns how many.
func (s *Store) PurgeTickets(ctx context.Context, keep time.Duration) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM used_tickets WHERE expires < `+s.d.nowMS+` - $1`, keep.Milliseconds())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// RegisterWorldKey records the world's public key in a database that has
// none, and checks it against the recorded one otherwise
// (ErrWorldKeyMismatch): the servers of one database are one world.
func (s *Store) RegisterWorldKey(ctx context.Context, public []byte) error {
	if len(public) != 32 {
		return fmt.Errorf("store: a world key is 32 bytes, got %d", len(public))
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var have []byte
		err := tx.QueryRowContext(ctx, `SELECT public_key FROM world WHERE id = 1`).Scan(&have)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO world (id, public_key) VALUES (1, $1)`, public)
			return err
		case err != nil:
			return err
		case !bytes.Equal(have, public):
			return ErrWorldKeyMismatch
		}
		return nil
	})
}

// Transit returns the claim of the character named name: its holder, and
// whether it is in transit and until when (for tests and mmo_online).
func (s *Store) Transit(ctx context.Context, name string) (server string, inTransit bool, until time.Time, err error) {
	c, err := s.claimOf(ctx, name)
	if err != nil {
		return "", false, time.Time{}, err
	}
	return c.server, c.transit.Valid, time.UnixMilli(c.transit.Int64), nil
}
