package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// receive prints what arrives on conn until it closes, then prints the
// disconnected line and forgets the connection. The line is printed under
// c.mu, so a connect that follows cannot see the old connection's last event
// as its own.
func (c *Console) receive(conn *connection) {
	defer close(conn.recvDone)
	admission := true // connect printed the admission GameStateSync already
	for {
		// Receive ends with ErrClosed once the connection is closed, by the
		// server or by disconnect/Close; it needs no context of its own.
		m, err := conn.client.Receive(context.Background())
		if err != nil {
			break
		}
		ch := c.applyWorld(conn.world, m)
		if admission && m.Header.Type == gamemsg.TypeGameStateSync {
			admission = false
			c.runHooks(m)
			continue
		}
		if ch.Kind == Synced { // parsed once, by the World
			c.Printf("%s", serverLine(ch.Sync))
			c.runHooks(m)
		} else {
			c.dispatch(m)
		}
		c.printModule(conn.client, m)
	}
	resumed, afresh := c.resumeSeat(conn)
	if resumed {
		return // the resumed connection's receive goroutine goes on
	}
	reason, detail := conn.client.CloseReason()
	c.mu.Lock()
	c.Printf("disconnected: %s (%s)", reason, detail)
	if c.conn == conn {
		c.conn = nil
	}
	c.mu.Unlock()
	if afresh {
		c.rejoin(conn)
	}
}

// applyWorld updates the connection's entities and prints the spawn and
// destroy lines.
func (c *Console) applyWorld(w *World, m netstack.Message) Change {
	ch, err := w.ApplyChange(m)
	if err != nil {
		c.Printf("ignored a malformed %s from the server: %v", m.Header.Type, err)
		return ch
	}
	switch ch.Kind {
	case Spawned:
		c.Printf("%s", "entity spawn: "+entityText(&ch.Entity))
	case Destroyed:
		c.Printf("entity destroy: %d", ch.Entity.ID)
	}
	return ch
}

// entityText renders "ID TYPE owner N at X,Y,Z" (without "at" for an
// entity whose position the client does not see).
func entityText(e *Entity) string {
	s := fmt.Sprintf("%d %s owner %d", e.ID, e.TypeName, e.Owner)
	if p, ok := e.Position(); ok {
		s += fmt.Sprintf(" at %g,%g,%g", p.X, p.Y, p.Z)
	}
	return s
}

// dispatch prints a built-in message and runs the module hooks for its type.
func (c *Console) dispatch(m netstack.Message) {
	c.printBuiltin(m)
	c.runHooks(m)
}

// runHooks runs the module hooks for m's type.
func (c *Console) runHooks(m netstack.Message) {
	c.mu.Lock()
	hooks := c.hooks[m.Header.Type]
	c.mu.Unlock()
	for _, h := range hooks {
		c.runHook(h, m)
	}
}

// runHook runs one module hook; a panic becomes an event line.
func (c *Console) runHook(h MessageHook, m netstack.Message) {
	defer func() {
		if r := recover(); r != nil {
			c.Printf("hook for %s failed: %v", m.Header.Type, r)
		}
	}()
	h(c, m)
}

// printBuiltin prints the event line of a built-in message type; other types
// are left to hooks.
func (c *Console) printBuiltin(m netstack.Message) {
	room, err := c.printRoom(m)
	if room {
		if err != nil {
			c.Printf("ignored a malformed %s from the server: %v", m.Header.Type, err)
		}
		return
	}
	switch m.Header.Type {
	case gamemsg.TypeChatMessage:
		var msg gamemsg.ChatMessage
		if msg, err = gamemsg.ParseChatMessage(m.Payload); err == nil {
			sender := msg.Sender
			if sender == "" {
				sender = "[server]"
			}
			c.Printf("chat %s: %s", sender, msg.Text)
		}
	case gamemsg.TypeMatchStart:
		var ms gamemsg.MatchStart
		if ms, err = gamemsg.ParseMatchStart(m.Payload); err == nil {
			c.Printf("match start: %s mode %s round %d", ms.Map, ms.Mode, ms.Round)
		}
	case gamemsg.TypeMatchEnd:
		var me gamemsg.MatchEnd
		if me, err = gamemsg.ParseMatchEnd(m.Payload); err == nil {
			c.Printf("match end: %s winner %d score %d", me.Reason, me.Winner, me.WinnerScore)
		}
	case gamemsg.TypeScoreUpdate:
		var su gamemsg.ScoreUpdate
		if su, err = gamemsg.ParseScoreUpdate(m.Payload); err == nil {
			c.Printf("%s", scoresLine(su))
		}
	case wire.TypeMessageRefused:
		var n wire.MessageRefused
		if n, err = wire.ParseMessageRefused(m.Payload); err == nil {
			c.Printf("the server refused our message of type %d: %s", n.Type, n.Reason)
		}
	case gamemsg.TypePlayerRespawn:
		var pr gamemsg.PlayerRespawn
		if pr, err = gamemsg.ParsePlayerRespawn(m.Payload); err == nil {
			c.Printf("respawn: client %d entity %d at %g,%g,%g yaw %g",
				pr.Client, pr.EntityID, pr.Position.X, pr.Position.Y, pr.Position.Z, pr.Yaw)
		}
	}
	if err != nil {
		c.Printf("ignored a malformed %s from the server: %v", m.Header.Type, err)
	}
}

// scoresLine renders "scores: ID=SCORE ..." ("scores: none" for no rows).
func scoresLine(su gamemsg.ScoreUpdate) string {
	if len(su.Scores) == 0 {
		return "scores: none"
	}
	var b strings.Builder
	b.WriteString("scores:")
	for _, s := range su.Scores {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(uint64(s.Client), 10))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(int64(s.Score), 10))
	}
	return b.String()
}

// serverLine renders "server: NAME — MOTD".
func serverLine(gs gamemsg.GameStateSync) string {
	return "server: " + gs.ServerName + " — " + gs.MOTD
}
