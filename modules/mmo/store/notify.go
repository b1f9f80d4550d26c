package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"
)

// ErrNoNotifications: the backend (SQLite) has no notifications; servers
// sharing it learn of takeovers from ServerLogins alone.
var ErrNoNotifications = errors.New("store: this backend has no notifications")

// Listener receives the login claims of every server (its own included)
// from PostgreSQL's LISTEN/NOTIFY.
type Listener struct {
	// Notice is called with each claim, on the listener's goroutine; it
	// must not block.
	Notice func(Login)
	// Resync is called each time the listener starts listening, after a
	// connection was lost as well: notifications sent while it was away are
	// gone, so the caller should compare its sessions with ServerLogins.
	Resync func()
	// LogError reports a lost connection or a malformed notice (the
	// message never holds a password).
	LogError func(error)
}

// Listen listens until ctx ends, reconnecting a second after a lost
// connection. It returns ErrNoNotifications at once on SQLite.
func (s *Store) Listen(ctx context.Context, l Listener) error {
	if s.pg == nil {
		return ErrNoNotifications
	}
	pl := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			c, err := pgx.ConnectConfig(ctx, s.pg.Copy())
			if err != nil {
				return nil, scrubErr("", err, "", s.pg.Password)
			}
			return c, nil
		},
		LogError: func(_ context.Context, err error) {
			if l.LogError != nil && ctx.Err() == nil {
				l.LogError(scrubErr("", err, "", s.pg.Password))
			}
		},
		ReconnectDelay: time.Second,
	}
	pl.Handle(LoginChannel, loginHandler{l})
	return pl.Listen(ctx)
}

type loginHandler struct{ l Listener }

func (h loginHandler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	login, err := ParseNotice(n.Payload)
	if err != nil {
		return err
	}
	if h.l.Notice != nil {
		h.l.Notice(login)
	}
	return nil
}

// HandleBacklog runs once listening has begun, on every (re)connection.
func (h loginHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	if h.l.Resync != nil {
		h.l.Resync()
	}
	return nil
}
