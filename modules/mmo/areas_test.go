package mmo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/modules/mmo/gateway"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// A world of two areas on one PostgreSQL database: west [0,500] and east
// [500,1000] of a 1000 × 1000 world, each a real server with the mmo plugin
// subprocess, on 127.0.0.1.

// childPortEnv gives a server child process its fixed UDP port.
const childPortEnv = "MMO_TEST_CHILD_PORT"

// areaWorld is the test's world: the world key, and per area its data
// directory, port and identity.
type areaWorld struct {
	url     string
	keyFile string
	key     ed25519.PrivateKey
	areas   []testArea
	mod     func(*config.Config) // applied to every server's config
}

type testArea struct {
	name    string
	bounds  [4]float64
	dir     string
	port    int
	pin     string
	pinKey  [32]byte
	addr    netip.AddrPort
	srv     *server
	started bool
}

// newAreaWorld lays out the areas' data directories (identity keys made
// here, so that every config can name every pin before any server starts)
// and a world key (the test's, in a temporary file).
func newAreaWorld(t testing.TB, extra string, areas ...testArea) *areaWorld {
	t.Helper()
	return newAreaWorldOn(t, sharedDB(t), netip.MustParseAddr("127.0.0.1"), extra, areas...)
}

// newAreaWorldOn is newAreaWorld on database url, with the servers on host
// (a free port each on 127.0.0.1; 27100 and up elsewhere: a namespace of
// their own).
func newAreaWorldOn(t testing.TB, url string, host netip.Addr, extra string, areas ...testArea) *areaWorld {
	t.Helper()
	w := &areaWorld{url: url, keyFile: filepath.Join(t.TempDir(), "world.key")}
	var err error
	w.key, err = gateway.CreateWorldKey(w.keyFile)
	must(t, err)
	for i := range areas {
		a := &areas[i]
		a.dir = t.TempDir()
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(a.dir, trust.IdentityFile), priv, 0o600))
		a.pin = trust.Pin(pub)
		copy(a.pinKey[:], pub)
		a.port = 27100 + i
		if host.IsLoopback() {
			a.port = freeUDPPort(t)
		}
		a.addr = netip.AddrPortFrom(host, uint16(a.port))
	}
	var list strings.Builder
	for _, a := range areas {
		fmt.Fprintf(&list, "\n[[world.areas]]\nname = %q\nbounds = [%g, %g, %g, %g]\naddress = %q\npin = %q\n",
			a.name, a.bounds[0], a.bounds[1], a.bounds[2], a.bounds[3], a.addr.String(), a.pin)
	}
	for _, a := range areas {
		mdir := filepath.Join(a.dir, "modules", "mmo")
		must(t, os.MkdirAll(mdir, 0o700))
		cfg := fmt.Sprintf("save_interval = 1\ninterest_radius = 300\n%s\n[database]\nurl = %q\nlease = 30\n\n[world]\narea = %q\nkey_file = %q\nticket_lifetime = 20\n%s",
			extra, w.url, a.name, w.keyFile, list.String())
		must(t, os.WriteFile(filepath.Join(mdir, "config.toml"), []byte(cfg), 0o600))
	}
	w.areas = areas
	return w
}

func twoAreas(t *testing.T) *areaWorld {
	return newAreaWorld(t, "speed = 100",
		testArea{name: "west", bounds: [4]float64{0, 0, 500, 1000}},
		testArea{name: "east", bounds: [4]float64{500, 0, 1000, 1000}})
}

// start runs area i's server in this process.
func (w *areaWorld) start(t testing.TB, i int) *server {
	t.Helper()
	a := &w.areas[i]
	a.srv = startServer(t, a.dir, func(c *config.Config) {
		c.Server.Port = a.port
		if w.mod != nil {
			w.mod(c)
		}
	})
	waitLoaded(t, a.srv)
	return a.srv
}

// waitLoaded waits until the mmo module answers a command.
func waitLoaded(t testing.TB, srv *server) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, err := srv.Exec("mmo_online"); err == nil && strings.Contains(out, "area ") {
			return
		}
		if time.Now().After(deadline) {
			out, err := srv.Exec("mmo_online")
			t.Fatalf("the mmo module did not load as an area server: %q %v", out, err)
		}
	}
}

func freeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// follow makes p follow handoffs the way the console does: dial the
// neighbour pinned, with the ticket, adopt the connection, feed Handle.
func (p *player) follow(t testing.TB) {
	p.s.Follow = func(ctx context.Context, r mmoclient.Redirect) error {
		addr, err := netip.ParseAddrPort(r.Addr)
		if err != nil {
			return err
		}
		reg := gamemsg.NewRegistry()
		if err := mmoclient.RegisterTypes(reg); err != nil {
			return err
		}
		c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: addr, Name: "followed", Pin: r.Pin, Registry: reg, Ticket: r.Ticket})
		if err != nil {
			return err
		}
		old := p.c
		p.mu.Lock()
		p.c = c
		p.mu.Unlock()
		p.s.Adopt(c)
		go p.receive(c)
		old.Close()
		t.Cleanup(func() { c.Close() })
		return nil
	}
}

