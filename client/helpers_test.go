package client_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// newTestServer starts a server on 127.0.0.1 with an ephemeral port, as
// netstack's tests do, announcing itself as "testsrv — hello".
func newTestServer(t *testing.T, mod func(*netstack.ServerConfig)) *netstack.Server {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var srv *netstack.Server
	cfg := netstack.ServerConfig{
		Bind: "127.0.0.1", Identity: priv, Logger: slog.New(slog.DiscardHandler),
		Registry: gamemsg.NewRegistry(),
		Welcome: gamemsg.Welcome(func(id uint32, dst []byte) []byte {
			return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
				ClientID: id, ServerTime: srv.Time(), TickRate: 60, ReplicationRate: 20,
				ServerName: "testsrv", MOTD: "hello", Mode: gamemsg.ModeCustom,
			})
		}),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err = netstack.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	relayChat(srv)
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	return srv
}

// relayChat makes the test server relay chat as the host does: to every
// other client, with the sender's admitted name.
func relayChat(srv *netstack.Server) {
	srv.Handle(gamemsg.TypeChatMessage, func(from uint32, _ *wire.Header, p []byte) {
		m, err := gamemsg.ParseChatMessageFromClient(p)
		if err != nil {
			return
		}
		for _, c := range srv.Clients() {
			if c.ID == from {
				m.Sender = c.Name
			}
		}
		_ = srv.BroadcastExcept(from, gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &m))
	})
}

// testConsole is a console whose output the test reads.
type testConsole struct {
	*client.Console
	out *syncbuf.Buffer
}

func newConsole(t *testing.T, cfg client.Config) *testConsole {
	t.Helper()
	out := new(syncbuf.Buffer)
	cfg.Out = out
	c := client.NewConsole(cfg)
	t.Cleanup(c.Close)
	return &testConsole{Console: c, out: out}
}

// pinConsole is a console that trusts srv by its pin.
func pinConsole(t *testing.T, srv *netstack.Server) *testConsole {
	return newConsole(t, client.Config{Pin: srv.Pin()})
}

// exec runs line and fails the test on an error.
func (c *testConsole) exec(t *testing.T, line string) {
	t.Helper()
	if err := c.Exec(line); err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", line, err, c.out.String())
	}
}

// connect connects as name and returns the client id.
func (c *testConsole) connect(t *testing.T, srv *netstack.Server, name string) uint32 {
	t.Helper()
	c.exec(t, "connect "+srv.Addr().String()+" "+name)
	cl := c.Client()
	if cl == nil {
		t.Fatalf("connect %s: no client after success", name)
	}
	return cl.ID()
}

// waitOutput polls the output until it contains want.
func (c *testConsole) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q:\n%s", want, c.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// untilBlocked returns once a command of c blocks in a wait or a sleep.
func untilBlocked(t *testing.T, c *client.Console) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); client.Blocked(c) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no command blocked within 10 s")
		}
	}
}
