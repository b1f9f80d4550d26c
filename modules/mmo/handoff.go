package mmo

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/modules/mmo/gateway"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Handoffs between area servers (docs/mmo.md §13, docs/scaling.md).
//
// After each world step the game thread looks at every character: one
// outside this server's area, inside a neighbour's, whose session has a
// handoff key, is handed over. It stops at the border (observers see it
// there) while the lane commits the handoff (store.HandOff: position
// saved, claim moved to the neighbour in transit, login given up); then
// the game thread signs the gateway ticket, takes the character out of its
// world (observers see it disappear) and sends the client Handoff. A
// character that cannot be handed over (no key, no neighbour there, the
// neighbour's server is down) stays inside the area, pressed against the
// border, and is tried again after handoffRetry.
//
// A client presenting a ticket in its ClientFinished is admitted without a
// password: the game thread only parses the ticket (bounded); the lane
// verifies the world signature and the client's proof over this session's
// channel binding, checks the destination is this server, and runs
// store.AdmitTicket (expiry by the database's clock, single use, the
// character not in the world elsewhere). Only then is the session logged
// in and the character entered; any refusal is a TicketResult with its
// code, and the session stays anonymous.

// errNotLooked: the covers were not looked at.
var errNotLooked = errors.New("not looked at")

// handoffRetry spaces the handoff attempts of a character that could not
// be handed over.
const handoffRetry = time.Second

