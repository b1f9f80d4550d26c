package mmoclient

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// RegisterTypes adds the mmo message schemas to a client registry, so the
// client accepts the module's messages.
func RegisterTypes(reg *wire.Registry) error { return mmoproto.RegisterAll(reg, mmoproto.Owner) }

// consoleSessions keeps one Session per connection of a console.
type consoleSessions struct {
	con *client.Console
	mu  sync.Mutex
	cur *netstack.Client
	s   *Session
	// iterations for Register (0 = scram.DefaultIterations).
	iterations int
}

// session returns the current connection's session (a fresh one after a
// reconnect), or ErrNotConnected.
func (cs *consoleSessions) session() (*Session, error) {
	c := cs.con.Client()
	if c == nil {
		return nil, client.ErrNotConnected
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cur != c {
		cs.cur = c
		s := NewSession(c, func(line string) { cs.con.Printf("%s", line) })
		s.Iterations = cs.iterations
		s.Follow = func(ctx context.Context, r Redirect) error { return cs.follow(ctx, s, r) }
		cs.s = s
	}
	return cs.s, nil
}

// resumed keeps the session (its login, its character) when the console's
// connection came back to its seat (docs/protocol.md §3.15): the server
// never logged it out, so the session goes on over the new connection.
func (cs *consoleSessions) resumed(old, nc *netstack.Client) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cur == old && cs.s != nil {
		cs.cur = nc
		cs.s.Adopt(nc)
	}
}

// follow moves the console to the neighbour's server of a handoff, keeping
// the session (the console's next commands go there, without the player
// typing anything).
func (cs *consoleSessions) follow(ctx context.Context, s *Session, r Redirect) error {
	addr, err := netip.ParseAddrPort(r.Addr)
	if err != nil {
		return fmt.Errorf("the server sent the address %q: %v", r.Addr, err)
	}
	_, err = cs.con.Redirect(ctx, addr, r.Pin, r.Ticket, func(c *netstack.Client) {
		cs.mu.Lock()
		cs.cur = c
		cs.mu.Unlock()
		s.Adopt(c)
	})
	return err
}

// Options tune Register.
type Options struct {
	// Iterations for mmo_session_register (0 = scram.DefaultIterations).
	Iterations int
	// Password asks for a password without echo (nil = the console's
	// ReadSecret: the interactive terminal, with echo off).
	Password func(prompt string) (string, error)
}

