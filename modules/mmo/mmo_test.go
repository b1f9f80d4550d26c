package mmo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestMain(m *testing.M) {
	code := pgtest.Main("mmo", os.Getenv(childDataEnv) != "", m.Run)
	testplugin.Cleanup()
	os.Exit(code)
}

// server runs a DedicatedServer on 127.0.0.1 whose built-in "mmo" is the
// module's standalone plugin binary, a real subprocess.
type server struct {
	*host.Server
	dataDir string
	stop    func()
}

func startServer(t testing.TB, dataDir string, mod func(*config.Config)) *server {
	t.Helper()
	bin := os.Getenv(childPluginEnv) // a server child process reuses the parent's build
	if bin == "" {
		bin = testplugin.Build(t, "./modules/mmo/cmd/mmo")
	}
	testModuleConfig(t, dataDir)
	cfg := config.Default()
	port := 0
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{"mmo"}}, func(string) string { return "" })
	cfg.Match.WarmupSeconds, cfg.Match.IntermissionSeconds = 0, 0
	if mod != nil {
		mod(&cfg)
	}
	srv, err := host.New(host.Options{
		Config: cfg, Logger: testLogger(),
		Builtin: func(name string) (string, []string, bool) { return bin, nil, name == "mmo" },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	s := &server{Server: srv, dataDir: dataDir}
	s.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("server did not stop within 20 s")
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

// player is a real UDP client with an mmo session and its event lines.
type player struct {
	c      *netstack.Client
	s      *mmoclient.Session
	mu     sync.Mutex
	events []string
	times  []time.Time    // when each event arrived
	sent   bytes.Buffer   // every request's plaintext, as handed to the channel
	handed chan time.Time // when each "handed over" line arrived (benchmarks)
	got    map[wire.MessageType]int
}

// received returns how many messages of type t the player received.
func (p *player) received(t wire.MessageType) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[t]
}

func dial(t testing.TB, srv *server, name string) *player {
	t.Helper()
	return dialAt(t, srv.Addr(), srv.Pin(), name)
}

// dialAt connects a player to the server at addr with identity pin.
func dialAt(t testing.TB, addr netip.AddrPort, pin, name string) *player {
	t.Helper()
	return dialWith(t, netstack.ClientConfig{Server: addr, Name: name, Pin: pin})
}

// dialWith connects a player with cfg (the mmo types are added to it).
func dialWith(t testing.TB, cfg netstack.ClientConfig) *player {
	t.Helper()
	return dialPlayer(t, cfg, true)
}

// dialQuiet is dialWith for a load client: its session's event lines
// are not formatted or kept (the player's events stay empty), so that
// thousands of clients in one process spend their core on the protocol.
func dialQuiet(t testing.TB, cfg netstack.ClientConfig) *player {
	t.Helper()
	return dialPlayer(t, cfg, false)
}

// dialPlayer dials a player, recording its session's event lines when
// events is set.
func dialPlayer(t testing.TB, cfg netstack.ClientConfig, events bool) *player {
	t.Helper()
	reg := gamemsg.NewRegistry()
	if err := mmoclient.RegisterTypes(reg); err != nil {
		t.Fatal(err)
	}
	cfg.Registry = reg
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", cfg.Name, err)
	}
	p := &player{c: c, handed: make(chan time.Time, 16), got: make(map[wire.MessageType]int)}
	record := func(line string) {
		if strings.HasPrefix(line, "mmo handed over") {
			select {
			case p.handed <- time.Now():
			default:
			}
		}
		p.mu.Lock()
		p.events = append(p.events, line)
		p.times = append(p.times, time.Now())
		p.mu.Unlock()
	}
	if !events {
		record = nil
	}
	p.s = mmoclient.NewSession(c, record)
	p.s.Iterations = testIterations
	p.s.Sent = func(_ wire.MessageType, payload []byte) {
		p.mu.Lock()
		p.sent.Write(payload)
		p.mu.Unlock()
	}
	go p.receive(c)
	t.Cleanup(func() { c.Close() })
	return p
}

// receive feeds the session from c until c closes.
func (p *player) receive(c *netstack.Client) {
	for {
		m, err := c.Receive(context.Background())
		if err != nil {
			return
		}
		p.mu.Lock()
		p.got[m.Header.Type]++
		p.mu.Unlock()
		p.s.Handle(m)
	}
}

