package client_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestClientChatByPin(t *testing.T) {
	srv := newTestServer(t, nil)
	alice, bob := pinConsole(t, srv), pinConsole(t, srv)
	aliceID := alice.connect(t, srv, "alice")
	bob.connect(t, srv, "bob")

	want := fmt.Sprintf("connected to %s as alice (id %d)\n", srv.Addr(), aliceID)
	if !strings.Contains(alice.out.String(), want) {
		t.Errorf("alice's output lacks %q:\n%s", want, alice.out.String())
	}
	alice.exec(t, `wait "^server: testsrv — hello$"`)

	alice.exec(t, `say hi`)
	bob.exec(t, `wait "chat alice: hi"`)
	bob.exec(t, `say "how are you?"`)
	alice.exec(t, `wait "^chat bob: how are you\?$" 5s`)

	// A matched line is consumed: the same wait now looks after it.
	err := bob.Exec(`wait "chat alice: hi" 300ms`)
	if err == nil || err.Error() != `wait: no event matching "chat alice: hi" within 300ms` {
		t.Errorf("second wait for a consumed line: %v", err)
	}
	err = bob.Exec(`wait "chat carol: absent" 300ms`)
	if err == nil || !strings.Contains(err.Error(), "within 300ms") {
		t.Errorf("wait for an absent line: %v", err)
	}
	if n := strings.Count(alice.out.String(), "server: testsrv — hello\n"); n != 1 {
		t.Errorf("the admission GameStateSync was printed %d times:\n%s", n, alice.out.String())
	}
	if strings.Contains(alice.out.String(), "chat alice:") {
		t.Errorf("alice saw her own chat as an event:\n%s", alice.out.String())
	}
}

func TestClientKnownHosts(t *testing.T) {
	srv := newTestServer(t, nil)
	dir := t.TempDir()
	c := newConsole(t, client.Config{DataDir: dir})
	c.connect(t, srv, "alice")
	khPath := filepath.Join(dir, client.KnownHostsFile)
	c.waitOutput(t, fmt.Sprintf("trusting new server %s key %s (recorded in %s)\n", srv.Addr(), srv.Pin(), khPath))
	raw, err := os.ReadFile(khPath)
	if err != nil || string(raw) != srv.Addr().String()+" "+srv.Pin()+"\n" {
		t.Fatalf("known_hosts = %q, %v", raw, err)
	}

	t.Run("known key is accepted silently", func(t *testing.T) {
		c.exec(t, "disconnect")
		before := strings.Count(c.out.String(), "trusting new server")
		c.connect(t, srv, "alice")
		if n := strings.Count(c.out.String(), "trusting new server"); n != before {
			t.Errorf("a known key was announced again:\n%s", c.out.String())
		}
	})

	t.Run("mismatch is refused with the fix", func(t *testing.T) {
		other, _, _ := ed25519.GenerateKey(rand.Reader)
		dir := t.TempDir()
		path := filepath.Join(dir, client.KnownHostsFile)
		line := srv.Addr().String() + " " + trust.Pin(other) + "\n"
		if err := os.WriteFile(path, []byte("# pinned earlier\n"+line), 0o600); err != nil {
			t.Fatal(err)
		}
		m := newConsole(t, client.Config{DataDir: dir})
		err := m.Exec("connect " + srv.Addr().String() + " mallory")
		if !errors.Is(err, trust.ErrIdentityMismatch) {
			t.Fatalf("connect with a wrong recorded key: %v", err)
		}
		for _, want := range []string{"server identity mismatch", srv.Pin(), trust.Pin(other), "remove line 2 from " + path} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("mismatch error lacks %q: %v", want, err)
			}
		}
		if raw, _ := os.ReadFile(path); string(raw) != "# pinned earlier\n"+line {
			t.Errorf("known_hosts changed after a mismatch: %q", raw)
		}
		m.exec(t, "status")
		if !strings.Contains(m.out.String(), "status: disconnected") {
			t.Errorf("status after a refused connect:\n%s", m.out.String())
		}
	})

	t.Run("no pin and no data dir", func(t *testing.T) {
		n := newConsole(t, client.Config{})
		err := n.Exec("connect " + srv.Addr().String() + " alice")
		if err == nil || !strings.Contains(err.Error(), "--pin") {
			t.Errorf("connect without trust: %v", err)
		}
	})
}

