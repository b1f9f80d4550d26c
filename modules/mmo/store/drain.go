package store

import (
	"context"
	"database/sql"
	"errors"
)

// Drains (schema 5). A server that drains hands every character it plays
// to a neighbour area server, characters standing in its own area too. So
// that the neighbour plays them where they stand, it covers the drained
// area: area_covers names it, until the drained area's server starts again
// (StartServer removes the cover of its own area). While a server drains
// its lease names no area, so that no handoff is made to it. When the
// drained server is back, the covering server no longer covers the area
// and hands the characters there back, as at any border.

// Drain marks server as draining and, in the same transaction, records the
// first area of candidates held by a live server other than server as the
// cover of area. It returns that area, or ErrAreaUnavailable when none is
// held (the drain mark stays: the characters cannot be handed over).
func (s *Store) Drain(ctx context.Context, server, area string, candidates []string) (string, error) {
	if err := checkServer(server, 0); err != nil {
		return "", err
	}
	s.draining.Store(true)
	var cover string
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE servers SET area = '' WHERE id = $1`, server); err != nil {
			return err
		}
		now, err := s.nowMS(ctx, tx)
		if err != nil {
			return err
		}
		for _, c := range candidates {
			var dest string
			err := tx.QueryRowContext(ctx, `SELECT id FROM servers WHERE area = $1 AND id <> $2 AND lease_until > $3
				ORDER BY lease_until DESC, id LIMIT 1`, c, server, now).Scan(&dest)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO area_covers (area, server, since) VALUES ($1, $2, $3)
				ON CONFLICT (area) DO UPDATE SET server = excluded.server, since = excluded.since`, area, dest, now)
			cover = c
			return err
		}
		return ErrAreaUnavailable
	})
	if err != nil {
		return "", err
	}
	return cover, nil
}

// Undrain calls server's drain off: its lease names its area again and
// the cover of its area ends.
func (s *Store) Undrain(ctx context.Context, server string) error {
	if err := checkServer(server, 0); err != nil {
		return err
	}
	s.draining.Store(false)
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := s.uncover(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE servers SET area = $1 WHERE id = $2`, s.opt.Area, server)
		return err
	})
}

// Covers returns the areas server covers for drained servers.
func (s *Store) Covers(ctx context.Context, server string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT area FROM area_covers WHERE server = $1 ORDER BY area`, server)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// uncover ends the cover of this server's own area (it serves it again).
func (s *Store) uncover(ctx context.Context, tx *sql.Tx) error {
	if s.opt.Area == "" || s.draining.Load() {
		return nil // a draining server restarting its lease keeps the cover
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM area_covers WHERE area = $1`, s.opt.Area)
	return err
}

// leaseArea is the area a lease names: none while draining.
func (s *Store) leaseArea() string {
	if s.draining.Load() {
		return ""
	}
	return s.opt.Area
}

func (s *Store) nowMS(ctx context.Context, tx *sql.Tx) (int64, error) {
	var now int64
	err := tx.QueryRowContext(ctx, `SELECT `+s.d.nowMS).Scan(&now)
	return now, err
}