// waitEvent waits up to 20 s for an event line containing want and
// returns when it arrived.
func (p *player) waitEvent(t testing.TB, want string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		for i, e := range p.events {
			if strings.Contains(e, want) {
				at := p.times[i]
				p.mu.Unlock()
				return at
			}
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("no event %q; events: %q", want, p.events)
	return time.Time{}
}

func code(err error) mmoproto.Code {
	var e *mmoproto.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0xFFFF
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var bg = context.Background()

func TestPasswordNeverOnTheWire(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	p := dial(t, srv, "alice")
	const pw = "correct-horse-BATTERY-staple-42"
	_, err := p.s.Register(bg, "alice", pw)
	must(t, err)
	_, err = p.s.Login(bg, "alice", pw)
	must(t, err)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent.Len() < 100 {
		t.Fatalf("recorded only %d bytes of requests", p.sent.Len())
	}
	if bytes.Contains(p.sent.Bytes(), []byte(pw)) || bytes.Contains(p.sent.Bytes(), []byte("BATTERY")) {
		t.Fatal("the password appears in a request's plaintext")
	}
}

// TestReplayedProofRefused: a login recorded in one session, replayed
// byte for byte in another, fails: the proof is bound to the first
// session's handshake transcript.
func TestReplayedProofRefused(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	a := dial(t, srv, "alice")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	var recorded [][]byte
	var mu sync.Mutex
	a.s.Sent = func(tp wire.MessageType, payload []byte) {
		mu.Lock()
		recorded = append(recorded, payload)
		mu.Unlock()
	}
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	if len(recorded) != 3 { // LoginStart, LoginFinish, then the session's HandoffKey
		t.Fatalf("recorded %d login messages", len(recorded))
	}

	eve := rawPlayer(t, srv, "eve")
	must(t, eve.c.Send(mmoproto.TypeLoginStart, wire.ReliableOrdered, recorded[0]))
	if m := eve.next(t); m.Header.Type != mmoproto.TypeLoginChallenge {
		t.Fatalf("replayed LoginStart answered %d", m.Header.Type)
	}
	must(t, eve.c.Send(mmoproto.TypeLoginFinish, wire.ReliableOrdered, recorded[1]))
	m := eve.next(t)
	r, err := mmoproto.ParseResult(m.Payload)
	if m.Header.Type != mmoproto.TypeResult || err != nil || r.Code != mmoproto.AuthFailed {
		t.Fatalf("replayed LoginFinish answered type %d %+v %v, want Result AuthFailed", m.Header.Type, r, err)
	}
}

// rawPlayer is a client without a session: the test reads its messages.
type raw struct{ c *netstack.Client }

func rawPlayer(t testing.TB, srv *server, name string) *raw {
	t.Helper()
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Registry: reg})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return &raw{c: c}
}

// next returns the next mmo message.
func (r *raw) next(t testing.TB) netstack.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	for {
		m, err := r.c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Type >= mmoproto.FirstType && m.Header.Type <= mmoproto.LastType {
			return m
		}
	}
}

func TestSessionRules(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	a := dial(t, srv, "alice")
	ctx := bg
	if err := a.s.Move(ctx, 1, 0); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("move before login: %v", err)
	}
	if _, err := a.s.Enter(ctx, "Alice"); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("enter before login: %v", err)
	}
	if _, err := a.s.Characters(ctx); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("characters before login: %v", err)
	}
	if _, err := a.s.Register(ctx, "a!", "pw"); code(err) != mmoproto.NameInvalid {
		t.Fatalf("bad account name: %v", err)
	}
	_, err := a.s.Register(ctx, "alice", "pw-alice")
	must(t, err)
	if _, err := a.s.Register(ctx, "ALICE", "other"); code(err) != mmoproto.AccountExists {
		t.Fatalf("duplicate account in another case: %v", err)
	}
	_, err = a.s.Login(ctx, "alice", "pw-alice")
	must(t, err)
	if err := a.s.Move(ctx, 1, 0); code(err) != mmoproto.NotInWorld {
		t.Fatalf("move before enter: %v", err)
	}
	for _, n := range []string{"Alice", "Alicia", "Alina", "Aline", "Alise"} {
		must(t, a.s.Create(ctx, n))
	}
	if err := a.s.Create(ctx, "Alisa"); code(err) != mmoproto.TooManyCharacters {
		t.Fatalf("sixth character: %v", err)
	}
	if err := a.s.Create(ctx, "x1"); code(err) != mmoproto.NameInvalid {
		t.Fatalf("bad character name: %v", err)
	}
	if _, err := a.s.Enter(ctx, "Nobody"); code(err) != mmoproto.NoSuchCharacter {
		t.Fatalf("unknown character: %v", err)
	}
	_, err = a.s.Enter(ctx, "alice") // any case
	must(t, err)
	if err := a.s.Delete(ctx, "Alice"); code(err) != mmoproto.AlreadyInWorld {
		t.Fatalf("deleting the character in play: %v", err)
	}
	if err := a.s.Move(ctx, 2, 0); code(err) != mmoproto.BadRequest {
		t.Fatalf("move out of range: %v", err)
	}
	w, err := a.s.Where(ctx)
	must(t, err)
	if err := a.s.UploadPosition(ctx, 10, 10); code(err) != mmoproto.PositionUploadRefused {
		t.Fatalf("position upload: %v", err)
	}
	w2, err := a.s.Where(ctx)
	must(t, err)
	if w2.X != w.X || w2.Y != w.Y {
		t.Fatalf("the upload moved the character: %+v → %+v", w, w2)
	}
	out, err := srv.Exec("mmo_online")
	if err != nil || !strings.Contains(out, "refused position uploads 1") || !strings.Contains(out, "alice  client") {
		t.Fatalf("mmo_online: %q %v", out, err)
	}

	// Another account cannot enter or delete alice's character.
	b := dial(t, srv, "bob")
	_, err = b.s.Register(ctx, "bob", "pw-bob")
	must(t, err)
	_, err = b.s.Login(ctx, "bob", "pw-bob")
	must(t, err)
	if _, err := b.s.Enter(ctx, "Alicia"); code(err) != mmoproto.NotYourCharacter {
		t.Fatalf("foreign character: %v", err)
	}
	if err := b.s.Delete(ctx, "Alicia"); code(err) != mmoproto.NotYourCharacter && code(err) != mmoproto.NoSuchCharacter {
		t.Fatalf("deleting a foreign character: %v", err)
	}
	// A second login of alice ends the first session.
	a2 := dial(t, srv, "alice2")
	_, err = a2.s.Login(ctx, "alice", "pw-alice")
	must(t, err)
	a.waitEvent(t, "mmo logged out: LoggedInElsewhere")
	if _, err := a.s.Where(ctx); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("the old session still plays: %v", err)
	}
	out, _ = srv.Exec("mmo_kick_account alice")
	if out != "logged out alice" {
		t.Fatalf("mmo_kick_account: %q", out)
	}
	a2.waitEvent(t, "mmo logged out: Kicked")
}