// dialTicket connects to srv presenting ticket (made for the session's
// channel binding) in ClientFinished.
func dialTicket(t testing.TB, addr netip.AddrPort, pin, name string, ticket func([32]byte) []byte) *player {
	t.Helper()
	return dialWith(t, netstack.ClientConfig{Server: addr, Name: name, Pin: pin, Ticket: ticket})
}

// mint signs a ticket with key for account's character to the server
// whose identity is dest, bound to client, expiring at exp.
func mint(t testing.TB, key ed25519.PrivateKey, dest [32]byte, client ed25519.PrivateKey, account, character string, exp time.Time) func([32]byte) []byte {
	t.Helper()
	tk := gateway.Ticket{Expires: exp, Server: dest, Account: account, Character: character}
	rand.Read(tk.ID[:])
	copy(tk.ClientKey[:], client.Public().(ed25519.PublicKey))
	signed, err := gateway.Sign(key, tk)
	must(t, err)
	return func(th [32]byte) []byte { return gateway.Present(signed, client, th) }
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	return k
}

// newPlayer registers account, logs in and creates character.
func newPlayer(t testing.TB, srv *server, account, character string) *player {
	t.Helper()
	p := dial(t, srv, account)
	_, err := p.s.Register(bg, account, "pw-"+account)
	must(t, err)
	_, err = p.s.Login(bg, account, "pw-"+account)
	must(t, err)
	must(t, p.s.Create(bg, character))
	return p
}

// eventX returns the x of the first event line containing want ("... at X,Y").
func (p *player) eventX(t testing.TB, want string) float64 {
	t.Helper()
	p.waitEvent(t, want)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.events {
		if i := strings.Index(e, want); i >= 0 {
			at := e[strings.LastIndex(e, " at ")+4:]
			x, err := strconv.ParseFloat(strings.Split(at, ",")[0], 64)
			must(t, err)
			return x
		}
	}
	return 0
}

// TestAreasHandoff: alice walks Hero east from the middle of west; at the
// border west hands Hero over: the state is committed, the client follows
// to east on its own, presents the ticket in ClientFinished and is
// admitted without a password where it crossed. carol on west sees Hero
// disappear, bob on east sees it appear. Logging in on west with the
// password then ends the session on east ("logged in elsewhere").
func TestAreasHandoff(t *testing.T) {
	w := twoAreas(t)
	west, east := w.start(t, 0), w.start(t, 1)
	db := openShared(t, w.url)

	bob := newPlayer(t, east, "bob", "Watcher")
	_, err := bob.s.Enter(bg, "Watcher")
	must(t, err)
	carol := newPlayer(t, west, "carol", "Sentry")
	_, err = carol.s.Enter(bg, "Sentry")
	must(t, err)

	alice := newPlayer(t, west, "alice", "Hero")
	alice.follow(t)
	e, err := alice.s.Enter(bg, "Hero")
	must(t, err)
	if e.X != 250 || e.Y != 500 {
		t.Fatalf("Hero was created at %v,%v; new characters start at the centre of the server's area", e.X, e.Y)
	}
	carol.waitEvent(t, "mmo Hero appeared")
	walked := time.Now()
	must(t, alice.s.Move(bg, 1, 0))
	handing := alice.waitEvent(t, "mmo handing over to east at "+w.areas[1].addr.String())
	x := alice.eventX(t, "mmo handed over to east: in the world as Hero at")
	admitted := alice.waitEvent(t, "mmo handed over to east")
	t.Logf("Hero walked %v, then was admitted on east %v after the Handoff arrived (dial, ticket, database) at x = %.1f",
		handing.Sub(walked).Round(time.Millisecond), admitted.Sub(handing).Round(time.Millisecond), x)
	if x < 500 || x > 520 {
		t.Fatalf("admitted at x = %v; it crossed at 500", x)
	}
	carol.waitEvent(t, "mmo Hero disappeared")
	bob.waitEvent(t, "mmo Hero appeared")

	// Logged in on east by the ticket, playing Hero there.
	st := alice.s.Status()
	if st.Account != "alice" || st.Character != "Hero" {
		t.Fatalf("after the handoff: %+v", st)
	}
	where, err := alice.s.Where(bg)
	must(t, err)
	if where.X < 500 {
		t.Fatalf("east has Hero at %v", where.X)
	}
	holder, _, err := db.Holder(bg, "Hero")
	must(t, err)
	if out, _ := east.Exec("mmo_online"); !strings.Contains(out, "server "+holder) || !strings.Contains(out, "handoffs out 0, in 1") {
		t.Fatalf("Hero is held by %q; east says:\n%s", holder, out)
	}
	if c, _ := db.Character(bg, "Hero"); c.X < 500 {
		t.Fatalf("the committed position %v is not where it crossed", c.X)
	}
	if out, _ := west.Exec("mmo_online"); !strings.Contains(out, "handoffs out 1, in 0") {
		t.Fatalf("west:\n%s", out)
	}

	// Logged in elsewhere, across the servers: a password login on west
	// ends the session on east within a second.
	again := dial(t, west, "alice-again")
	_, err = again.s.Login(bg, "alice", "pw-alice")
	loggedIn := time.Now()
	must(t, err)
	if d := alice.waitEvent(t, "mmo logged out: LoggedInElsewhere").Sub(loggedIn); d > time.Second {
		t.Fatalf("east ended its session %v after the login on west", d)
	}
	// Hero enters on west at its last east position and is handed straight
	// back to east, where it stands: a character always plays where it is.
	again.follow(t)
	_, err = again.s.Enter(bg, "Hero")
	must(t, err)
	again.waitEvent(t, "mmo handed over to east: in the world as Hero")
}

