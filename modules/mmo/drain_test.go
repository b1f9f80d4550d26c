package mmo_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// drainPlayers is how many characters are online on the area server that
// is restarted (the goal in docs/performance.md, "Drain").
const drainPlayers = 50

// areaProcess is an area server run as a real `sparkhost run --module mmo`
// process.
type areaProcess struct {
	cmd      *exec.Cmd
	dir      string
	exit     chan error
	exitedAt time.Time // set before exit receives
}

// launcher starts area server processes: the sparkhost binary, run as is
// (on 127.0.0.1) or through command (inside a namespace of the rig).
type launcher struct {
	bin     string
	command func(name string, args ...string) *exec.Cmd // nil: exec.Command
	flags   []string                                    // more `run` flags (--internet)
	network string                                      // more [network] keys
}

// startAreaProcess runs area i of w as a sparkhost process on its port and
// waits until its mmo module serves the area.
func startAreaProcess(t *testing.T, l *launcher, w *areaWorld, i int) *areaProcess {
	t.Helper()
	a := &w.areas[i]
	testModuleConfig(t, a.dir)
	// Every test client connects from one address: the per-address budgets
	// and caps that protect a server from one source are lifted.
	conf := filepath.Join(a.dir, "sparkhost.toml")
	must(t, os.WriteFile(conf, []byte("[server]\nmax_clients = 256\n[network]\nconnect_burst = 10000\nconnect_refill_per_second = 10000\n"+
		"prefix_burst = 10000\nprefix_refill_per_second = 10000\nhalf_open_per_address = 1024\nhalf_open_per_prefix = 1024\n"+l.network), 0o600))
	args := append([]string{"run", "--config", conf, "--module", "mmo", "--data-dir", a.dir, "--port", strconv.Itoa(a.port),
		"--bind", a.addr.Addr().String()}, l.flags...)
	command := l.command
	if command == nil {
		command = exec.Command
	}
	cmd := command(l.bin, args...)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	p := &areaProcess{cmd: cmd, dir: a.dir, exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
		err := cmd.Wait()
		p.exitedAt = time.Now()
		p.exit <- err
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			log := stderr.String()
			t.Logf("%s's log:\n%s", a.name, tail(log, 4000))
			t.Logf("%s's log, its handoff and warning lines from the start:\n%s", a.name, tail(handoffLines(log), 32000))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if out, err := p.admin("mmo_online"); err == nil && strings.Contains(out, "area "+a.name) {
			return p
		}
		select {
		case err := <-p.exit:
			t.Fatalf("area server %s exited (%v):\n%s", a.name, err, tail(stderr.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("area server %s did not serve its area within 60 s:\n%s", a.name, tail(stderr.String(), 4000))
		}
	}
}

// admin runs one admin command through the process's socket.
func (p *areaProcess) admin(line string) (string, error) {
	return admin.Call(filepath.Join(p.dir, admin.SocketName), line, 30*time.Second)
}

// handoffLines are the lines of an area server's log that tell what became
// of each handoff and ticket, and its warnings and errors: what a failed
// drain test needs from a log whose tail is too short.
func handoffLines(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if handoffLine.MatchString(line) {
			b.WriteString(line)
		}
	}
	return b.String()
}

var handoffLine = regexp.MustCompile(`(?i:ticket|handed|handoff|claimed character)|WARN|ERROR`)

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// characterName is the i-th test character's name (letters only).
func characterName(i int) string {
	return "Char" + string(rune('a'+i/26)) + string(rune('a'+i%26))
}

// onlinePlayer is one of the characters online for the drain.
type onlinePlayer struct {
	*player
	name string
	x, y float32
}

// bringOnline registers, logs in, creates and enters n characters on the
// server at addr, walks each a little in its own direction and stops it,
// so that every character stands somewhere of its own inside the area.
// open, when set, opens player i's sockets (in a namespace of the rig).
func bringOnline(t *testing.T, addr netip.AddrPort, pin string, n int, open func(i int) (net.PacketConn, error)) []*onlinePlayer {
	t.Helper()
	out := make([]*onlinePlayer, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	conns := make([]*player, n)
	for i := range n {
		cfg := netstack.ClientConfig{Server: addr, Name: fmt.Sprintf("acct%02d", i), Pin: pin}
		var opener func() (net.PacketConn, error)
		if open != nil {
			opener = func() (net.PacketConn, error) { return open(i) }
			conn, err := opener()
			must(t, err)
			t.Cleanup(func() { conn.Close() })
			cfg.Conn = conn
		}
		conns[i] = dialWith(t, cfg)
		conns[i].followVia(t, opener)
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			account, name, p := fmt.Sprintf("acct%02d", i), characterName(i), conns[i]
			ctx, cancel := context.WithTimeout(bg, 60*time.Second)
			defer cancel()
			if _, err := p.s.Register(ctx, account, "pw-"+account); err != nil {
				errs <- fmt.Errorf("%s: register: %w", account, err)
				return
			}
			if _, err := p.s.Login(ctx, account, "pw-"+account); err != nil {
				errs <- fmt.Errorf("%s: login: %w", account, err)
				return
			}
			if err := p.s.Create(ctx, name); err != nil {
				errs <- fmt.Errorf("%s: create: %w", name, err)
				return
			}
			if _, err := p.s.Enter(ctx, name); err != nil {
				errs <- fmt.Errorf("%s: enter: %w", name, err)
				return
			}
			angle := 2 * math.Pi * float64(i) / float64(n)
			if err := p.s.Move(ctx, float32(math.Cos(angle)), float32(math.Sin(angle))); err != nil {
				errs <- fmt.Errorf("%s: move: %w", name, err)
				return
			}
			time.Sleep(time.Duration(100+4*i) * time.Millisecond)
			if err := p.s.Stop(ctx); err != nil {
				errs <- fmt.Errorf("%s: stop: %w", name, err)
				return
			}
			out[i] = &onlinePlayer{player: p, name: name}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the Stops have landed
	for _, p := range out {
		wr, err := p.s.Where(bg)
		must(t, err)
		p.x, p.y = wr.X, wr.Y
	}
	return out
}

// followVia makes p follow handoffs the way the console does (dial the
// neighbour pinned, with the ticket, adopt the connection), its sockets
// opened by open (nil: the client's own, on this host).
func (p *player) followVia(t testing.TB, open func() (net.PacketConn, error)) {
	p.s.Follow = func(ctx context.Context, r mmoclient.Redirect) error {
		addr, err := netip.ParseAddrPort(r.Addr)
		if err != nil {
			return err
		}
		reg := gamemsg.NewRegistry()
		if err := mmoclient.RegisterTypes(reg); err != nil {
			return err
		}
		cfg := netstack.ClientConfig{Server: addr, Name: "followed", Pin: r.Pin, Registry: reg, Ticket: r.Ticket}
		if open != nil {
			if cfg.Conn, err = open(); err != nil {
				return err
			}
		}
		c, _, err := client.Dial(ctx, cfg)
		if err != nil {
			if cfg.Conn != nil {
				cfg.Conn.Close()
			}
			return err
		}
		p.mu.Lock()
		old := p.c
		p.c = c
		p.mu.Unlock()
		p.s.Adopt(c)
		go p.receive(c)
		old.Close()
		t.Cleanup(func() {
			c.Close()
			if cfg.Conn != nil {
				cfg.Conn.Close()
			}
		})
		return nil
	}
}

// waitWhere waits until p's server has its character where it stood, and
// returns when the client had followed (its Entered there arrived).
func (p *onlinePlayer) waitWhere(t *testing.T, area string) time.Time {
	t.Helper()
	at := p.waitEvent(t, "mmo handed over to "+area+": in the world as "+p.name)
	wr, err := p.s.Where(bg)
	must(t, err)
	if math.Abs(float64(wr.X-p.x)) > 0.01 || math.Abs(float64(wr.Y-p.y)) > 0.01 {
		t.Errorf("%s on %s at %v,%v; it stood at %v,%v", p.name, area, wr.X, wr.Y, p.x, p.y)
	}
	return at
}

// lastFollowed waits until every player plays on area where it stood and
// returns when the last one had followed.
func lastFollowed(t *testing.T, players []*onlinePlayer, area string) time.Time {
	t.Helper()
	var last time.Time
	for _, p := range players {
		if at := p.waitWhere(t, area); at.After(last) {
			last = at
		}
	}
	return last
}

// TestAreasDrainRollingRestart: the rolling restart of one area server.
// Two area servers (west, east) run as real `sparkhost run --module mmo`
// processes on one PostgreSQL database; 50 characters play on west, each
// standing somewhere of its own inside west. `sparkhost admin drain` on
// west: nobody new is admitted, east covers west's area, west hands every
// character to east, each client follows by itself and plays on east where
// it stood (west's area, not pushed to the border); west exits 0. West
// starts again: the cover ends and east hands every character standing in
// west's area back to west, where it stood: none lost, none moved.
func TestAreasDrainRollingRestart(t *testing.T) {
	w := newAreaWorld(t, "speed = 100\nmax_registrations = 0",
		testArea{name: "west", bounds: [4]float64{0, 0, 500, 1000}},
		testArea{name: "east", bounds: [4]float64{500, 0, 1000, 1000}})
	l := &launcher{bin: testplugin.Build(t, "./cmd/sparkhost")}
	rollingRestart(t, w, l, openShared(t, w.url), nil)
}

// rollingRestart drains west of w with drainPlayers characters online,
// checks they all play on east where they stood and that west exited 0,
// restarts west and checks they are all back on west where they stood.
func rollingRestart(t *testing.T, w *areaWorld, l *launcher, db interface {
	Holder(context.Context, string) (string, time.Time, error)
}, open func(i int) (net.PacketConn, error)) {
	t.Helper()
	west, east := startAreaProcess(t, l, w, 0), startAreaProcess(t, l, w, 1)
	players := bringOnline(t, w.areas[0].addr, w.areas[0].pin, drainPlayers, open)
	began := time.Now()
	out, err := west.admin("drain 60s")
	if err != nil || !strings.Contains(out, "draining") {
		t.Fatalf("drain: %q %v", out, err)
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	late := netstack.ClientConfig{Server: w.areas[0].addr, Name: "late", Pin: w.areas[0].pin}
	if open != nil {
		late.Conn, err = open(0)
		must(t, err)
		defer late.Conn.Close()
	}
	_, _, err = client.Dial(ctx, late)
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || !he.Draining() {
		t.Errorf("a new client while west drains: %v, want a ServerDraining refusal", err)
	}
	followed := lastFollowed(t, players, "east").Sub(began)
	select {
	case err := <-west.exit:
		if err != nil {
			t.Fatalf("west exited with %v after its drain, want 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("west did not exit within 60 s of its drain")
	}
	drained := west.exitedAt.Sub(began)
	eastID := holderOf(t, db, players[0].name)
	for _, p := range players {
		if h := holderOf(t, db, p.name); h != eastID {
			t.Errorf("%s is held by %q, want east (%q)", p.name, h, eastID)
		}
	}
	if out, _ := east.admin("mmo_online"); !strings.Contains(out, "covering [west]") || !strings.Contains(out, fmt.Sprintf("in world %d", drainPlayers)) {
		t.Errorf("east after the drain:\n%s", out)
	}
	t.Logf("drain of west with %d characters: all followed to east in %v, west exited 0 after %v",
		drainPlayers, followed.Round(time.Millisecond), drained.Round(time.Millisecond))

	restarted := time.Now()
	startAreaProcess(t, l, w, 0)
	back := lastFollowed(t, players, "west").Sub(restarted)
	t.Logf("west restarted: all %d characters back on west %v after its start began", drainPlayers, back.Round(time.Millisecond))
	if out, _ := east.admin("mmo_online"); strings.Contains(out, "covering") {
		t.Errorf("east still covers west after west's restart:\n%s", out)
	}
	for _, p := range players {
		if h := holderOf(t, db, p.name); h == eastID || h == "" {
			t.Errorf("%s is held by %q after west's restart", p.name, h)
		}
		if st := p.s.Status(); st.Character != p.name {
			t.Errorf("%s's session: %+v", p.name, st)
		}
	}
}

// holderOf is the server holding name's character.
func holderOf(t *testing.T, db interface {
	Holder(context.Context, string) (string, time.Time, error)
}, name string) string {
	t.Helper()
	h, _, err := db.Holder(bg, name)
	must(t, err)
	return h
}

// TestAreasRestartWithoutDrain is the baseline of the rolling restart: the
// same world and 50 characters, west stopped by SIGTERM (what a restart
// without a drain does). Every client is disconnected (ServerShutdown),
// none follows anywhere: each player must log in again by hand. It
// measures the "before" of docs/performance.md, "Drain".
func TestAreasRestartWithoutDrain(t *testing.T) {
	w := newAreaWorld(t, "speed = 100\nmax_registrations = 0",
		testArea{name: "west", bounds: [4]float64{0, 0, 500, 1000}},
		testArea{name: "east", bounds: [4]float64{500, 0, 1000, 1000}})
	restartWithoutDrain(t, w, &launcher{bin: testplugin.Build(t, "./cmd/sparkhost")}, nil)
}

// restartWithoutDrain stops west of w by SIGTERM with drainPlayers
// characters online and checks that every client was dropped.
func restartWithoutDrain(t *testing.T, w *areaWorld, l *launcher, open func(i int) (net.PacketConn, error)) {
	t.Helper()
	west, _ := startAreaProcess(t, l, w, 0), startAreaProcess(t, l, w, 1)
	players := bringOnline(t, w.areas[0].addr, w.areas[0].pin, drainPlayers, open)
	must(t, west.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-west.exit:
	case <-time.After(30 * time.Second):
		t.Fatal("west did not stop within 30 s of SIGTERM")
	}
	dropped, followed := 0, 0
	for _, p := range players {
		p.mu.Lock()
		c := p.c
		p.mu.Unlock()
		select {
		case <-c.Done():
			if r, _ := c.CloseReason(); r == wire.DisconnectServerShutdown {
				dropped++
			}
		case <-time.After(5 * time.Second):
		}
		p.mu.Lock()
		for _, e := range p.events {
			if strings.Contains(e, "mmo handed over to east") {
				followed++
			}
		}
		p.mu.Unlock()
	}
	t.Logf("restart of west without a drain: %d of %d clients disconnected (ServerShutdown), %d followed to east", dropped, drainPlayers, followed)
	if dropped != drainPlayers || followed != 0 {
		t.Fatalf("without a drain: %d disconnected, %d followed; the baseline is every player dropped", dropped, followed)
	}
}