// loadWorldKey loads (or, at first start, creates) the world key and
// checks it against the one the database records.
func (m *Module) loadWorldKey(ctx context.Context) error {
	path := m.areas.keyFile
	priv, created, err := gateway.LoadOrCreateWorldKey(path)
	if err != nil {
		return fmt.Errorf("the world key: %w", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	if err := m.db.RegisterWorldKey(ctx, pub); err != nil {
		if created {
			os.Remove(path) // ours was made a moment ago: make room for the world's
		}
		if errors.Is(err, store.ErrWorldKeyMismatch) {
			return fmt.Errorf("the world key %s is not the key of the world in %s: copy world.key from another area server of this world (mode 0600)", path, m.db.Where())
		}
		return fmt.Errorf("recording the world key: %w", err)
	}
	if created {
		m.h.Log().Warn("mmo: created the world key; copy it (mode 0600) to every other area server of this world before starting them", "path", path)
	}
	m.worldKey, m.worldPub = priv, pub
	return nil
}

// crossBorders hands over the characters that left this server's area.
func (m *Module) crossBorders(now time.Time) {
	own := m.areas.own
	for _, s := range m.players {
		sn, ok := m.w.Get(s.wid)
		if !ok || own.contains(sn.X, sn.Y) || m.covering(sn.X, sn.Y) || s.handing {
			continue
		}
		dest := m.areas.areaAt(sn.X, sn.Y)
		x, y := own.clamp(sn.X, sn.Y)
		m.w.Place(s.wid, x, y) // inside the area until (and unless) handed over
		if dest == nil || s.key == nil || s.busy || now.Before(s.retryAt) {
			continue
		}
		m.handOff(s, dest, store.Position{Name: sn.Name, X: sn.X, Y: sn.Y}, now)
	}
}

// handOff commits s's character's move to dest and, once committed, sends
// the client its ticket.
func (m *Module) handOff(s *session, dest *area, at store.Position, began time.Time) {
	var id [gateway.IDLen]byte
	rand.Read(id[:])
	h := store.Handoff{Server: m.pres.id, Account: s.account, Token: s.token, Position: at, Area: dest.name,
		Ticket: id, Lifetime: seconds(m.areas.lifetime)}
	wid, key := s.wid, *s.key
	s.handing = true
	m.w.Stop(wid)
	m.async(s, func(ctx context.Context) func() {
		out, err := m.db.HandOff(ctx, h)
		return func() {
			s.handing = false
			if !m.alive(s) || s.state != inWorld || s.wid != wid {
				return // the client left, or its login ended: the lane's order keeps the claim fenced
			}
			if err != nil {
				s.retryAt = time.Now().Add(handoffRetry)
				m.h.Log().Info("mmo: handoff not made; the character stays at the border", "character", at.Name, "to", dest.name, "err", err)
				return
			}
			t := gateway.Ticket{ID: id, Expires: out.Expires, Server: dest.key, ClientKey: key, Account: s.account, Character: at.Name}
			signed, serr := gateway.Sign(m.worldKey, t)
			m.w.Leave(wid) // committed: the claim is the neighbour's now
			delete(m.players, wid)
			if m.online[s.account] == s {
				delete(m.online, s.account)
			}
			s.state, s.account, s.token, s.char, s.wid, s.key = anonymous, "", 0, "", 0, nil
			if serr != nil { // unreachable: names and expiry were checked
				m.h.Log().Error("mmo: signing a gateway ticket", "err", serr)
				m.send(s.client.ID, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutUnknown, Detail: "the handoff failed; log in again"})
				return
			}
			m.handoffsOut++
			m.h.AddMetric(metricHandoffsOut, 1)
			m.h.Log().Info("handed over", "character", at.Name, "to", dest.name, "server", out.Dest,
				"took", time.Since(began).Round(time.Microsecond))
			m.send(s.client.ID, &mmoproto.Handoff{Area: dest.name, Addr: dest.addr, Pin: dest.pin, Ticket: signed})
		}
	})
}

// admitTicket handles the gateway ticket of a newly admitted client.
func (m *Module) admitTicket(s *session, raw []byte) {
	refuse := func(code mmoproto.Code, detail string) {
		m.ticketsRefused++
		m.h.AddMetric(metricTicketsRefused, 1)
		m.h.Log().Info("gateway ticket refused", "client", s.client.ID, "addr", s.addr, "code", code.String(), "detail", detail)
		m.send(s.client.ID, &mmoproto.TicketResult{Code: code, Detail: detail})
	}
	if m.areas == nil {
		refuse(mmoproto.TicketsNotAccepted, "this server is not an area server")
		return
	}
	pt, err := gateway.Parse(raw)
	if err != nil {
		refuse(mmoproto.TicketInvalid, "the ticket does not parse")
		return
	}
	if m.pres.local {
		refuse(mmoproto.Internal, "the server lost its database; try again shortly")
		return
	}
	th, self, server := s.client.ChannelBinding, m.areas.own.key, m.pres.id
	maxLife := seconds(maxTicketLifetime)
	own, look := m.areas.own, m.nextCoverLook()
	m.async(s, func(ctx context.Context) func() {
		code, detail, ch, l := m.checkTicket(ctx, &pt, th, self, server, maxLife)
		// A character standing outside this server's area was handed over
		// by a draining neighbour whose area this server covers now: learn
		// it before the character enters, or it would be pushed back to
		// the border.
		var covers []string
		coversErr := errNotLooked
		if code == mmoproto.OK && !own.contains(ch.X, ch.Y) {
			covers, coversErr = m.db.Covers(ctx, server)
		}
		return func() {
			if coversErr == nil {
				m.applyCovers(look, covers)
			}
			if !m.alive(s) || s.state != anonymous {
				m.h.Log().Info("gateway ticket checked after its client left or logged in; the character is released",
					"client", s.client.ID, "code", code.String(), "alive", m.alive(s))
				if code == mmoproto.OK {
					m.releaseCharacter(store.Position{Name: ch.Name, X: ch.X, Y: ch.Y}, false)
					m.releaseLogin(l.Account, l.Token)
				}
				return
			}
			if code != mmoproto.OK {
				refuse(code, detail)
				return
			}
			if old := m.online[l.Account]; old != nil {
				m.endLogin(old, mmoproto.LoggedOutElsewhere, "your account logged in on another connection", false)
			}
			key := pt.ClientKey
			s.state, s.account, s.token, s.key = loggedIn, l.Account, l.Token, &key
			// No LoginStart states its protocol: a ticket is served the
			// newest (docs/mmo.md §1.1).
			s.speaks = mmoproto.Protocol
			m.online[l.Account] = s
			m.handoffsIn++
			m.h.AddMetric(metricHandoffsIn, 1)
			m.h.Log().Info("admitted by gateway ticket", "account", l.Account, "character", ch.Name, "client", s.client.ID)
			m.send(s.client.ID, &mmoproto.TicketResult{Code: mmoproto.OK, Account: l.Account})
			m.enterClaimed(s, 0, ch)
		}
	})
}

// checkTicket runs in the lane: the signature and proof, this server's
// identity, then the database. It returns OK with the character and the
// login, or the refusal.
func (m *Module) checkTicket(ctx context.Context, pt *gateway.Presented, th, self [32]byte, server string, maxLife time.Duration) (mmoproto.Code, string, store.Character, store.Login) {
	switch err := pt.Verify(m.worldPub, th); {
	case errors.Is(err, gateway.ErrSignature):
		return mmoproto.TicketSignature, "not signed by this world's key", store.Character{}, store.Login{}
	case err != nil:
		return mmoproto.TicketInvalid, "the proof is not this client's over this session", store.Character{}, store.Login{}
	}
	if pt.Server != self {
		return mmoproto.TicketWrongServer, "the ticket is for another server", store.Character{}, store.Login{}
	}
	ch, l, err := m.db.AdmitTicket(ctx, store.Admission{Server: server, Ticket: pt.ID, Account: pt.Account,
		Character: pt.Character, Expires: pt.Expires, MaxLifetime: maxLife})
	var busy *store.BusyError
	switch {
	case err == nil:
		return mmoproto.OK, "", ch, l
	case errors.Is(err, store.ErrTicketExpired):
		return mmoproto.TicketExpired, "expired at " + pt.Expires.UTC().Format(time.RFC3339), ch, l
	case errors.Is(err, store.ErrTicketReplayed):
		return mmoproto.TicketReplayed, "the ticket was used already", ch, l
	case errors.As(err, &busy):
		return mmoproto.CharacterElsewhere, "the character is in the world on server " + busy.Server, ch, l
	case errors.Is(err, store.ErrNoCharacter), errors.Is(err, store.ErrNotOwner), errors.Is(err, store.ErrNoAccount):
		return mmoproto.TicketInvalid, "no such character of that account", ch, l
	}
	m.h.Log().Error("mmo: admitting a gateway ticket", "err", err)
	return mmoproto.Internal, "the database failed; log in with your password", ch, l
}

// setHandoffKey registers the session's handoff key (HandoffKey).
func (m *Module) setHandoffKey(s *session, r *mmoproto.HandoffKey) {
	if !m.needLogin(s, r.RequestID) {
		return
	}
	key := r.Key
	s.key = &key
	m.ok(s.client.ID, r.RequestID)
}

// onAdmittedTicket is OnAdmitted's part for a client with a ticket.
func (m *Module) onAdmittedTicket(s *session, c module.ClientInfo) {
	if len(c.Ticket) == 0 || c.Present {
		return // a module that restarted sees its clients again, tickets and all: they were used
	}
	m.admitTicket(s, c.Ticket)
}

// areaLine describes the area for mmo_online.
func (m *Module) areaLine() string {
	if m.areas == nil {
		return ""
	}
	a := m.areas.own
	return fmt.Sprintf("\n  area %s [%g,%g]-[%g,%g] of %d, handoffs out %d, in %d, tickets refused %d",
		a.name, a.x0, a.y0, a.x1, a.y1, len(m.areas.all), m.handoffsOut, m.handoffsIn, m.ticketsRefused) + m.drainLine()
}
