package mmo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Presence: this server's place among the servers that share the database
// (docs/scaling.md). The lease goroutine renews the server's lease every
// lease/5 on its own connection, never behind the lane's queue; if no
// renewal has succeeded for 3/4 of the lease, the game thread ends every
// login (the server can no longer prove it owns them, and after the lease
// another server may take its characters over) and refuses logins until a
// renewal succeeds again, which starts the server afresh (StartServer).
// Other servers' logins arrive as notices (PostgreSQL LISTEN/NOTIFY); each
// lease/5, and whenever the listener reconnects, the game thread compares
// its sessions with ServerLogins, which catches a lost notice.

// serverIDFile keeps the server's id across restarts of the module, so that
// a restarted module drops its previous run's logins and claims at once.
const serverIDFile = "mmo.server"

// noticeQueue bounds the notices waiting for the game thread; beyond it a
// notice is dropped and a resync requested.
const noticeQueue = 4096

type presence struct {
	id       string
	lease    time.Duration
	leaseOK  atomic.Int64 // UnixNano when the last successful renewal began
	fenced   atomic.Bool  // set by the game thread; the lease goroutine restarts the server
	resync   atomic.Bool  // the listener (re)connected or dropped a notice
	notices  chan store.Login
	stop     context.CancelFunc
	done     chan struct{}
	local    bool      // game thread: logins are refused and none are held
	nextSync time.Time // game thread: when to compare with ServerLogins
	syncing  bool      // game thread: a comparison is in the lane
}

// loadServerID reads the server's id, creating it on first start:
// host name and 8 random hex digits.
func loadServerID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && store.ValidServerID(strings.TrimSpace(string(b))) {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	host, _ := os.Hostname()
	clean := []byte{}
	for i := 0; i < len(host) && len(clean) < 48; i++ {
		c := host[i]
		if !store.ValidServerID(string(c)) {
			c = '-'
		}
		clean = append(clean, c)
	}
	if len(clean) == 0 {
		clean = []byte("mmo")
	}
	r := make([]byte, 4)
	rand.Read(r)
	id := string(clean) + "-" + hex.EncodeToString(r)
	return id, atomicfile.WriteFile(path, []byte(id+"\n"))
}

// startPresence starts the lease goroutine and, on PostgreSQL, the listener.
func (m *Module) startPresence() {
	p := m.pres
	ctx, cancel := context.WithCancel(m.ctx)
	p.stop, p.done = cancel, make(chan struct{})
	p.leaseOK.Store(time.Now().UnixNano())
	p.notices = make(chan store.Login, noticeQueue)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		err := m.db.Listen(ctx, store.Listener{
			Notice: func(l store.Login) {
				select {
				case p.notices <- l:
				default:
					p.resync.Store(true)
				}
			},
			Resync:   func() { p.resync.Store(true) },
			LogError: func(err error) { m.h.Log().Warn("mmo: login notifications interrupted; reconnecting", "err", err) },
		})
		if err != nil && !errors.Is(err, store.ErrNoNotifications) && ctx.Err() == nil {
			m.h.Log().Error("mmo: login notifications stopped", "err", err)
		}
	}()
	go func() {
		defer close(p.done)
		defer func() { <-listening }()
		t := time.NewTicker(p.lease / 5)
		defer t.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			began := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, p.lease/2)
			var err error
			fenced := p.fenced.Load()
			if fenced {
				err = m.db.StartServer(rctx, p.id, p.lease)
			} else {
				err = m.db.RenewLease(rctx, p.id, p.lease)
			}
			rcancel()
			switch {
			case err == nil:
				p.leaseOK.Store(began.UnixNano())
				if fenced {
					p.fenced.Store(false)
				}
				if failing {
					m.h.Log().Info("mmo: the database answers again; lease renewed", "server", p.id)
				}
				failing = false
			case ctx.Err() != nil:
				return
			case !failing:
				failing = true
				m.h.Log().Error("mmo: cannot renew the server's lease", "server", p.id, "err", err)
			}
		}
	}()
}

// stopPresence stops the lease goroutine and the listener.
func (m *Module) stopPresence() {
	if m.pres.stop != nil {
		m.pres.stop()
		<-m.pres.done
	}
}

// presenceTick runs on the game thread each tick: notices, the self-fence,
// the periodic comparison with the database.
func (m *Module) presenceTick(now time.Time) {
	p := m.pres
	for drained := false; !drained; {
		select {
		case l := <-p.notices:
			m.notice(l)
		default:
			drained = true
		}
	}
	age := now.Sub(time.Unix(0, p.leaseOK.Load()))
	switch {
	case !p.local && age > p.lease*3/4:
		p.local = true
		p.fenced.Store(true)
		m.h.Log().Error("mmo: the lease could not be renewed; ending every login until the database answers", "server", p.id, "since", age.Round(time.Millisecond))
		for _, s := range m.online {
			m.endLogin(s, mmoproto.LoggedOutUnknown, "the server lost its database; log in again shortly", false)
		}
	case p.local && !p.fenced.Load():
		p.local = false
		m.h.Log().Info("mmo: logins accepted again", "server", p.id)
	}
	if p.resync.Swap(false) || now.After(p.nextSync) {
		p.nextSync = now.Add(p.lease / 5)
		m.syncLogins()
	}
}

// notice handles another server's (or this one's) login claim.
func (m *Module) notice(l store.Login) {
	if l.Server == m.pres.id {
		return
	}
	if s := m.online[l.Account]; s != nil && s.token < l.Token {
		m.endLogin(s, mmoproto.LoggedOutElsewhere, "your account logged in on another server", false)
	}
	if m.pendingLogins[l.Account] > 0 {
		m.noticed[l.Account] = max(m.noticed[l.Account], l.Token)
	}
}

// syncLogins compares the sessions with the logins the database says this
// server holds and ends those it no longer holds (a notice lost). It runs
// through the lane, so every login claimed before it was queued has been
// applied when its answer is.
func (m *Module) syncLogins() {
	if m.pres.syncing || len(m.online) == 0 {
		return
	}
	m.pres.syncing = true
	id := m.pres.id
	online := make([]string, 0, len(m.online))
	for account := range m.online {
		online = append(online, account)
	}
	m.lane.push(func(ctx context.Context) func() {
		held, err := m.db.ServerLogins(ctx, id)
		var bans map[string]store.Ban
		if err == nil {
			bans, err = m.db.HeldBans(ctx, id)
		}
		// A login taken away may have been taken by a ban (on any server).
		for _, account := range online {
			if _, ok := held[account]; ok || err != nil {
				continue
			}
			var b store.Ban
			var banned bool
			if b, banned, err = m.db.BanOf(ctx, account); banned {
				bans[account] = b
			}
		}
		return func() {
			m.pres.syncing = false
			if err != nil {
				return // the lease goroutine reports the database's state
			}
			for account, s := range m.online {
				tok, ok := held[account]
				if b, banned := bans[account]; banned {
					if ok && tok == s.token {
						m.releaseLogin(account, s.token)
					}
					m.endLogin(s, mmoproto.LoggedOutBanned, "an administrator banned your account: "+banDetail(b), false)
				} else if tok != s.token {
					m.endLogin(s, mmoproto.LoggedOutElsewhere, "your account logged in on another server", false)
				}
			}
		}
	})
}
