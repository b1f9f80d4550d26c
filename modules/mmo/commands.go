// Package mmo is the MMO session gate: accounts with SCRAM-SHA-256 logins
// bound to the sealed session, characters owned by accounts, one shared area
// with server-timed movement, interest-managed position updates and nearby
// greetings, all persisted in SQLite or in a PostgreSQL database that several
// servers share as one world (docs/scaling.md). It runs as a Go plugin
// (built into the sparkhost binary: `sparkhost run --module mmo`);
// docs/mmo.md is the wire contract.
//
// Every handler runs on the module's game goroutine, from the batch of
// events the server sends each tick; the transport connection grants
// nothing: each request is checked against the session's authenticated
// account and the character it plays (docs/mmo.md §9). The game goroutine
// never waits for the database: database work goes to the lane (dblane.go)
// and its answers come back as completions at the next tick; a session has
// at most one request in the lane, so its requests keep their order.
package mmo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// The module's admin console commands (docs/mmo.md §12).

// Command runs the admin commands.
func (m *Module) Command(name string, args []string) (string, error) {
	switch name {
	case "mmo_accounts":
		// Admin commands answer at once, so this one queries from the game
		// thread, bounded by adminTimeout.
		ctx, cancel := context.WithTimeout(m.ctx, adminTimeout)
		defer cancel()
		n, err := m.db.CountAccounts(ctx)
		if err != nil {
			return "", err
		}
		list, err := m.db.ListAccounts(ctx, "", 50)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "accounts %d", n)
		for _, a := range list {
			fmt.Fprintf(&b, "\n  %s  characters %d  created %s", a.Name, a.Characters, a.Created.UTC().Format(time.DateTime))
		}
		if n > len(list) {
			fmt.Fprintf(&b, "\n  … and %d more", n-len(list))
		}
		return b.String(), nil
	case "mmo_online":
		var b strings.Builder
		fmt.Fprintf(&b, "online %d, in world %d, refused position uploads %d", len(m.online), len(m.players), m.refusedUploads)
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range m.online {
				if !yield(k) {
					return
				}
			}
		})
		for _, a := range names {
			s := m.online[a]
			fmt.Fprintf(&b, "\n  %s  client %d (%s)", a, s.client.ID, s.client.Name)
			if s.state == inWorld {
				sn, _ := m.w.Get(s.wid)
				fmt.Fprintf(&b, "  playing %s at %.1f,%.1f", sn.Name, sn.X, sn.Y)
			}
		}
		fmt.Fprintf(&b, "\n  server %s, database %s %s, lease %v", m.pres.id, m.db.Backend(), m.db.Where(), m.pres.lease)
		b.WriteString(m.areaLine())
		return b.String(), nil
	case "mmo_ban":
		return m.banCommand(args)
	case "mmo_unban":
		return m.unbanCommand(args)
	case "mmo_bans":
		return m.bansCommand()
	case "mmo_kick_account":
		if len(args) != 1 {
			return "", errors.New("usage: mmo_kick_account NAME")
		}
		key, err := store.AccountKey(args[0])
		if err != nil {
			return "", err
		}
		s := m.online[key]
		if s == nil {
			return "", fmt.Errorf("account %s is not logged in; see mmo_online", key)
		}
		m.endLogin(s, mmoproto.LoggedOutKicked, "an administrator ended your login", true)
		return "logged out " + key, nil
	}
	return "", fmt.Errorf("no such command %q", name)
}