// TestAreasTicketRefusals: each refusal has its code, and leaves the
// session anonymous; a valid ticket admits once.
func TestAreasTicketRefusals(t *testing.T) {
	w := twoAreas(t)
	west, east := w.start(t, 0), w.start(t, 1)
	newPlayer(t, west, "alice", "Hero")
	dave := newPlayer(t, west, "dave", "Busy")
	_, err := dave.s.Enter(bg, "Busy") // plays on west
	must(t, err)
	ck := newKey(t)
	soon := time.Now().Add(15 * time.Second)
	eastAddr, eastPin := w.areas[1].addr, w.areas[1].pin
	try := func(name string, ticket func([32]byte) []byte, want string) *player {
		t.Helper()
		p := dialTicket(t, eastAddr, eastPin, name, ticket)
		p.waitEvent(t, want)
		return p
	}
	valid := mint(t, w.key, w.areas[1].pinKey, ck, "alice", "Hero", soon)
	cases := []struct {
		name   string
		ticket func([32]byte) []byte
		want   string
	}{
		{"expired", mint(t, w.key, w.areas[1].pinKey, ck, "alice", "Hero", time.Now().Add(-2*time.Second)), "refused: TicketExpired"},
		{"for another server", mint(t, w.key, w.areas[0].pinKey, ck, "alice", "Hero", soon), "refused: TicketWrongServer"},
		{"signed by another key", mint(t, newKey(t), w.areas[1].pinKey, ck, "alice", "Hero", soon), "refused: TicketSignature"},
		{"character in another area", mint(t, w.key, w.areas[1].pinKey, ck, "dave", "Busy", soon), "refused: CharacterElsewhere"},
		{"stolen", func(th [32]byte) []byte {
			b := valid(th)
			return append(b[:len(b)-64], gateway.Present(b[:len(b)-64], newKey(t), th)[len(b)-64:]...)
		}, "refused: TicketInvalid"},
		{"garbage", func([32]byte) []byte { return []byte("not a ticket") }, "refused: TicketInvalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := try("tester", c.ticket, "mmo handoff "+c.want)
			if _, err := p.s.Characters(bg); code(err) != mmoproto.NotLoggedIn {
				t.Fatalf("after a refused ticket: %v", err)
			}
		})
	}
	// The valid one admits, once; its replay is refused. (Hero stands in
	// west's area, at 250,500, so east hands it straight on to west.)
	p := try("valid", valid, "mmo handed over to : in the world as Hero at 250.0,500.0")
	p.waitEvent(t, "mmo handing over to west")
	try("replayed", valid, "mmo handoff refused: TicketReplayed")
	out, _ := east.Exec("mmo_online")
	if !strings.Contains(out, "tickets refused 7") {
		t.Fatalf("east:\n%s", out)
	}
	// A server without areas takes no ticket.
	plain := startServer(t, sharedDataDir(t, w.url, 10), nil)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out, err := plain.Exec("mmo_online"); err == nil && strings.Contains(out, "server ") {
			break
		}
	}
	dialTicket(t, plain.Addr(), plain.Pin(), "plain", valid).waitEvent(t, "refused: TicketsNotAccepted")
}