func TestUnknownAccountLooksLikeWrongPassword(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	p := dial(t, srv, "p")
	_, err := p.s.Register(bg, "alice", "pw")
	must(t, err)
	_, err1 := p.s.Login(bg, "alice", "nope")
	_, err2 := p.s.Login(bg, "zed", "nope")
	if code(err1) != mmoproto.AuthFailed || err1.Error() != err2.Error() {
		t.Fatalf("wrong password %v vs unknown account %v", err1, err2)
	}
}

// TestModuleCrashKeepsPlayers: kill -9 of the mmo plugin mid-session. The
// server keeps running, the players stay connected, after the restart they
// are told to log in again and can, and nothing committed is lost.
func TestModuleCrashKeepsPlayers(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	a := dial(t, srv, "alice")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, a.s.Create(bg, "Alice"))
	_, err = a.s.Enter(bg, "Alice")
	must(t, err)
	must(t, a.s.Move(bg, 0, 1))

	pid := pluginPid(t)
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	a.waitEvent(t, "mmo logged out: ModuleRestarted")
	select {
	case <-a.c.Done():
		t.Fatal("the player was disconnected")
	default:
	}
	if pluginPid(t) == pid {
		t.Fatal("no new plugin process")
	}
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	chars, err := a.s.Characters(bg)
	must(t, err)
	if len(chars) != 1 || chars[0].Name != "Alice" {
		t.Fatalf("characters after the crash: %+v", chars)
	}
	_, err = a.s.Enter(bg, "Alice")
	must(t, err)
	out, _ := srv.Exec("module info mmo")
	if !strings.Contains(out, "crashed: plugin process exited: signal: killed") || !strings.Contains(out, "restarted (attempt 1)") {
		t.Fatalf("module info:\n%s", out)
	}
}

// TestNoRestartNoticeOnAFreshStart: players who connect the moment a
// server starts — before its module's first tick — are not told the module
// restarted (a greeting after a restart is, TestModuleCrashKeepsPlayers);
// only the players who were there when the module started are.
func TestNoRestartNoticeOnAFreshStart(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	var players []*player
	for i := range 4 {
		players = append(players, dial(t, srv, fmt.Sprintf("p%d", i)))
	}
	for i, p := range players {
		_, err := p.s.Register(bg, fmt.Sprintf("acct%d", i), "pw")
		must(t, err)
	}
	for _, p := range players {
		p.mu.Lock()
		for _, e := range p.events {
			if strings.Contains(e, "logged out") {
				t.Errorf("a player who joined a fresh server was told %q", e)
			}
		}
		p.mu.Unlock()
	}
}

// pluginPid finds the running plugin process: a child of this process.
func pluginPid(t testing.TB) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			f := strings.Fields(s[i+1:])
			if len(f) > 2 && f[0] != "Z" && f[1] == strconv.Itoa(os.Getpid()) && strings.Contains(s, "(mmo-") {
				pid, _ := strconv.Atoi(strings.Fields(s)[0])
				return pid
			}
		}
	}
	t.Fatal("no mmo plugin process")
	return 0
}