func TestClientStatusAndStats(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	id := c.connect(t, srv, "alice")
	c.exec(t, "status")
	c.exec(t, "net_status")
	c.exec(t, "net_stats")
	out := c.out.String()
	for _, want := range []string{
		fmt.Sprintf("status: connected to %s as alice (id %d), ping ", srv.Addr(), id),
		"net: ping ", ", jitter ", ", loss ", ", up ", ", down ",
		"\nping: ", "\njitter: ", "\npacketLoss: ", "\nbytesSent: ", "\nbytesReceived: ",
		"\npacketsSent: ", "\npacketsReceived: ", "\npacketsDropped: ", "\nbandwidthUp: ",
		"\nbandwidthDown: ", "\nsecurityDrops: ", "\nplaintextFramesDropped: ",
		"\nmalformedDropped: ", "\npolicyDrops: ", "\nconnectRateLimited: ",
		"\nretransmissions: ", "\ninboxDrops: ",
		"\nsrtt: ", "\nrttVariance: ", "\nminRtt: ", "\nestimatedBandwidthDown: ", "\nsendQueueDelay: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	c.exec(t, "disconnect")
	if !strings.Contains(c.out.String(), "disconnected: ClientQuit (client quit)\n") {
		t.Errorf("disconnect printed no disconnected line:\n%s", c.out.String())
	}
	c.exec(t, "status")
	if !strings.HasSuffix(c.out.String(), "status: disconnected\n") {
		t.Errorf("status after disconnect:\n%s", c.out.String())
	}
	for _, cmd := range []string{"net_status", "net_stats", "say hi", "disconnect"} {
		if err := c.Exec(cmd); !errors.Is(err, client.ErrNotConnected) {
			t.Errorf("%s while disconnected: %v", cmd, err)
		}
	}
	// A second connect after a disconnect works and waits only on new events.
	c.connect(t, srv, "alice")
	if err := c.Exec(`wait "disconnected" 200ms`); err == nil {
		t.Error("wait matched an event from before the connect")
	}
}

func TestClientKicked(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	id := c.connect(t, srv, "alice")
	if err := srv.Kick(id, wire.DisconnectKicked, "bye"); err != nil {
		t.Fatal(err)
	}
	c.exec(t, `wait '^disconnected: Kicked \(bye\)$' 5s`)
	c.exec(t, "status")
	if !strings.HasSuffix(c.out.String(), "status: disconnected\n") {
		t.Errorf("status after a kick:\n%s", c.out.String())
	}
	if c.Client() != nil {
		t.Error("Client() is not nil after a kick")
	}
}

func TestClientMatchEvents(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	id := c.connect(t, srv, "alice")
	send := func(typ wire.MessageType, payload []byte) {
		t.Helper()
		if err := srv.Send(id, typ, wire.ReliableOrdered, payload); err != nil {
			t.Fatal(err)
		}
	}
	send(gamemsg.TypeMatchStart, gamemsg.AppendMatchStart(nil, &gamemsg.MatchStart{Map: "dust", Mode: gamemsg.ModeDeathmatch, Round: 2}))
	send(gamemsg.TypePlayerRespawn, gamemsg.AppendPlayerRespawn(nil, &gamemsg.PlayerRespawn{Client: id, EntityID: 7, Position: wire.Vec3{X: 1, Y: 2.5, Z: -3}, Yaw: 90}))
	send(gamemsg.TypeScoreUpdate, gamemsg.AppendScoreUpdate(nil, &gamemsg.ScoreUpdate{Scores: []gamemsg.ScoreEntry{{Client: 1, Score: 10}, {Client: 2, Score: -1}}}))
	send(gamemsg.TypeMatchEnd, gamemsg.AppendMatchEnd(nil, &gamemsg.MatchEnd{Reason: gamemsg.MatchEndScore, Winner: 1, WinnerScore: 10}))
	send(gamemsg.TypeGameStateSync, gamemsg.AppendGameStateSync(nil, &gamemsg.GameStateSync{ClientID: id, TickRate: 30, ReplicationRate: 10,
		ServerName: "renamed", MOTD: "new motd", Mode: gamemsg.ModeCustom}))
	lines := []string{
		"server: testsrv — hello",
		"match start: dust mode Deathmatch round 2",
		fmt.Sprintf("respawn: client %d entity 7 at 1,2.5,-3 yaw 90", id),
		"scores: 1=10 2=-1",
		"match end: Score winner 1 score 10",
		"server: renamed — new motd",
	}
	for _, line := range lines {
		c.exec(t, fmt.Sprintf("wait '^%s$' 5s", strings.ReplaceAll(line, ".", `\.`)))
	}
}

func TestClientRegisterAndOnMessage(t *testing.T) {
	const typeEcho = wire.FirstUserDefined
	schema := wire.Schema{ID: typeEcho, Name: "Echo", Direction: wire.BothDirections, Channel: wire.Reliable,
		MinLen: 1, MaxLen: 64, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}
	serverReg, clientReg := gamemsg.NewRegistry(), gamemsg.NewRegistry()
	for _, r := range []*wire.Registry{serverReg, clientReg} {
		if err := r.Register("echo", schema); err != nil {
			t.Fatal(err)
		}
	}
	var srv *netstack.Server
	srv = newTestServer(t, func(cfg *netstack.ServerConfig) { cfg.Registry = serverReg })
	srv.Handle(typeEcho, func(from uint32, h *wire.Header, payload []byte) {
		srv.Send(from, typeEcho, wire.Reliable, append([]byte("echo:"), payload...))
	})

	c := newConsole(t, client.Config{Pin: srv.Pin(), Registry: clientReg})
	if err := c.Register(client.Command{Name: "echo_send", Usage: "echo_send TEXT", Help: "send an Echo",
		Run: func(c *client.Console, args []string) error {
			cl := c.Client()
			if cl == nil {
				return errors.New("echo_send: not connected")
			}
			return cl.Send(typeEcho, wire.Reliable, []byte(strings.Join(args, " ")))
		}}); err != nil {
		t.Fatal(err)
	}
	c.OnMessage(typeEcho, func(c *client.Console, m netstack.Message) {
		c.Printf("echo from server: %s", m.Payload)
	})

	if err := c.Exec("echo_send x"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("module command before connect: %v", err)
	}
	c.connect(t, srv, "alice")
	c.exec(t, `echo_send "hello there"`)
	c.exec(t, `wait "^echo from server: echo:hello there$" 5s`)
	c.exec(t, "help echo_send")
	if !strings.Contains(c.out.String(), "echo_send TEXT") {
		t.Errorf("help lacks the module command:\n%s", c.out.String())
	}

	t.Run("register refuses duplicates and bad commands", func(t *testing.T) {
		run := func(*client.Console, []string) error { return nil }
		for _, cmd := range []client.Command{
			{Name: "echo_send", Run: run},
			{Name: "connect", Run: run},
		} {
			if err := c.Register(cmd); !errors.Is(err, client.ErrDuplicateCommand) {
				t.Errorf("Register(%q) = %v, want ErrDuplicateCommand", cmd.Name, err)
			}
		}
		for _, cmd := range []client.Command{{Name: "", Run: run}, {Name: "two words", Run: run}, {Name: "norun"}} {
			if err := c.Register(cmd); err == nil {
				t.Errorf("Register(%+v) succeeded", cmd)
			}
		}
	})

	t.Run("a panicking command or hook is an error, not a crash", func(t *testing.T) {
		if err := c.Register(client.Command{Name: "boom", Run: func(*client.Console, []string) error { panic("kaboom") }}); err != nil {
			t.Fatal(err)
		}
		if err := c.Exec("boom"); err == nil || !strings.Contains(err.Error(), "kaboom") {
			t.Errorf("panicking command: %v", err)
		}
		c.OnMessage(typeEcho, func(*client.Console, netstack.Message) { panic("hook kaboom") })
		c.exec(t, "echo_send again")
		c.exec(t, `wait "hook for UserDefined\(1000\) failed: hook kaboom" 5s`)
		c.exec(t, "status") // the receive goroutine lives on
		if !strings.Contains(c.out.String(), "status: connected") {
			t.Errorf("status after a hook panic:\n%s", c.out.String())
		}
	})
}

func TestClientRunScript(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lines   []string
		code    int
		want    string
		notWant string
	}{
		{name: "all succeed", lines: []string{"help", "", "# comment", "sleep 1ms", "status"}, code: 0, want: "status: disconnected"},
		{name: "unknown command fails", lines: []string{"help", "bogus"}, code: 1, want: `error: unknown command "bogus"; type help for the list`},
		{name: "stops at the first failure", lines: []string{"bogus", "status"}, code: 1, notWant: "status:"},
		{name: "quit ends with success", lines: []string{"quit", "bogus"}, code: 0, notWant: "error:"},
		{name: "unterminated quote", lines: []string{`say "hi`}, code: 1, want: "unterminated"},
		{name: "needs a connection", lines: []string{"say hi"}, code: 1, want: "say: not connected; use connect HOST:PORT NAME first"},
		{name: "wait times out", lines: []string{"wait x 10ms"}, code: 1, want: `wait: no event matching "x" within 10ms`},
		{name: "bad pattern", lines: []string{"wait ( 10ms"}, code: 1, want: "not a Go regexp"},
		{name: "bad duration", lines: []string{"sleep soon"}, code: 1, want: "write e.g. 5s"},
		{name: "usage", lines: []string{"connect 127.0.0.1:1"}, code: 1, want: "usage: connect HOST:PORT NAME"},
		{name: "bad address", lines: []string{"connect nowhere alice"}, code: 1, want: "is not HOST:PORT"},
		{name: "bad name", lines: []string{"connect 127.0.0.1:1 ''"}, code: 1, want: "not a valid player name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, client.Config{Pin: "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})
			if code := c.RunScript(tc.lines); code != tc.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.code, c.out.String())
			}
			out := c.out.String()
			if tc.want != "" && !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if tc.notWant != "" && strings.Contains(out, tc.notWant) {
				t.Errorf("output has %q:\n%s", tc.notWant, out)
			}
		})
	}
}

func TestClientCloseEndsCommands(t *testing.T) {
	srv := newTestServer(t, nil)
	c := pinConsole(t, srv)
	c.connect(t, srv, "alice")
	done := make(chan error, 1)
	go func() { done <- c.Exec("wait never 1m") }()
	untilBlocked(t, c.Console)
	c.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "wait: interrupted") {
			t.Errorf("wait across Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a blocked wait")
	}
	if err := c.Exec("status"); !errors.Is(err, client.ErrConsoleClosed) {
		t.Errorf("Exec after Close: %v", err)
	}
	c.Close() // twice is fine
	if !strings.Contains(c.out.String(), "disconnected: ClientQuit (client quit)\n") {
		t.Errorf("Close printed no disconnected line:\n%s", c.out.String())
	}
}