// TestAreasSourceKilledMidHandoff: west runs in a process of its own and is
// killed with SIGKILL after it committed two handoffs and before either
// client reached east. Nothing committed is lost: alice's ticket still
// admits Hero on east where it crossed; bob never uses his, and logs in on
// east with his password: Sidekick, in transit to east, enters there at
// once where it crossed.
func TestAreasSourceKilledMidHandoff(t *testing.T) {
	w := twoAreas(t)
	child, addr, pin := startAreaChild(t, w, 0)
	east := w.start(t, 1)
	db := openShared(t, w.url)
	if addr != w.areas[0].addr || pin != w.areas[0].pin {
		t.Fatalf("the child serves %v %s", addr, pin)
	}

	held := map[string]chan mmoclient.Redirect{"alice": make(chan mmoclient.Redirect, 1), "bob": make(chan mmoclient.Redirect, 1)}
	for _, who := range []struct{ account, character string }{{"alice", "Hero"}, {"bob", "Sidekick"}} {
		p := dialAt(t, addr, pin, who.account)
		_, err := p.s.Register(bg, who.account, "pw-"+who.account)
		must(t, err)
		_, err = p.s.Login(bg, who.account, "pw-"+who.account)
		must(t, err)
		must(t, p.s.Create(bg, who.character))
		// The client takes the ticket and stops there: mid-handoff.
		ch := held[who.account]
		p.s.Follow = func(_ context.Context, r mmoclient.Redirect) error { ch <- r; return nil }
		_, err = p.s.Enter(bg, who.character)
		must(t, err)
		must(t, p.s.Move(bg, 1, 0))
	}
	got := map[string]mmoclient.Redirect{}
	for who, ch := range held {
		select {
		case got[who] = <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("no handoff of %s's character within 20 s", who)
		}
	}
	must(t, child.Kill())
	child.Wait()
	killed := time.Now()

	for _, name := range []string{"Hero", "Sidekick"} {
		c, err := db.Character(bg, name)
		must(t, err)
		srv, transit, _, err := db.Transit(bg, name)
		must(t, err)
		if c.X < 500 || !transit || srv == "" {
			t.Fatalf("%s after the kill: x = %v, claim %q in transit %v", name, c.X, srv, transit)
		}
	}
	alice := dialTicket(t, w.areas[1].addr, w.areas[1].pin, "alice", got["alice"].Ticket)
	x := alice.eventX(t, "mmo handed over to : in the world as Hero at")
	t.Logf("Hero admitted on east %v after its source was killed, at x = %.1f", time.Since(killed).Round(time.Millisecond), x)
	if x < 500 {
		t.Fatalf("Hero at %v", x)
	}
	bob := dial(t, east, "bob")
	_, err := bob.s.Login(bg, "bob", "pw-bob")
	must(t, err)
	e, err := bob.s.Enter(bg, "Sidekick")
	must(t, err)
	if e.X < 500 {
		t.Fatalf("Sidekick entered at %v; it crossed at 500", e.X)
	}
}

// startAreaChild runs area i's server as a child process (this test binary
// again, as TestSharedWorldServerChild) on its fixed port.
func startAreaChild(t *testing.T, w *areaWorld, i int) (*os.Process, netip.AddrPort, string) {
	t.Helper()
	t.Setenv(childPortEnv, strconv.Itoa(w.areas[i].port))
	cmd, addr, pin := startChildServer(t, w.areas[i].dir)
	return cmd.Process, addr, pin
}

// TestAreasConsoleFollows: the player console (`sparkhost client` with the
// mmo_session_* commands) follows a handoff without the player typing
// anything: the script walks, waits for the handoff line, and its next
// commands run on east.
func TestAreasConsoleFollows(t *testing.T) {
	w := twoAreas(t)
	w.start(t, 0)
	w.start(t, 1)
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	var out syncbuf.Buffer
	con := client.NewConsole(client.Config{Out: &out, Pin: w.areas[0].pin, Registry: reg})
	t.Cleanup(con.Close)
	must(t, mmoclient.Register(con, mmoclient.Options{Iterations: 4096}))
	for _, line := range []string{
		"connect " + w.areas[0].addr.String() + " alice",
		"mmo_session_register alice pw-alice", "mmo_session_login alice pw-alice",
		"mmo_session_create Hero", "mmo_session_enter Hero", "mmo_session_move 1 0",
		`wait "mmo handed over to east: in the world as Hero" 20s`,
		"mmo_session_status", "mmo_session_where", "mmo_session_move 0 1",
	} {
		if err := con.Exec(line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out.String())
		}
	}
	text := out.String()
	for _, want := range []string{
		"mmo handing over to east at " + w.areas[1].addr.String(),
		"connected to " + w.areas[1].addr.String() + " as alice",
		"mmo: logged in as alice, in the world as Hero",
		"at 50", // where: x ≥ 500, on east
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("no %q in the console's output:\n%s", want, text)
		}
	}
}