// Register adds the mmo_session_* commands and the message hooks to a
// console. The console's Registry must hold the mmo types (RegisterTypes).
func Register(con *client.Console, opts Options) error {
	cs := &consoleSessions{con: con, iterations: opts.Iterations}
	con.OnResumed(cs.resumed)
	ask := opts.Password
	if ask == nil {
		ask = con.ReadSecret
	}
	for t := mmoproto.FirstType; t <= mmoproto.LastType; t++ {
		if mmoproto.IsRequest(t) {
			continue
		}
		con.OnMessage(t, func(c *client.Console, m netstack.Message) {
			if s, err := cs.session(); err == nil {
				s.Handle(m)
			}
		})
	}
	con.OnMessage(wire.TypeMessageRefused, func(c *client.Console, m netstack.Message) {
		if s, err := cs.session(); err == nil {
			s.Handle(m)
		}
	})
	type run func(ctx context.Context, s *Session, args []string) (string, error)
	cmd := func(name, usage, help string, nargs []int, f run) client.Command {
		return client.Command{Name: name, Usage: usage, Help: help, Run: func(c *client.Console, args []string) error {
			if len(args) < nargs[0] || len(args) > nargs[1] {
				return fmt.Errorf("usage: %s", usage)
			}
			s, err := cs.session()
			if err != nil {
				return err
			}
			out, err := f(c.Context(), s, args) // Ctrl-C at the console ends the wait
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			c.Println(out)
			return nil
		}}
	}
	password := func(args []string, account string) (string, error) {
		if len(args) == 2 {
			return args[1], nil
		}
		return ask("password for " + account + ": ")
	}
	cmds := []client.Command{
		cmd("mmo_session_register", "mmo_session_register ACCOUNT [PASSWORD]", "create an account (asks for the password when omitted)", []int{1, 2},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				pw, err := password(a, a[0])
				if err != nil {
					return "", err
				}
				name, err := s.Register(ctx, a[0], pw)
				return "registered " + name, err
			}),
		cmd("mmo_session_login", "mmo_session_login ACCOUNT [PASSWORD]", "log in (asks for the password when omitted)", []int{1, 2},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				pw, err := password(a, a[0])
				if err != nil {
					return "", err
				}
				name, err := s.Login(ctx, a[0], pw)
				return "logged in as " + name, err
			}),
		cmd("mmo_session_logout", "mmo_session_logout", "log out", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) { return "logged out", s.Logout(ctx) }),
		cmd("mmo_session_characters", "mmo_session_characters", "list your characters", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) {
				list, err := s.Characters(ctx)
				if err != nil {
					return "", err
				}
				if len(list) == 0 {
					return "characters: none", nil
				}
				parts := make([]string, len(list))
				for i, c := range list {
					parts[i] = fmt.Sprintf("%s (%.1f,%.1f)", c.Name, c.X, c.Y)
				}
				return "characters: " + strings.Join(parts, ", "), nil
			}),
		cmd("mmo_session_create", "mmo_session_create NAME", "create a character", []int{1, 1},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				return "created " + a[0], s.Create(ctx, a[0])
			}),
		cmd("mmo_session_delete", "mmo_session_delete NAME", "delete one of your characters", []int{1, 1},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				return "deleted " + a[0], s.Delete(ctx, a[0])
			}),
		cmd("mmo_session_enter", "mmo_session_enter NAME", "enter the world as one of your characters", []int{1, 1},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				e, err := s.Enter(ctx, a[0])
				return fmt.Sprintf("entered as %s (id %d) at %.1f,%.1f", e.Name, e.ID, e.X, e.Y), err
			}),
		cmd("mmo_session_leave", "mmo_session_leave", "leave the world", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) {
				return "left the world", s.Leave(ctx)
			}),
		cmd("mmo_session_move", "mmo_session_move DX DY", "move in a direction (each -1..1); the server moves you at a fixed speed", []int{2, 2},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				dx, err1 := strconv.ParseFloat(a[0], 32)
				dy, err2 := strconv.ParseFloat(a[1], 32)
				if err := errors.Join(err1, err2); err != nil {
					return "", fmt.Errorf("DX and DY must be numbers: %v", err)
				}
				return fmt.Sprintf("moving %g,%g", dx, dy), s.Move(ctx, float32(dx), float32(dy))
			}),
		cmd("mmo_session_stop", "mmo_session_stop", "stop moving", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) { return "stopped", s.Stop(ctx) }),
		cmd("mmo_session_where", "mmo_session_where", "where the server has you", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) {
				w, err := s.Where(ctx)
				return fmt.Sprintf("at %.1f,%.1f heading %.2f,%.2f", w.X, w.Y, w.DX, w.DY), err
			}),
		cmd("mmo_session_nearby", "mmo_session_nearby", "characters in view, nearest first", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) {
				list := s.Nearby()
				if len(list) == 0 {
					return "nearby: nobody", nil
				}
				parts := make([]string, len(list))
				for i, c := range list {
					parts[i] = fmt.Sprintf("%s %.1f,%.1f", c.Name, c.X, c.Y)
				}
				return "nearby: " + strings.Join(parts, ", "), nil
			}),
		cmd("mmo_session_greet", "mmo_session_greet NAME", "greet a character near you", []int{1, 1},
			func(ctx context.Context, s *Session, a []string) (string, error) {
				return "greeted " + a[0], s.Greet(ctx, a[0])
			}),
		cmd("mmo_session_status", "mmo_session_status", "login and world state", []int{0, 0},
			func(ctx context.Context, s *Session, _ []string) (string, error) {
				st := s.Status()
				switch {
				case st.Account == "":
					return "mmo: not logged in", nil
				case st.Character == "":
					return "mmo: logged in as " + st.Account + ", not in the world", nil
				}
				// Others, counted directly: the own character is not known
				// until its Appear, a replication step after Entered.
				return fmt.Sprintf("mmo: logged in as %s, in the world as %s (id %d), %d in view", st.Account, st.Character, st.ID, len(s.Nearby())), nil
			}),
	}
	for _, c := range cmds {
		if err := con.Register(c); err != nil {
			return err
		}
	}
	return nil
}
