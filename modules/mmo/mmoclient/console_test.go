package mmoclient

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// mmoConsole is a console with the mmo commands; asked counts the password
// prompts.
type mmoConsole struct {
	*client.Console
	out    *syncbuf.Buffer
	mu     sync.Mutex
	asked  []string
	answer string
}

func newMMOConsole(t *testing.T, cfg client.Config) *mmoConsole {
	t.Helper()
	mc := &mmoConsole{out: new(syncbuf.Buffer), answer: "from-the-terminal"}
	cfg.Out = mc.out
	mc.Console = client.NewConsole(cfg)
	t.Cleanup(mc.Close)
	err := Register(mc.Console, Options{Iterations: testIterations, Password: func(prompt string) (string, error) {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		mc.asked = append(mc.asked, prompt)
		return mc.answer, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

func (mc *mmoConsole) prompts() []string {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return slices.Clone(mc.asked)
}

var commandNames = []string{
	"mmo_session_register", "mmo_session_login", "mmo_session_logout", "mmo_session_characters",
	"mmo_session_create", "mmo_session_delete", "mmo_session_enter", "mmo_session_leave",
	"mmo_session_move", "mmo_session_stop", "mmo_session_where", "mmo_session_nearby",
	"mmo_session_greet", "mmo_session_status",
}

// TestConsoleRegister: every command of docs/mmo.md §12 is listed by help;
// registering twice on one console fails loudly.
func TestConsoleRegister(t *testing.T) {
	c := newMMOConsole(t, client.Config{})
	if err := c.Exec("help"); err != nil {
		t.Fatal(err)
	}
	for _, name := range commandNames {
		if !strings.Contains(c.out.String(), name) {
			t.Errorf("help does not list %s", name)
		}
	}
	if err := Register(c.Console, Options{}); !errors.Is(err, client.ErrDuplicateCommand) {
		t.Fatalf("second Register = %v, want ErrDuplicateCommand", err)
	}
}

// TestConsoleUsageErrors: a wrong number of arguments is a one-line usage
// error, before anything else (no connection needed, no password asked,
// nothing printed).
func TestConsoleUsageErrors(t *testing.T) {
	c := newMMOConsole(t, client.Config{})
	for _, tc := range []struct{ line, usage string }{
		{"mmo_session_register", "mmo_session_register ACCOUNT [PASSWORD]"},
		{"mmo_session_register alice pw extra", "mmo_session_register ACCOUNT [PASSWORD]"},
		{"mmo_session_login", "mmo_session_login ACCOUNT [PASSWORD]"},
		{"mmo_session_login a b c", "mmo_session_login ACCOUNT [PASSWORD]"},
		{"mmo_session_logout now", "mmo_session_logout"},
		{"mmo_session_characters all", "mmo_session_characters"},
		{"mmo_session_create", "mmo_session_create NAME"},
		{"mmo_session_create Ali Ce", "mmo_session_create NAME"},
		{"mmo_session_delete", "mmo_session_delete NAME"},
		{"mmo_session_enter", "mmo_session_enter NAME"},
		{"mmo_session_leave x", "mmo_session_leave"},
		{"mmo_session_move 1", "mmo_session_move DX DY"},
		{"mmo_session_move 1 0 0", "mmo_session_move DX DY"},
		{"mmo_session_stop x", "mmo_session_stop"},
		{"mmo_session_where x", "mmo_session_where"},
		{"mmo_session_nearby x", "mmo_session_nearby"},
		{"mmo_session_greet", "mmo_session_greet NAME"},
		{"mmo_session_greet Bob Carol", "mmo_session_greet NAME"},
		{"mmo_session_status x", "mmo_session_status"},
	} {
		err := c.Exec(tc.line)
		if err == nil || err.Error() != "usage: "+tc.usage {
			t.Errorf("%s: %v, want usage: %s", tc.line, err, tc.usage)
		}
	}
	if p := c.prompts(); len(p) != 0 {
		t.Errorf("asked for a password on a usage error: %q", p)
	}
	if out := c.out.String(); out != "" {
		t.Errorf("usage errors printed %q", out)
	}
}

// TestConsoleNotConnected: every command with good arguments but no
// connection fails with the console's one-line ErrNotConnected, and asks
// no password it could not use.
func TestConsoleNotConnected(t *testing.T) {
	c := newMMOConsole(t, client.Config{})
	for _, line := range []string{
		"mmo_session_register alice", "mmo_session_register alice pw", "mmo_session_login alice",
		"mmo_session_login alice pw", "mmo_session_logout", "mmo_session_characters",
		"mmo_session_create Alice", "mmo_session_delete Alice", "mmo_session_enter Alice",
		"mmo_session_leave", "mmo_session_move 1 0", "mmo_session_move x y", "mmo_session_stop",
		"mmo_session_where", "mmo_session_nearby", "mmo_session_greet Bob", "mmo_session_status",
	} {
		err := c.Exec(line)
		if !errors.Is(err, client.ErrNotConnected) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want the one-line ErrNotConnected", line, err)
		}
	}
	if p := c.prompts(); len(p) != 0 {
		t.Errorf("asked for a password without a connection: %q", p)
	}
}

// loopbackServer is an in-process netstack server on 127.0.0.1 whose mmo
// requests the fake mmoServer answers: the console's commands, hooks and
// lines end to end, without the module's process.
type loopbackServer struct {
	*netstack.Server
	mmo *mmoServer
}

func newLoopbackServer(t *testing.T) *loopbackServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg := gamemsg.NewRegistry()
	if err := mmoproto.RegisterAll(reg, mmoproto.Owner); err != nil {
		t.Fatal(err)
	}
	ls := &loopbackServer{mmo: newMMOServer([32]byte{})}
	ls.Server, err = netstack.NewServer(netstack.ServerConfig{
		Bind: "127.0.0.1", Identity: priv, Logger: slog.New(slog.DiscardHandler), Registry: reg,
		Welcome: gamemsg.Welcome(func(id uint32, dst []byte) []byte {
			return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
				ClientID: id, TickRate: 60, ReplicationRate: 20, ServerName: "mmotest", Mode: gamemsg.ModeCustom,
			})
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for tp := mmoproto.FirstType; tp <= mmoproto.LastType; tp++ {
		if !mmoproto.IsRequest(tp) {
			continue
		}
		ls.Handle(tp, func(from uint32, h *wire.Header, payload []byte) {
			req, err := mmoproto.Parse(h.Type, payload)
			if err != nil {
				t.Errorf("the console sent a malformed %s: %v", mmoproto.Name(h.Type), err)
				return
			}
			if cb, ok := ls.ChannelBinding(from); ok {
				ls.mmo.mu.Lock()
				ls.mmo.binding = cb[:]
				ls.mmo.mu.Unlock()
			}
			ls.push(t, from, ls.mmo.answer(req))
		})
	}
	ls.Start()
	t.Cleanup(func() { ls.Close() })
	return ls
}

// push sends m to the client as the module would.
func (ls *loopbackServer) push(t *testing.T, to uint32, m mmoproto.Message) {
	if err := ls.Send(to, m.Type(), wire.ReliableOrdered, m.Append(nil)); err != nil {
		t.Errorf("send %s: %v", mmoproto.Name(m.Type()), err)
	}
}

// run executes line and returns the lines it printed.
func (mc *mmoConsole) run(t *testing.T, line string) []string {
	t.Helper()
	before := len(mc.out.String())
	if err := mc.Exec(line); err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", line, err, mc.out.String())
	}
	return strings.Split(strings.TrimSuffix(mc.out.String()[before:], "\n"), "\n")
}

// expect runs line and requires want among the lines it printed.
func (mc *mmoConsole) expect(t *testing.T, line, want string) {
	t.Helper()
	if got := mc.run(t, line); !slices.Contains(got, want) {
		t.Fatalf("%s printed %q, want the line %q", line, got, want)
	}
}

// fails runs line and requires exactly the error text want.
func (mc *mmoConsole) fails(t *testing.T, line, want string) {
	t.Helper()
	if err := mc.Exec(line); err == nil || err.Error() != want {
		t.Fatalf("%s: error %v, want %q", line, err, want)
	}
}

// TestConsoleSession plays a whole session through the commands: one-line
// results, the server's code in errors (not logged in, not in world, a
// name taken), the password asked only when omitted, event lines that wait
// matches, and a fresh session after a reconnect.
func TestConsoleSession(t *testing.T) {
	srv := newLoopbackServer(t)
	reg := gamemsg.NewRegistry()
	if err := RegisterTypes(reg); err != nil {
		t.Fatal(err)
	}
	c := newMMOConsole(t, client.Config{Pin: srv.Pin(), Registry: reg})
	connect := "connect " + srv.Addr().String() + " alice"
	c.run(t, connect)
	id := c.Client().ID()

	c.expect(t, "mmo_session_status", "mmo: not logged in")
	c.fails(t, "mmo_session_where", "mmo_session_where: NotLoggedIn: log in first")
	c.fails(t, "mmo_session_characters", "mmo_session_characters: NotLoggedIn: log in first")
	c.mu.Lock()
	c.answer = "s3cret-pw"
	c.mu.Unlock()
	c.expect(t, "mmo_session_register Alice", "registered alice")
	if p := c.prompts(); !slices.Equal(p, []string{"password for Alice: "}) {
		t.Fatalf("password prompts %q", p)
	}
	c.fails(t, "mmo_session_register alice other", "mmo_session_register: AccountExists: that account name is taken")
	c.fails(t, "mmo_session_login alice wrong-pw", "mmo_session_login: AuthFailed: wrong account name or password")
	c.expect(t, "mmo_session_login alice s3cret-pw", "logged in as alice")
	if p := c.prompts(); len(p) != 1 {
		t.Fatalf("asked for a password that was given: %q", p)
	}
	c.expect(t, "mmo_session_status", "mmo: logged in as alice, not in the world")
	c.expect(t, "mmo_session_characters", "characters: Alice (500.0,500.0)")
	c.fails(t, "mmo_session_move 1 0", "mmo_session_move: NotInWorld: enter the world with a character first")

	c.expect(t, "mmo_session_enter Alice", "entered as Alice (id 7) at 500.0,500.0")
	// Before the first replication step the session knows nobody, not
	// even its own character.
	c.expect(t, "mmo_session_status", "mmo: logged in as alice, in the world as Alice (id 7), 0 in view")
	c.expect(t, "mmo_session_nearby", "nearby: nobody")
	srv.push(t, id, &mmoproto.Appear{Tick: 1, Entries: []mmoproto.Appearance{
		{ID: 7, X: 500, Y: 500, Name: "Alice"}, {ID: 9, X: 510, Y: 500, Name: "Bob"},
	}})
	c.run(t, `wait "^mmo Bob appeared at 510\.0,500\.0$" 20s`)
	c.expect(t, "mmo_session_status", "mmo: logged in as alice, in the world as Alice (id 7), 1 in view")
	c.expect(t, "mmo_session_nearby", "nearby: Bob 510.0,500.0")

	if err := c.Exec("mmo_session_move east 0"); err == nil || !strings.HasPrefix(err.Error(), "mmo_session_move: DX and DY must be numbers") {
		t.Fatalf("move east: %v", err)
	}
	c.expect(t, "mmo_session_move 1 0", "moving 1,0")
	c.expect(t, "mmo_session_where", "at 500.0,500.0 heading 1.00,0.00")
	c.expect(t, "mmo_session_greet Bob", "greeted Bob")
	c.expect(t, "mmo_session_stop", "stopped")
	c.fails(t, "mmo_session_enter Alice", "mmo_session_enter: AlreadyInWorld: already in the world; leave first")

	srv.push(t, id, &mmoproto.Positions{Tick: 2, Entries: []mmoproto.Position{{ID: 9, X: 508, Y: 500}}})
	srv.push(t, id, &mmoproto.Greeting{FromID: 9, ToID: 7, FromName: "Bob", ToName: "Alice"})
	srv.push(t, id, &mmoproto.Disappear{Tick: 3, IDs: []uint32{9}})
	c.run(t, `wait "^mmo Bob moving from 510\.0,500\.0$" 20s`)
	c.run(t, `wait "^mmo greeting: Bob greets Alice$" 20s`)
	c.run(t, `wait "^mmo Bob disappeared$" 20s`)
	c.expect(t, "mmo_session_nearby", "nearby: nobody")

	c.expect(t, "mmo_session_leave", "left the world")
	c.expect(t, "mmo_session_logout", "logged out")
	c.expect(t, "mmo_session_status", "mmo: not logged in")

	c.expect(t, "mmo_session_login alice s3cret-pw", "logged in as alice")
	srv.push(t, id, &mmoproto.LoggedOut{Reason: mmoproto.LoggedOutKicked, Detail: "by the admin"})
	c.run(t, `wait "^mmo logged out: Kicked \(by the admin\)$" 20s`)
	c.expect(t, "mmo_session_status", "mmo: not logged in")

	// A new connection is a new session.
	srv.mmo.mu.Lock()
	srv.mmo.account = ""
	srv.mmo.mu.Unlock()
	c.expect(t, "mmo_session_login alice s3cret-pw", "logged in as alice")
	c.run(t, "disconnect")
	c.run(t, connect)
	c.expect(t, "mmo_session_status", "mmo: not logged in")
}
