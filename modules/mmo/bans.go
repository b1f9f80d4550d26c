package mmo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Bans by account (docs/mmo.md §12.1): stored in the database, so they
// hold across restarts and on every server sharing it. A banned account's
// correct login is answered AccountBanned with the reason; a login in
// progress at ban time ends with LoggedOut{Banned} (at once on the server
// that ran the command, within lease/5 on the others, whose periodic
// comparison with the database finds the login taken away).

// banDetail is what a banned client is told.
func banDetail(b store.Ban) string {
	d := "banned since " + b.Since.UTC().Format(time.DateOnly)
	if b.Reason != "" {
		d += ": " + b.Reason
	}
	return d
}

func (m *Module) banCommand(args []string) (string, error) {
	if len(args) < 1 {
		return "", errors.New("usage: mmo_ban ACCOUNT [REASON...]")
	}
	reason := strings.Join(args[1:], " ")
	if err := store.CheckBanReason(reason); err != nil {
		return "", fmt.Errorf("the reason must be at most %d bytes of printable text", store.MaxBanReason)
	}
	ctx, cancel := context.WithTimeout(m.ctx, adminTimeout)
	defer cancel()
	b, err := m.db.BanAccount(ctx, args[0], reason)
	if errors.Is(err, store.ErrNoAccount) {
		return "", fmt.Errorf("no account %q; see mmo_accounts", args[0])
	}
	if err != nil {
		return "", err
	}
	m.h.Log().Info("account banned", "account", b.Account, "reason", b.Reason)
	out := "banned " + b.Account
	if s := m.online[b.Account]; s != nil {
		// The ban took the login away in the database: nothing to release.
		m.endLogin(s, mmoproto.LoggedOutBanned, "an administrator banned your account: "+banDetail(b), false)
		out += " (its login was ended)"
	}
	return out, nil
}

func (m *Module) unbanCommand(args []string) (string, error) {
	if len(args) != 1 {
		return "", errors.New("usage: mmo_unban ACCOUNT")
	}
	ctx, cancel := context.WithTimeout(m.ctx, adminTimeout)
	defer cancel()
	switch err := m.db.UnbanAccount(ctx, args[0]); {
	case errors.Is(err, store.ErrNoAccount):
		return "", fmt.Errorf("no account %q; see mmo_accounts", args[0])
	case errors.Is(err, store.ErrNotBanned):
		return "", fmt.Errorf("account %q is not banned; see mmo_bans", args[0])
	case err != nil:
		return "", err
	}
	key, _ := store.AccountKey(args[0])
	m.h.Log().Info("account unbanned", "account", key)
	return "unbanned " + key, nil
}

func (m *Module) bansCommand() (string, error) {
	ctx, cancel := context.WithTimeout(m.ctx, adminTimeout)
	defer cancel()
	n, err := m.db.CountBans(ctx)
	if err != nil {
		return "", err
	}
	list, err := m.db.Bans(ctx, "", 50)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "banned accounts %d", n)
	for _, ban := range list {
		fmt.Fprintf(&b, "\n  %s  since %s", ban.Account, ban.Since.UTC().Format(time.DateTime))
		if ban.Reason != "" {
			fmt.Fprintf(&b, "  %q", ban.Reason)
		}
	}
	if n > len(list) {
		fmt.Fprintf(&b, "\n  … and %d more", n-len(list))
	}
	return b.String(), nil
}

// setVerifier takes the verifier a VerifierUpgrade asked for.
func (m *Module) setVerifier(s *session, r *mmoproto.SetVerifier) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	if s.upgrade == 0 || int(r.Iterations) != s.upgrade {
		m.fail(s.client.ID, r.RequestID, mmoproto.OutOfOrder, fmt.Sprintf("no verifier upgrade to %d iterations was asked for this login", r.Iterations))
		return
	}
	v := scram.Verifier{Salt: r.Salt[:], Iterations: int(r.Iterations), StoredKey: r.StoredKey, ServerKey: r.ServerKey}
	if err := v.Check(m.cfg.MinIterations); err != nil {
		m.fail(s.client.ID, r.RequestID, mmoproto.BadRequest, err.Error())
		return
	}
	s.upgrade = 0 // one answer per asked upgrade
	sv := store.Verifier{Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey[:], ServerKey: v.ServerKey[:]}
	account, id := s.account, r.RequestID
	m.async(s, func(ctx context.Context) func() {
		err := m.db.SetVerifier(ctx, account, sv)
		return func() {
			if err == nil {
				m.h.AddMetric(metricVerifierUpgrades, 1)
				m.h.Log().Info("verifier upgraded", "account", account, "iterations", sv.Iterations)
			}
			m.answer(s, id, err)
		}
	})
}
